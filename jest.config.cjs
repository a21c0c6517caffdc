/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  globalSetup: '<rootDir>/test/integration/emulators.globalSetup.mjs',
  globalTeardown: '<rootDir>/test/integration/emulators.globalTeardown.mjs',
  setupFilesAfterEnv: ['<rootDir>/test/helpers/fastCheckSeed.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true }] },
};
