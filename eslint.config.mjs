import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.serverless/', '.esbuild/', 'coverage/', 'out/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly' } },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', globalThis: 'readonly', console: 'readonly' } },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  {
    // The domain is pure: no AWS SDK, no I/O, no adapters. Time and randomness come in as arguments.
    files: ['lib/domain/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@aws-sdk/*', 'aws-sdk', 'aws-sdk/*'], message: 'lib/domain must stay free of the AWS SDK.' },
            { group: ['**/adapters/**', '**/services/**', 'node:*', 'fs', 'http', 'https'], message: 'lib/domain is pure logic: no adapters, services or I/O.' },
          ],
        },
      ],
    },
  },
);
