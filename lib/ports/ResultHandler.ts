import type { SourceQueue } from './QueueReceiver';

/**
 * The API's answer to a job whose call succeeded, with the ids that tie it to the job. It is what a result
 * destination receives, as JSON (the SQS message body, or the EventBridge event's `detail`).
 */
export interface JobResult {
  readonly lane: string;
  /** The source queue the job's message came from. */
  readonly queue: SourceQueue;
  /** The id of the message that carried the job on this attempt (a requeued retry is a new message). */
  readonly messageId: string;
  /** The id of the dispatch that called the API. */
  readonly dispatchId: string;
  /** The job's key: the producer's `idempotencyKey`, else the id of the job's first message. */
  readonly idempotencyKey: string;
  /** The FIFO `MessageGroupId`, for a job of the FIFO queue. */
  readonly groupId?: string;
  /** Which attempt succeeded, from 1. */
  readonly attempt: number;
  /** Epoch ms when the answer came. */
  readonly at: number;
  /** The HTTP status (or what the API caller reports as such). */
  readonly status: number;
  /** The response headers, names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The response body as text, possibly cut: see `bodyTruncated`. */
  readonly body: string;
  /** Whether `body` is only the start of the API's: the API caller keeps a bounded body, and a destination a bounded message. */
  readonly bodyTruncated: boolean;
}

/** What a success records as where its result went when its worker has no {@link ResultHandler}: it was dropped. */
export const NO_RESULT_DESTINATION = 'none';

/** A result that was not handed on, and why. */
export interface UndeliveredResult {
  readonly result: JobResult;
  readonly reason: string;
}

/**
 * Where the worker hands the results of the jobs whose call succeeded (the default sends them to the result destination
 * set in serverless.yml, see lib/adapters/results). It is told once the job's success is recorded, so the job has
 * ended for good whatever it does: a result it cannot hand on is reported, never retried by calling the API again.
 */
export interface ResultHandler {
  /**
   * Where it hands results on, as a job's status shows it (e.g. `sqs arn:aws:sqs:…:results`): each success records
   * it. @default `result handler`
   */
  readonly destination?: string;

  /**
   * Hands on `results` (one job's, or a batch's together).
   * @returns the results that were not handed on, each with why (none when all were). It may throw instead: every
   * result is then taken as not handed on.
   */
  deliver(results: readonly JobResult[]): Promise<readonly UndeliveredResult[]>;
}
