/**
 * The package's entry for producers (`import { enqueue } from 'quota-orchestrator'`): the client that puts jobs on
 * the service's queues, and the error it throws for a job it cannot send. It depends on `@aws-sdk/client-sqs` alone.
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
