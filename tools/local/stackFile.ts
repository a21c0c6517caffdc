import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { QUEUE_NAMES, type QueueName } from '../../lib/ports/QueueReceiver';

/** Where `npm start -- --keep` writes its {@link LocalStackInfo}, and where `npm run ops -- --local` reads it. */
export const DEFAULT_STACK_FILE = 'out/local-stack.json';

/** One function of the kept stack: its name on the local Lambda endpoint, and its environment as the handlers read it. */
export interface LocalFunctionInfo {
  readonly name: string;
  readonly environment: Readonly<Record<string, string>>;
}

/**
 * How to reach a local stack kept up by `npm start -- --keep`: the emulators' and the Lambda host's endpoints, the
 * simulated API's URLs, the region and dummy credentials every local client uses, the state table and queues, and
 * the functions with their environments (the lane's configuration among them). Written as JSON.
 */
export interface LocalStackInfo {
  /** The shape of this file; a reader refuses another. */
  readonly version: 1;
  /** The process serving the stack. */
  readonly pid: number;
  readonly region: string;
  /** Dummy credentials: the emulators accept any. */
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
  readonly endpoints: {
    readonly dynamodb: string;
    readonly sqs: string;
    /** The local Lambda Invoke API, serving the orchestrator and the worker. */
    readonly lambda: string;
  };
  /** Where the workers call: the simulated API's `POST /jobs` and `GET /health`, or the external API given with `--api-url`. */
  readonly api: { readonly apiUrl: string; readonly healthUrl: string };
  readonly lane: string;
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly functions: { readonly orchestrator: LocalFunctionInfo; readonly worker: LocalFunctionInfo };
}

/** The stack file is missing or is not one `npm start -- --keep` wrote. */
export class StackFileError extends Error {
  override readonly name = 'StackFileError';
}

/** Writes `info` to `file` (creating its folder) through a temporary file, so a reader never sees half of it. @returns the absolute path. */
export function writeStackFile(file: string, info: LocalStackInfo): string {
  const path = resolve(file);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(`${path}.tmp`, `${JSON.stringify(info, null, 2)}\n`);
  renameSync(`${path}.tmp`, path);
  return path;
}

/** Removes the stack file, if there is one (the stack it described has stopped or is stopping). */
export function removeStackFile(file: string): void {
  rmSync(resolve(file), { force: true });
}

/**
 * Reads a stack file.
 * @throws StackFileError when it is missing, not JSON, or lacks a field (the message says which, and how to start a kept stack).
 */
export function readStackFile(file: string): LocalStackInfo {
  const path = resolve(file);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new StackFileError(
        `no local stack file at ${path}: start one with \`npm start -- --keep\` (it writes ${DEFAULT_STACK_FILE}), or pass the file it wrote`,
      );
    throw new StackFileError(`cannot read the local stack file ${path}: ${(error as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new StackFileError(`the local stack file ${path} is not JSON: ${(error as Error).message}`);
  }
  return checkInfo(raw, path);
}

function checkInfo(raw: unknown, path: string): LocalStackInfo {
  const bad = (field: string) =>
    new StackFileError(
      `the local stack file ${path} is not one \`npm start -- --keep\` wrote: ${field} is missing or invalid`,
    );
  const info = raw as Partial<LocalStackInfo> | null;
  if (typeof info !== 'object' || info === null || info.version !== 1) throw bad('version');
  const text = (value: unknown) => typeof value === 'string' && value !== '';
  if (!text(info.region)) throw bad('region');
  if (!text(info.credentials?.accessKeyId) || !text(info.credentials?.secretAccessKey)) throw bad('credentials');
  for (const name of ['dynamodb', 'sqs', 'lambda'] as const)
    if (!text(info.endpoints?.[name])) throw bad(`endpoints.${name}`);
  if (!text(info.lane)) throw bad('lane');
  if (!text(info.tableName)) throw bad('tableName');
  for (const queue of QUEUE_NAMES) if (!text(info.queueUrls?.[queue])) throw bad(`queueUrls.${queue}`);
  for (const fn of ['orchestrator', 'worker'] as const) {
    if (!text(info.functions?.[fn]?.name) || typeof info.functions?.[fn]?.environment !== 'object')
      throw bad(`functions.${fn}`);
  }
  return info as LocalStackInfo;
}
