/**
 * One serverless.yml for osls and for Serverless Framework v4. v4 cannot run here (it downloads its binary and needs
 * its vendor's login or licence), so what is checked is what can be checked offline: the file asks v4 to leave the
 * build to serverless-esbuild (a top-level `build: { esbuild: false }`), its `frameworkVersion` range takes 4.x, and
 * osls still packages it without a word about the key.
 */
import { rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { packageService, readServerlessYml, type PackageRun } from '../../tools/local/packageService';

jest.setTimeout(30_000);

const oslsRequire = createRequire(require.resolve('osls/package.json'));
/** semver as osls resolves it: the library osls (and Serverless Framework v4) match `frameworkVersion` with. */
const semver = oslsRequire('semver') as { satisfies(version: string, range: string): boolean };
const oslsVersion = (oslsRequire('./package.json') as { version: string }).version;

let config: Record<string, unknown>;
let run: PackageRun;

beforeAll(async () => {
  [config, run] = await Promise.all([readServerlessYml(), packageService()]);
}, 120_000);

afterAll(async () => {
  if (run !== undefined) await rm(run.dir, { recursive: true, force: true });
});

describe('serverless.yml under Serverless Framework v4', () => {
  it('turns v4’s built-in esbuild build off with the top-level build key', () => {
    expect(config.build).toEqual({ esbuild: false });
  });

  it('has serverless-esbuild build the functions, configured in custom.esbuild', () => {
    expect(config.plugins).toContain('serverless-esbuild');
    expect((config.custom as Record<string, unknown>).esbuild).toMatchObject({ bundle: true });
  });

  it('accepts v4 releases, osls’s own 4.x and Serverless Framework 3 in frameworkVersion', () => {
    const range = config.frameworkVersion as string;
    for (const version of ['4.0.0', '4.20.1', '3.38.0', oslsVersion]) {
      expect([version, semver.satisfies(version, range)]).toEqual([version, true]);
    }
  });
});

describe('serverless.yml under osls', () => {
  it('packages with the build key, with no warning or configuration error', () => {
    if (run.code !== 0) throw new Error(`osls package failed (exit ${run.code}):\n${run.output}`);
    expect(run.output).not.toMatch(/warning|unrecognized|Invalid configuration/i);
  });

  it('has the plugin that declares the build key to osls’s schema loaded', () => {
    expect(config.plugins).toContain('./lib/deploy/buildKeyPlugin.cjs');
  });
});

describe('BuildKeyPlugin', () => {
  const BuildKeyPlugin = createRequire(__filename)('../../lib/deploy/buildKeyPlugin.cjs') as new (
    serverless: unknown,
  ) => unknown;
  const schemaHandler = (properties: Record<string, unknown>) => ({
    schema: { properties },
    defineTopLevelProperty: jest.fn((name: string, schema: unknown) => {
      properties[name] = schema;
    }),
  });

  it('declares build to a schema that lacks it (osls), allowing only esbuild: false', () => {
    const handler = schemaHandler({});
    new BuildKeyPlugin({ configSchemaHandler: handler });
    expect(handler.defineTopLevelProperty).toHaveBeenCalledWith(
      'build',
      expect.objectContaining({ properties: { esbuild: { const: false } } }),
    );
  });

  it('declares nothing to a framework without a schema of top-level keys', () => {
    expect(() => new BuildKeyPlugin({})).not.toThrow();
    expect(() => new BuildKeyPlugin({ configSchemaHandler: { defineTopLevelProperty: jest.fn() } })).not.toThrow();
  });

  it('declares nothing where the framework defines build itself (v4)', () => {
    const handler = schemaHandler({ build: { type: 'object' } });
    new BuildKeyPlugin({ configSchemaHandler: handler });
    expect(handler.defineTopLevelProperty).not.toHaveBeenCalled();
  });
});
