import { PutEventsCommand, type EventBridgeClient } from '@aws-sdk/client-eventbridge';
import type { JobResult, ResultHandler, UndeliveredResult } from '../../ports/ResultHandler';
import { boundedResultJson, requestsOf, utf8Bytes } from './resultJson';

/** Options of {@link EventBridgeResultDestination}. */
export interface EventBridgeResultDestinationOptions {
  readonly client: EventBridgeClient;
  /** The event bus's name or ARN. */
  readonly busName: string;
  /** The events' `source`. */
  readonly source: string;
  /** The events' `detail-type`. */
  readonly detailType: string;
}

/** The most one PutEvents entry, and one request, may weigh as EventBridge counts it: 256 KiB. */
export const MAX_EVENT_BYTES = 262_144;

/** What EventBridge counts of an entry's `Time`, whatever it is. */
const TIME_BYTES = 14;

const MAX_BATCH = 10;

/**
 * The default result handler with an EventBridge result destination: each result is one event on the bus, its
 * `detail` the {@link JobResult} (its body cut to fit {@link MAX_EVENT_BYTES} with the source and detail type, with
 * `bodyTruncated`), its `time` the answer's, sent with PutEvents, ten to a request.
 */
export class EventBridgeResultDestination implements ResultHandler {
  /** `eventbridge <busName>`. */
  readonly destination: string;
  private readonly client: EventBridgeClient;
  private readonly busName: string;
  private readonly source: string;
  private readonly detailType: string;
  /** What an entry weighs beside its detail. */
  private readonly overhead: number;

  constructor({ client, busName, source, detailType }: EventBridgeResultDestinationOptions) {
    this.client = client;
    this.destination = `eventbridge ${busName}`;
    this.busName = busName;
    this.source = source;
    this.detailType = detailType;
    this.overhead = TIME_BYTES + utf8Bytes(source) + utf8Bytes(detailType);
  }

  /** Sends every request; an entry EventBridge refuses, or a request that fails as a whole, makes its results undelivered. */
  async deliver(results: readonly JobResult[]): Promise<readonly UndeliveredResult[]> {
    const events = results.map((result) => ({
      result,
      detail: boundedResultJson(result, MAX_EVENT_BYTES - this.overhead),
    }));
    const undelivered: UndeliveredResult[] = [];
    for (const request of requestsOf(
      events,
      (event) => this.overhead + utf8Bytes(event.detail),
      MAX_BATCH,
      MAX_EVENT_BYTES,
    )) {
      const Entries = request.map(({ result, detail }) => ({
        EventBusName: this.busName,
        Source: this.source,
        DetailType: this.detailType,
        Detail: detail,
        Time: new Date(result.at),
      }));
      try {
        const { Entries: answered = [] } = await this.client.send(new PutEventsCommand({ Entries }));
        // PutEvents answers each entry in the order sent: an event id, or an error code.
        request.forEach(({ result }, i) => {
          const entry = answered[i];
          if (entry?.ErrorCode !== undefined || entry?.EventId === undefined) {
            undelivered.push({
              result,
              reason: `EventBridge refused the result: ${entry?.ErrorCode ?? 'no answer'}${entry?.ErrorMessage === undefined ? '' : ` ${entry.ErrorMessage}`}`,
            });
          }
        });
      } catch (error) {
        for (const { result } of request)
          undelivered.push({
            result,
            reason: `PutEvents failed: ${(error as Error).name}: ${(error as Error).message}`,
          });
      }
    }
    return undelivered;
  }
}
