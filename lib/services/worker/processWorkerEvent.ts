import type { WorkerEvent } from '../../ports/Invoker';
import { processBatch } from './processBatch';
import { processHealthCheck } from './processHealthCheck';
import { processJob } from './processJob';
import type { WorkerDeps, WorkerOutcome } from './types';

/** The worker's entry point for every kind of event. */
export async function processWorkerEvent(event: WorkerEvent, deps: WorkerDeps): Promise<WorkerOutcome> {
  switch (event.kind) {
    case 'job':
      return processJob(event, deps);
    case 'batch':
      return processBatch(event, deps);
    default:
      return processHealthCheck(event, deps);
  }
}
