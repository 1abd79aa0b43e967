// ESM TypeScript through SWC. Unit tests need no server; the e2e project boots the
// platform once per run (test/global-setup.ts) and talks to it like a client would.
const base = {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'es6' },
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // Built trees (npm run build:dist, test/image.test.ts) hold copies of the workspace manifests.
  modulePathIgnorePatterns: ['<rootDir>/dist/', '<rootDir>/.test-run/'],
};

export default {
  testTimeout: 60000,
  reporters: ['default', '<rootDir>/test/summary-reporter.mjs'],
  projects: [
    {
      ...base,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/lib/src/**/*.test.ts',
        '<rootDir>/services/*.test.ts',
        '<rootDir>/services/*/src/**/*.test.ts',
      ],
    },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/global-setup.mjs',
      globalTeardown: '<rootDir>/test/global-teardown.mjs',
    },
  ],
};
