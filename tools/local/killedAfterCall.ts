import { jobIdsOf } from '../simulation/jobs';
import type { VirtualApi } from '../simulation/virtualApi';

/**
 * Notes the jobs whose worker Lambda stopped at its timeout once one of `apis` had accepted a call of theirs: a worker
 * that died between its call and its record, as a crash after the call does. `onTimeout` is the Lambda host's hook
 * (see `LocalLambdaHostOptions.onTimeout`); `jobs` fills as it is told.
 */
export function killedAfterCall(apis: readonly VirtualApi[]): {
  readonly jobs: ReadonlySet<string>;
  readonly onTimeout: (functionName: string, payload: unknown) => void;
} {
  const jobs = new Set<string>();
  const onTimeout = (_functionName: string, payload: unknown) => {
    const called = apis.map((api) => api.successesById());
    for (const id of jobIdsOf(payload)) if (called.some((c) => (c.get(id) ?? 0) > 0)) jobs.add(id);
  };
  return { jobs, onTimeout };
}
