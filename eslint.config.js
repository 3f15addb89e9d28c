// Lint rules for cpsync. Besides the recommended TypeScript rules, this rejects skipped, focused and
// placeholder tests (node:test `skip`/`only`/`todo` in any spelling) so every test in the tree runs.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const testModifier = /^(skip|only|todo)$/;

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
);
