import type { ReadyCaller } from '../../ports/ApiCaller';
import type { JobKeys, WorkerDeps } from './types';

/** Whose request a caller is made ready for: a job's (its keys) or a health check's (its id). */
type RequestFor = JobKeys | { readonly checkId: string };

/**
 * Gets the API caller ready for one request of `lane` (see `ApiCaller.prepare`): a caller without a prepare step is
 * ready as it is. One that is not (its key could not be read) is reported (`caller-not-ready`, with the reason and
 * whose request it was), and no request follows: that says nothing of the API, so nothing goes to the circuit.
 * @returns the caller to send through, or `undefined` when it is not ready.
 */
export async function readyCaller(
  deps: WorkerDeps,
  lane: string,
  requestFor: RequestFor,
): Promise<ReadyCaller | undefined> {
  const { api, clock } = deps;
  if (api.prepare === undefined) return api;
  const preparation = await api.prepare('checkId' in requestFor ? 'probe' : 'call').catch((error: unknown) => ({
    kind: 'not-ready' as const,
    // The port forbids a throw; one is a caller's bug, reported as what it is.
    reason: `prepare threw: ${error instanceof Error ? error.message : String(error)}`,
  }));
  if (preparation.kind === 'ready') return preparation.caller;
  deps.onEvent?.({ type: 'caller-not-ready', lane, at: clock.now(), reason: preparation.reason, ...requestFor });
  return undefined;
}
