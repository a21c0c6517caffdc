import { readFileSync } from 'node:fs';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const pkg = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const escape = (name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
/** A pattern that matches any bare import (a package) but those of `packages`, relative paths and `node:` built-ins. */
const packagesOtherThan = (packages, message) => ({
  regex: `^(?!\\.|node:|(${packages.map(escape).join('|')})(/|$))`,
  message,
});

const shipped = Object.keys(pkg.dependencies);
const declared = [...shipped, ...Object.keys(pkg.devDependencies)];

// What ships in the Lambda bundles (functions/ and lib/) may import only `dependencies`, never tools/.
const shipsFence = [
  packagesOtherThan(
    shipped,
    'functions/ and lib/ ship in the Lambda bundles: only package.json "dependencies" and node: built-ins; devDependencies belong in tools/.',
  ),
  {
    group: ['**/tools', '**/tools/**'],
    message: 'functions/ and lib/ ship in the Lambda bundles; tools/ does not, so they never import it.',
  },
];
const awsSdk = ['@aws-sdk/*', 'aws-sdk', 'aws-sdk/*'];
// The domain is pure: no AWS SDK, no I/O, no ports, adapters or services. Time and randomness come in as arguments.
const domainFence = [
  { group: awsSdk, message: 'lib/domain must stay free of the AWS SDK.' },
  {
    group: ['**/adapters/**', '**/services/**', 'node:*', 'fs', 'http', 'https'],
    message: 'lib/domain is pure logic: no adapters, services or I/O.',
  },
  {
    group: ['**/ports', '**/ports/**'],
    message: 'lib/domain never imports lib/ports: the ports speak in domain types, not the other way round.',
  },
];
// Services reach AWS only through the ports; the composition roots in lib/wiring hand them the adapters.
const servicesFence = [
  {
    group: ['**/adapters', '**/adapters/**'],
    message: 'lib/services never imports lib/adapters: take the port, and let lib/wiring pass the adapter in.',
  },
  { group: awsSdk, message: "lib/services never imports the AWS SDK: that is the adapters' job, behind a port." },
];
// Adapters implement ports; what they share with services lives in the ports, never in the services.
const adaptersFence = [
  {
    group: ['**/services', '**/services/**'],
    message: 'lib/adapters implement ports and never import lib/services: move what they share to the port.',
  },
];

/** `no-restricted-imports` with the given patterns (a later block for the same files replaces, not adds to, an earlier one). */
const restrict = (...patterns) => ({ 'no-restricted-imports': ['error', { patterns }] });

export default tseslint.config(
  { ignores: ['node_modules/', '.serverless/', '.esbuild/', 'coverage/', 'out/', 'dist/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { module: 'writable', require: 'readonly', process: 'readonly', __dirname: 'readonly' },
    },
  },
  {
    files: ['**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', globalThis: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // Every file: only declared packages (tools/ and test/ may use devDependencies).
  {
    files: ['**/*.ts', '**/*.mjs', '**/*.cjs'],
    rules: restrict(packagesOtherThan(declared, 'not a package declared in package.json: add it, or do without it.')),
  },
  { files: ['functions/**', 'lib/**'], rules: restrict(...shipsFence) },
  // The serverless plugin is run by osls at packaging time, on a machine with devDependencies installed, and never
  // bundled: it alone may load the TypeScript settings parser through tsx.
  {
    files: ['lib/deploy/quotaConfigPlugin.cjs'],
    rules: restrict(
      packagesOtherThan(
        [...shipped, 'tsx'],
        'the packaging plugin may load only tsx besides the shipped dependencies.',
      ),
      shipsFence[1],
    ),
  },
  { files: ['lib/adapters/**'], rules: restrict(...shipsFence, ...adaptersFence) },
  { files: ['lib/services/**'], rules: restrict(...shipsFence, ...servicesFence) },
  { files: ['lib/domain/**'], rules: restrict(...shipsFence, ...domainFence) },
);
