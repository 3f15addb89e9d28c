// Lint rules for cpsync. Besides the recommended TypeScript rules, this rejects skipped, focused and
// placeholder tests (node:test `skip`/`only`/`todo` in any spelling) so every test in the tree runs, and
// keeps the layers apart (see "Layout" in docs/developing.md):
//   core/domain   pure: the model, naming, normalize, health, plan — imports nothing outside itself
//                 but node:crypto (hashes); no clock, no environment, no timers
//   events        the contract: types, schemas, validator — may use domain types, nothing else of cpsync
//   core/sync     the engine and its ports — domain and events, never an adapter
//   adapters/*    one folder per outside system — core and events, never the composition root nor
//                 another system's folder (adapters/shared is for all)
//   adapters/compose  the one composition root: configuration → adapters
//   cli, functions    entry points: compose, core and events; neither imports the other
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const testModifier = /^(skip|only|todo)$/;

const ENTRY_POINTS = ['**/cli/**', '**/functions/**', '**/infra/**'];
const ADAPTER_SYSTEMS = ['eks', 'gke', 'aks', 'hub', 'bus', 'outbox'];

/** One `no-restricted-imports` rule: `groups` of gitignore-style patterns, or `regex`es, each with why. */
function restrict(...patterns) {
  return { 'no-restricted-imports': ['error', { patterns }] };
}
const layer = (group, message) => ({ group, message });

const layers = [
  {
    files: ['core/domain/**/*.ts'],
    rules: {
      ...restrict(
        layer(
          ['**/sync/**', '**/events/**', '**/adapters/**', ...ENTRY_POINTS],
          'core/domain is pure: it imports nothing but itself.',
        ),
        { regex: '^(?!\\.|node:crypto$)', message: 'core/domain uses no library but node:crypto (hashes).' },
      ),
      'no-restricted-globals': [
        'error',
        ...['process', 'setTimeout', 'setInterval', 'fetch'].map((name) => ({
          name,
          message: 'core/domain has no environment, timers or I/O: take it as a parameter.',
        })),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: 'core/domain has no clock: take the time as a parameter.',
        },
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'core/domain has no clock: take the time as a parameter.',
        },
      ],
    },
  },
  {
    files: ['events/**/*.ts'],
    rules: restrict(
      layer(
        ['**/core/sync/**', '**/adapters/**', ...ENTRY_POINTS],
        'events/ is the contract: it may use domain types, nothing that produces events.',
      ),
    ),
  },
  {
    files: ['core/sync/**/*.ts'],
    rules: restrict(
      layer(['**/adapters/**', ...ENTRY_POINTS], 'core/sync drives ports; it never imports an adapter.'),
    ),
  },
  ...ADAPTER_SYSTEMS.map((system) => ({
    files: [`adapters/${system}/**/*.ts`],
    rules: restrict(
      layer(
        ['**/adapters/compose/**', '**/compose/**', ...ENTRY_POINTS],
        'Adapters are assembled by adapters/compose; they never import it.',
      ),
      layer(
        ADAPTER_SYSTEMS.filter((other) => other !== system).map((other) => `../${other}/**`),
        `adapters/${system} talks to one outside system; shared code goes in adapters/shared.`,
      ),
      layer(
        ['**/core/sync/*', '!**/core/sync/ports.ts', '!**/core/sync/changes.ts'],
        'Adapters implement the ports (core/sync/ports.ts); they never call the engine.',
      ),
    ),
  })),
  {
    files: ['adapters/shared/**/*.ts'],
    rules: restrict(
      layer(
        [...ADAPTER_SYSTEMS.map((system) => `../${system}/**`), '../compose/**', ...ENTRY_POINTS],
        'adapters/shared serves every adapter and depends on none.',
      ),
    ),
  },
  {
    files: ['adapters/compose/**/*.ts'],
    rules: restrict(
      layer(ENTRY_POINTS, 'The composition root serves the entry points; it never imports them.'),
    ),
  },
  {
    files: ['cli/**/*.ts'],
    rules: restrict(
      layer(
        ['**/functions/**', '**/infra/**'],
        'The CLI and the functions share adapters/compose, not each other.',
      ),
    ),
  },
  {
    files: ['functions/**/*.ts'],
    rules: restrict(
      layer(
        ['**/cli/**', '**/infra/**'],
        'The CLI and the functions share adapters/compose, not each other.',
      ),
    ),
  },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'cdk.out/', '.hub/', '.cache/', '.venv/', '.scratch/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': [
        'error',
        ...['it', 'test', 'describe', 'suite'].flatMap((object) =>
          ['skip', 'only', 'todo'].map((property) => ({
            object,
            property,
            message: 'Every test runs: no skipped, focused or placeholder tests.',
          })),
        ),
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: `CallExpression[callee.name=/^(it|test|describe|suite)$/] > ObjectExpression > Property[key.name=${testModifier}]`,
          message: 'Every test runs: no skip/only/todo options.',
        },
        {
          selector: `CallExpression[callee.type='MemberExpression'][callee.property.name=${testModifier}][callee.object.name=/^(t|ctx|context)$/]`,
          message: 'Every test runs: no t.skip()/t.todo().',
        },
      ],
    },
  },
  ...layers,
);
