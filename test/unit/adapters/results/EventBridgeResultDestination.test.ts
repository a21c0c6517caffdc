import { EventBridgeClient, EventBridgeServiceException, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { mockClient } from 'aws-sdk-client-mock';
import {
  EventBridgeResultDestination,
  MAX_EVENT_BYTES,
} from '../../../../lib/adapters/results/EventBridgeResultDestination';
import { jobResult } from '../../../helpers/jobResults';

const ebMock = mockClient(EventBridgeClient);
const client = new EventBridgeClient({ region: 'us-east-1' });
const options = { client, busName: 'results', source: 'quota-orchestrator', detailType: 'Job Result' };

const result = jobResult;

beforeEach(() => {
  ebMock.reset();
  ebMock.on(PutEventsCommand).callsFake((input: { Entries: unknown[] }) => ({
    FailedEntryCount: 0,
    Entries: input.Entries.map((_, i) => ({ EventId: `e-${i}` })),
  }));
});

const requests = () => ebMock.commandCalls(PutEventsCommand).map((call) => call.args[0].input.Entries ?? []);

describe('EventBridgeResultDestination', () => {
  describe('deliver', () => {
    it('puts one event per result on the bus, its detail the JSON of the result and its time the answer, ten to a request', async () => {
      const results = Array.from({ length: 11 }, (_, i) => result(i));
      await expect(new EventBridgeResultDestination(options).deliver(results)).resolves.toEqual([]);
      expect(requests().map((entries) => entries.length)).toEqual([10, 1]);
      expect(requests()[0]?.[2]).toEqual({
        EventBusName: 'results',
        Source: 'quota-orchestrator',
        DetailType: 'Job Result',
        Detail: JSON.stringify(result(2)),
        Time: new Date(result(2).at),
      });
    });

    it('cuts a body so that the entry, as EventBridge weighs it, fits its limit', async () => {
      await new EventBridgeResultDestination(options).deliver([result(0, { body: 'x'.repeat(MAX_EVENT_BYTES) })]);
      const [entry] = requests()[0] ?? [];
      const weight =
        14 +
        Buffer.byteLength(entry?.Source ?? '') +
        Buffer.byteLength(entry?.DetailType ?? '') +
        Buffer.byteLength(entry?.Detail ?? '');
      expect(weight).toBeLessThanOrEqual(MAX_EVENT_BYTES);
      expect(JSON.parse(entry?.Detail ?? '')).toMatchObject({ bodyTruncated: true });
    });

    it('returns the entries EventBridge refuses, and every result of a request that failed, with why', async () => {
      ebMock
        .on(PutEventsCommand)
        .resolvesOnce({
          FailedEntryCount: 1,
          Entries: [{ EventId: 'e-0' }, { ErrorCode: 'InternalFailure', ErrorMessage: 'try later' }],
        })
        .rejectsOnce(
          new EventBridgeServiceException({
            name: 'ResourceNotFoundException',
            $fault: 'client',
            message: 'no bus',
            $metadata: {},
          }),
        );
      const results = Array.from({ length: 11 }, (_, i) => result(i));
      const undelivered = await new EventBridgeResultDestination(options).deliver(results);
      expect(undelivered.slice(0, 2)).toEqual([
        { result: results[1], reason: 'EventBridge refused the result: InternalFailure try later' },
        { result: results[2], reason: 'EventBridge refused the result: no answer' },
      ]);
      expect(undelivered.at(-1)).toEqual({
        result: results[10],
        reason: 'PutEvents failed: ResourceNotFoundException: no bus',
      });
    });
  });
});
