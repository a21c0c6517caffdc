import { workerClients, workerDepsFromEnv, type WorkerClients } from '../lib/wiring/workerDeps';
import { jsonLog, type Log } from '../lib/adapters/log';
import type { Env } from '../lib/configFromEnv';
import type { WorkerEvent } from '../lib/ports/Invoker';
import { processWorkerEvent, type WorkerDeps, type WorkerOutcome } from '../lib/services/processJob';

/**
 * Checks that an event is one the orchestrator sends. Anything else is a wrong invocation, not a job: it is thrown
 * back, so Lambda's async retries end in the worker's on-failure queue where an operator sees it. That includes a job
 * event whose body is not the message's text (one of an older orchestrator, which carried the parsed body): its
 * message was not deleted, so it reappears after its visibility timeout and is dispatched again as text.
 * @throws Error naming what is wrong with the event.
 */
export function asWorkerEvent(event: unknown): WorkerEvent {
  const { kind, body } = typeof event === 'object' && event !== null ? (event as { kind?: unknown; body?: unknown }) : {};
  if (kind === 'job' && typeof body !== 'string') throw new Error(`worker job event must carry the message body as a string of JSON text; got ${body === null ? 'null' : typeof body}`);
  if (kind === 'job' || kind === 'health-check') return event as WorkerEvent;
  throw new Error(`worker event must be an object with kind 'job' or 'health-check'; got kind ${JSON.stringify(kind)}`);
}

/** The worker handler on given dependencies: one job or health check per asynchronous invocation. */
export function makeHandler(deps: WorkerDeps, log: Log) {
  const logged: WorkerDeps = { ...deps, onCircuitOpened: ({ lane, at, reason }) => log('warn', `circuit opened: ${reason}`, { lane, at, reason }) };
  return async (event: unknown): Promise<WorkerOutcome> => {
    const workerEvent = asWorkerEvent(event);
    const outcome = await processWorkerEvent(workerEvent, logged);
    if (outcome !== 'succeeded' && outcome !== 'healthy') {
      const ids = workerEvent.kind === 'job' ? { messageId: workerEvent.messageId, attempt: workerEvent.attempt } : { checkId: workerEvent.checkId };
      log(outcome === 'dead-lettered' || outcome === 'kept' ? 'warn' : 'info', `worker event ${outcome}`, { kind: workerEvent.kind, outcome, ...ids });
    }
    return outcome;
  };
}

/** Builds the handler from an environment (validated here: a bad value fails with the variable's name). */
export function handlerFromEnv(env: Env, clients: WorkerClients = workerClients(), log: Log = jsonLog()) {
  return makeHandler(workerDepsFromEnv(env, clients), log);
}

let coldStart: ReturnType<typeof handlerFromEnv> | undefined;

/** Lambda entry point: the configuration is read and validated once per container, at its first event. */
export const handler = (event: unknown): Promise<WorkerOutcome> => (coldStart ??= handlerFromEnv(process.env))(event);
