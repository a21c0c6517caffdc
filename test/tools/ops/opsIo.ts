import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { QueueName } from '../../../lib/ports/QueueReceiver';
import { writeStackFile, type LocalStackInfo } from '../../../tools/local/stackFile';
import { testEmulators, uniqueName } from '../../helpers/awsClients';
import { runOps } from '../../../tools/ops/runOps';

/** What one in-process run of the operator CLI printed, and its exit code. */
export interface OpsRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the operator CLI in-process on `argv`, with `stdin` as its input, and captures what it prints. */
export async function ops(argv: readonly string[], stdin = ''): Promise<OpsRun> {
  let stdout = '';
  let stderr = '';
  const code = await runOps(argv, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    stdin: (async function* () {
      yield stdin;
    })(),
  });
  return { code, stdout, stderr };
}

/** The JSON document a `--json` run printed. @throws Error with what it printed when it printed none. */
export function jsonOf<T>(run: OpsRun): T {
  try {
    return JSON.parse(run.stdout) as T;
  } catch {
    throw new Error(
      `expected one JSON document on stdout (exit ${run.code}); stdout: ${run.stdout}\nstderr: ${run.stderr}`,
    );
  }
}

/**
 * A local stack file for queues `queueUrls` on the test emulators (no functions run behind it), its orchestrator's
 * and worker's environment `environment`, its table `tableName` (a fresh name by default).
 */
export function localStackFile(
  queueUrls: Readonly<Record<QueueName, string>>,
  options: {
    readonly lane: string;
    readonly environment: Readonly<Record<string, string>>;
    readonly tableName?: string;
  },
): string {
  const emulators = testEmulators();
  const info: LocalStackInfo = {
    version: 1,
    pid: process.pid,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    endpoints: { dynamodb: emulators.dynamodbEndpoint, sqs: emulators.sqsEndpoint, lambda: 'http://127.0.0.1:9' },
    api: { apiUrl: 'http://127.0.0.1:9/jobs', healthUrl: 'http://127.0.0.1:9/health' },
    lane: options.lane,
    tableName: options.tableName ?? uniqueName('ops-table'),
    queueUrls,
    functions: {
      orchestrator: { name: 'orchestrator', environment: options.environment },
      worker: { name: 'worker', environment: {} },
    },
  };
  return writeStackFile(join(mkdtempSync(join(tmpdir(), 'ops-')), 'local-stack.json'), info);
}
