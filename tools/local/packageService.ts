import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { yamlDump, yamlParse } from 'yaml-cfn';
import type { Template } from './template';

/** The repository root: serverless.yml, resources/, and what the functions bundle. */
export const REPO_ROOT = path.resolve(__dirname, '../..');

/** How long one `osls package` may take. */
const PACKAGE_TIMEOUT_MS = 110_000;

/** A packaging failure, with the framework's own explanation (it names the invalid `custom` field). */
export class PackagingError extends Error {
  override readonly name = 'PackagingError';
}

/** The outcome of one `osls package` run. */
export interface PackageRun {
  /** The process's exit code (0 on success). */
  readonly code: number;
  /** stdout and stderr together. */
  readonly output: string;
  /** The temporary service directory; remove it when done. */
  readonly dir: string;
  /** Where `--package` pointed: the template and zips, on success. */
  readonly outDir: string;
  readonly seconds: number;
}

/** serverless.yml as data (CloudFormation tags kept as intrinsic objects, osls variables as strings). */
export async function readServerlessYml(): Promise<Record<string, unknown>> {
  return yamlParse(await readFile(path.join(REPO_ROOT, 'serverless.yml'), 'utf8')) as Record<string, unknown>;
}

/**
 * Runs `osls package` offline, with no AWS credentials, on a copy of the service in a fresh temporary directory: the
 * same command as `npm run package`, so a setting that would fail a deploy fails here too.
 * serverless.yml and resources/ are copied (serverless.yml through `edit`, if given); lib/, functions/,
 * node_modules and the project files are symlinked. Working in a copy keeps serverless-esbuild's `.esbuild/`
 * work folder out of the repository, so concurrent packaging runs (a test, a local run) cannot collide in it.
 */
export async function packageService(edit?: (config: Record<string, unknown>) => void): Promise<PackageRun> {
  const dir = await mkdtemp(path.join(tmpdir(), 'qo-package-'));
  await cp(path.join(REPO_ROOT, 'resources'), path.join(dir, 'resources'), { recursive: true });
  for (const name of ['lib', 'functions', 'node_modules', 'package.json', 'tsconfig.json']) {
    await symlink(path.join(REPO_ROOT, name), path.join(dir, name));
  }
  const yml = await readFile(path.join(REPO_ROOT, 'serverless.yml'), 'utf8');
  if (edit === undefined) {
    await writeFile(path.join(dir, 'serverless.yml'), yml);
  } else {
    const config = yamlParse(yml) as Record<string, unknown>;
    edit(config);
    await writeFile(path.join(dir, 'serverless.yml'), yamlDump(config));
  }
  const outDir = path.join(dir, 'out');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    CI: 'true',
    SLS_TELEMETRY_DISABLED: '1',
    SLS_NOTIFICATIONS_MODE: 'off',
    // No credentials or profile can be found: packaging must not need them.
    AWS_CONFIG_FILE: path.join(dir, 'no-aws-config'),
    AWS_SHARED_CREDENTIALS_FILE: path.join(dir, 'no-aws-credentials'),
  };
  const started = Date.now();
  const osls = path.join(REPO_ROOT, 'node_modules/.bin/osls');
  return new Promise((resolve) => {
    execFile(
      osls,
      ['package', '--package', outDir],
      { cwd: dir, env, timeout: PACKAGE_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : 1;
        resolve({ code, output: `${stdout}${stderr}`, dir, outDir, seconds: (Date.now() - started) / 1000 });
      },
    );
  });
}

/** The template a successful run wrote. */
export async function readTemplate(run: PackageRun): Promise<Template> {
  return JSON.parse(
    await readFile(path.join(run.outDir, 'cloudformation-template-update-stack.json'), 'utf8'),
  ) as Template;
}

/**
 * Packages the service as it is, or with serverless.yml through `edit` ({@link packageService}), and returns the
 * CloudFormation template it built, leaving no temporary directory behind.
 * @throws PackagingError with the framework's error lines.
 */
export async function packagedTemplate(edit?: (config: Record<string, unknown>) => void): Promise<Template> {
  const run = await packageService(edit);
  try {
    if (run.code !== 0) throw new PackagingError(errorLines(run.output) || `osls package exited with code ${run.code}`);
    return await readTemplate(run);
  } finally {
    await rm(run.dir, { recursive: true, force: true });
  }
}

/** The framework's error block, without its banner and environment lines. */
function errorLines(output: string): string {
  const lines = output.split('\n').map((line) => line.trim());
  const from = lines.findIndex((line) => /^(Error:|✖)/.test(line));
  return (from === -1 ? lines : lines.slice(from))
    .filter(
      (line) => line !== '' && line !== 'Error:' && !/^(Environment|Docs|Support|Bugs|Issues|Credentials):/.test(line),
    )
    .join('\n');
}
