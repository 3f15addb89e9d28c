/**
 * dependency-cruiser: `npm run deps` prints how the layers depend on each other (one line per
 * folder → folder); `npm run lint` fails on any import cycle. The layering itself is enforced by
 * ESLint (eslint.config.js).
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle ties modules that should be apart.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    includeOnly: '^(core|events|adapters|functions|cli|infra)/',
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
  },
};
