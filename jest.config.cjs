/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  setupFilesAfterEnv: ['<rootDir>/test/helpers/fastCheckSeed.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { isolatedModules: true }] },
};
