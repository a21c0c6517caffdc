import type { InitializeHandlerOptions, InitializeMiddleware, MetadataBearer } from '@smithy/types';

/** Count and summed duration of one kind of request. */
export interface RequestTally {
  readonly count: number;
  readonly ms: number;
}

/** An SDK v3 client, as far as the meter needs it. */
interface MeteredClient {
  readonly middlewareStack: { add(middleware: InitializeMiddleware<object, MetadataBearer>, options: InitializeHandlerOptions): void };
}

/**
 * Counts and times the requests of the SDK clients it is attached to, per `service.Command` (e.g.
 * `sqs.ReceiveMessageCommand`). It sits at the `initialize` step, so one command counts once, the SDK's own retries
 * inside it, and its time is what the caller waited.
 */
export class RequestMeter {
  private readonly tallies = new Map<string, { count: number; ms: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Adds the meter to a client and returns the client. */
  attach<C extends MeteredClient>(client: C, service: string): C {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const startedAt = this.now();
        try {
          return await next(args);
        } finally {
          const key = `${service}.${String(context.commandName)}`;
          const tally = this.tallies.get(key) ?? { count: 0, ms: 0 };
          tally.count++;
          tally.ms += this.now() - startedAt;
          this.tallies.set(key, tally);
        }
      },
      { step: 'initialize', name: 'requestMeter' },
    );
    return client;
  }

  /** The tallies so far, by `service.Command`. */
  snapshot(): Readonly<Record<string, RequestTally>> {
    return Object.fromEntries([...this.tallies].map(([key, tally]) => [key, { ...tally }]));
  }
}

/** How many of the tallied requests went to one service (`dynamodb`, `sqs`, `lambda`). */
export function countRequests(tallies: Readonly<Record<string, RequestTally>>, service: string): number {
  return Object.entries(tallies)
    .filter(([key]) => key.startsWith(`${service}.`))
    .reduce((sum, [, tally]) => sum + tally.count, 0);
}
