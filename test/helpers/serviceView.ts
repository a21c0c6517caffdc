import type { ServiceView } from '../../lib/deploy/quotaSettings';

/** The default tiers of serverless.yml. */
export const quotas = [
  { limit: 10, per: 'second' },
  { limit: 400, per: 'minute' },
];

/**
 * The slice of a resolved serverless.yml that the quota-config plugin reads, shaped like the repository's own;
 * `overrides` replaces settings (a key set to `undefined` removes it), the functions' timeouts, the worker's
 * maximumEventAge, the queues' redrive thresholds and `custom.alarms`.
 */
export function service(
  overrides: {
    settings?: Record<string, unknown>;
    orchestratorTimeout?: unknown;
    workerTimeout?: unknown;
    workerEventAge?: unknown;
    maxReceiveCount?: unknown;
    fifoMaxReceiveCount?: unknown;
    alarms?: unknown;
  } = {},
): ServiceView {
  return {
    custom: {
      quotaOrchestrator: {
        quotas,
        apiUrl: 'https://api.example.com/jobs',
        healthUrl: 'https://api.example.com/health',
        ...overrides.settings,
      },
      queues: {
        maxReceiveCount: 'maxReceiveCount' in overrides ? overrides.maxReceiveCount : 10,
        fifoMaxReceiveCount: 'fifoMaxReceiveCount' in overrides ? overrides.fifoMaxReceiveCount : 100,
      },
      alarms:
        'alarms' in overrides
          ? overrides.alarms
          : { email: '', oldestMessageAgeSeconds: 86_400, circuitOpenMinutes: 15 },
    },
    provider: { environment: { TABLE_NAME: { Ref: 'StateTable' } } },
    functions: {
      orchestrator: { timeout: 'orchestratorTimeout' in overrides ? overrides.orchestratorTimeout : 300 },
      worker: {
        timeout: 'workerTimeout' in overrides ? overrides.workerTimeout : 30,
        maximumEventAge: 'workerEventAge' in overrides ? overrides.workerEventAge : 60,
      },
    },
  };
}

/** serverless.yml's `custom.names` of the queues, resolved for a stage whose names start with `prefix` (`qo-dev-`). */
export function queueNames(prefix: string): Record<string, string> {
  return {
    mainQueue: `${prefix}main`,
    mainDeadLetterQueue: `${prefix}main-dlq`,
    fifoQueue: `${prefix}fifo.fifo`,
    fifoDeadLetterQueue: `${prefix}fifo-dlq.fifo`,
    requeueQueue: `${prefix}requeue`,
    requeueDeadLetterQueue: `${prefix}requeue-dlq`,
    bulkQueue: `${prefix}bulk`,
    bulkDeadLetterQueue: `${prefix}bulk-dlq`,
    workerFailureQueue: `${prefix}worker-failures`,
  };
}
