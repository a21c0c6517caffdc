/**
 * What every AWS client of the service sets beyond the SDK's defaults (endpoints, region, credentials and retries
 * come from the SDK's own environment: `AWS_REGION`, `AWS_ENDPOINT_URL_SQS`, …, which is how the local run points
 * them at the emulators).
 * - Request timeouts, so that a request to a hung endpoint fails with a `TimeoutError` (which the SDK retries)
 *   instead of holding a function until its Lambda timeout. The SDK's default is to wait forever, and without
 *   `throwOnRequestTimeout` its `requestTimeout` only logs a warning. SQS allows for the longest long poll
 *   (`idleWaitMs` is at most 20 s).
 * - One attempt per Lambda invoke: the orchestrator retries a failed invoke itself, with a fresh reservation in its
 *   own pacing; an SDK retry would start the worker later than its reserved instant, unpaced.
 */
export const CLIENT_CONFIG = {
  dynamodb: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true } },
  sqs: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 25_000, throwOnRequestTimeout: true } },
  lambda: {
    requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true },
    maxAttempts: 1,
  },
  ssm: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true } },
  eventbridge: { requestHandler: { connectionTimeout: 1_000, requestTimeout: 5_000, throwOnRequestTimeout: true } },
} as const;
