import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A `redis-server` started by {@link startRedis}, listening on 127.0.0.1. */
export interface RunningRedis {
  readonly port: number;
  /** Stops the server (SIGTERM, then SIGKILL after 2 s) and removes its temporary directory. */
  stop(): Promise<void>;
}

/** Options of {@link startRedis}. */
export interface StartRedisOptions {
  /** The server binary, looked up on PATH unless it is a path. @default 'redis-server' */
  readonly binary?: string;
  /** How long the server may take to answer PING. @default 5000 */
  readonly timeoutMs?: number;
}

const HOST = '127.0.0.1';
const POLL_MS = 50;
const KILL_AFTER_MS = 2_000;

/** A port that was free a moment ago: the OS picks it for a listener that is closed at once. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, HOST, () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Whether a Redis server on `port` answers PING with PONG. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: HOST, port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('utf8');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/**
 * Starts a throwaway `redis-server` for one bench run: on 127.0.0.1 and a free port, without persistence
 * (`--save '' --appendonly no`), in a temporary working directory. It is ready when it answers PING.
 *
 * Never throws: when the binary is missing, the server exits early, or it does not answer within `timeoutMs`,
 * the answer is `{ unavailable }` with the reason, and nothing is left running.
 */
export async function startRedis(
  options: StartRedisOptions = {},
): Promise<RunningRedis | { readonly unavailable: string }> {
  const { binary = 'redis-server', timeoutMs = 5_000 } = options;
  let dir: string;
  try {
    dir = await mkdtemp(join(tmpdir(), 'qo-bench-redis-'));
  } catch (error) {
    return { unavailable: `no temporary directory for ${binary}: ${messageOf(error)}` };
  }
  try {
    const port = await freePort();
    const child = spawn(
      binary,
      ['--port', String(port), '--bind', HOST, '--save', '', '--appendonly', 'no', '--dir', dir],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString('utf8')).slice(-2_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let failure: string | undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.once('error', (error) => (failure = `${binary} could not be started: ${error.message}`));
    child.once(
      'exit',
      (code, signal) =>
        (failure ??= `${binary} exited (${signal ?? `code ${code}`}) before answering: ${lastLine(output)}`),
    );

    const stop = async (): Promise<void> => {
      if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    };

    const deadline = Date.now() + timeoutMs;
    while (failure === undefined && Date.now() < deadline) {
      if (await answersPing(port)) return { port, stop };
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    await stop();
    return { unavailable: failure ?? `${binary} did not answer PING on ${HOST}:${port} within ${timeoutMs} ms` };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    return { unavailable: `${binary} could not be started: ${messageOf(error)}` };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function lastLine(output: string): string {
  return output.trim().split('\n').pop()?.trim() || 'no output';
}
