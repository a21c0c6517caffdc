/**
 * The package's entry for producers (`import { enqueue } from 'quota-orchestrator'`): the client that puts jobs on
 * the service's queues, the error it throws for a job it cannot send, and `status`, what became of a job. `enqueue`
 * depends on `@aws-sdk/client-sqs` alone, `status` on `@aws-sdk/lib-dynamodb`.
 */
export {
  enqueue,
  enqueueMany,
  MAX_BATCH_ENTRIES,
  MAX_MESSAGE_BYTES,
  type EnqueueFailure,
  type EnqueueOptions,
  type EnqueueProgress,
  type ProducerJob,
} from './enqueue';
export { EnqueueError, QuotaOrchestratorError } from '../errors';
export { status, type StatusOptions } from './status';
export type { JobRecord } from '../services/operator/jobRecord';
