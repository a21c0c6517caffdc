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
