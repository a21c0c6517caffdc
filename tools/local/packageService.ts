import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Template } from './template';

/** A packaging failure, with the framework's own explanation (it names the invalid `custom` field). */
export class PackagingError extends Error {
  override readonly name = 'PackagingError';
}

/**
 * Runs `osls package` on the project (offline, no credentials) into a fresh temporary folder and returns the
 * CloudFormation template it built. The same command as `npm run package`, so a setting that would fail a deploy
 * fails the local run too.
 * @throws PackagingError with the framework's error lines.
 */
export async function packageService(projectDir: string): Promise<Template> {
  const out = mkdtempSync(join(tmpdir(), 'quota-orchestrator-package-'));
  const osls = join(projectDir, 'node_modules', '.bin', 'osls');
  await new Promise<void>((resolve, reject) => {
    execFile(osls, ['package', '--package', out], { cwd: projectDir, env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', SLS_NOTIFICATIONS_MODE: 'off' }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) resolve();
      else reject(new PackagingError(errorLines(`${stdout}\n${stderr}`) || error.message));
    });
  });
  return JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
}

/** The framework's error block, without its banner and environment lines. */
function errorLines(output: string): string {
  const lines = output.split('\n').map((line) => line.trim());
  const from = lines.findIndex((line) => /^(Error:|✖)/.test(line));
  return (from === -1 ? lines : lines.slice(from)).filter((line) => line !== '' && line !== 'Error:' && !/^(Environment|Docs|Support|Bugs|Issues|Credentials):/.test(line)).join('\n');
}
