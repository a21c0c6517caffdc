import { addLambdaContext, powertoolsLog, powertoolsLogger, SERVICE_NAME } from '../../../lib/adapters/log';
import { lambdaTelemetry, metricScope, UNDEPLOYED } from '../../../lib/adapters/telemetry';
import { captureStdout } from '../../helpers/emf';

afterEach(() => jest.restoreAllMocks());

/** A Lambda context as the runtime passes it. */
const CONTEXT = {
  awsRequestId: 'req-1',
  functionName: 'quota-orchestrator-dev-worker',
  functionVersion: '$LATEST',
  memoryLimitInMB: '256',
  invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:quota-orchestrator-dev-worker',
  getRemainingTimeInMillis: () => 1_000,
};

describe('powertoolsLog', () => {
  it('writes one JSON line per call with the level, the message, an ISO timestamp, the service and the fields', () => {
    const stdout = captureStdout();
    const log = powertoolsLog(powertoolsLogger());

    log('info', 'worker event retried', { messageId: 'm-1', dispatchId: 'd-1', idempotencyKey: 'k-1', attempt: 2 });

    expect(stdout.json()).toEqual([
      expect.objectContaining({
        level: 'INFO',
        message: 'worker event retried',
        service: SERVICE_NAME,
        messageId: 'm-1',
        dispatchId: 'd-1',
        idempotencyKey: 'k-1',
        attempt: 2,
        timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      }),
    ]);
  });

  it('writes warnings and errors to stderr, as JSON lines too', () => {
    const stderr: string[] = [];
    jest
      .spyOn(process.stderr, 'write')
      .mockImplementation((chunk: string | Uint8Array) => stderr.push(String(chunk)) > 0);
    const log = powertoolsLog(powertoolsLogger());

    log('warn', 'circuit closed -> open: caller rejected: HTTP 401 Unauthorized', { lane: 'sms' });
    log('error', 'boom');

    expect(
      stderr.map((line) => JSON.parse(line) as Record<string, unknown>).map((l) => [l.level, l.message, l.lane]),
    ).toEqual([
      ['WARN', 'circuit closed -> open: caller rejected: HTTP 401 Unauthorized', 'sms'],
      ['ERROR', 'boom', undefined],
    ]);
  });
});

describe('addLambdaContext', () => {
  it("adds the invocation's request id, function and cold start to every line after", () => {
    const stdout = captureStdout();
    const logger = powertoolsLogger();
    const log = powertoolsLog(logger);

    addLambdaContext(logger, CONTEXT);
    log('info', 'orchestrator run ended');

    expect(stdout.json()[0]).toMatchObject({
      function_request_id: 'req-1',
      function_name: CONTEXT.functionName,
      function_arn: CONTEXT.invokedFunctionArn,
      function_memory_size: '256',
      cold_start: expect.any(Boolean),
    });
  });
});

describe('lambdaTelemetry', () => {
  it('logs through the logger it is given, and sets each context on it', () => {
    const stdout = captureStdout();
    const telemetry = lambdaTelemetry(powertoolsLogger());

    telemetry.setContext?.(CONTEXT);
    telemetry.log('info', 'hello', { a: 1 });

    expect(stdout.json()).toEqual([expect.objectContaining({ message: 'hello', a: 1, function_request_id: 'req-1' })]);
  });

  it('scopes metrics to the deployment it is given, else to a local one, before the lane', () => {
    const deployed = lambdaTelemetry(powertoolsLogger(), undefined, { service: 'qo', stage: 'prod' });
    expect(metricScope(deployed, 'sms')).toEqual({ service: 'qo', stage: 'prod', lane: 'sms' });
    expect(metricScope(lambdaTelemetry(powertoolsLogger()), 'sms')).toEqual({ ...UNDEPLOYED, lane: 'sms' });
  });
});
