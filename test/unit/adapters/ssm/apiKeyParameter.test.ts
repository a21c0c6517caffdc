import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { bearerFromParameter } from '../../../../lib/adapters/ssm/apiKeyParameter';

const ssm = mockClient(SSMClient);
const client = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
const NAME = '/qo/dev/api-key';
const T0 = Date.UTC(2026, 0, 5);

/** A bearer source on a fresh provider (an empty cache), keeping the key `maxAgeSeconds`. */
function bearer(maxAgeSeconds = 300): () => Promise<string | undefined> {
  return bearerFromParameter(new SSMProvider({ awsSdkV3Client: client }), NAME, { maxAgeSeconds });
}

const notFound = () => new ParameterNotFound({ message: 'not found', $metadata: {} });

beforeEach(() => {
  // The provider's cache reads the wall clock (Date): only Date is faked, so the SDK's own timers run as usual.
  jest.useFakeTimers({
    now: T0,
    doNotFake: [
      'setTimeout',
      'clearTimeout',
      'setInterval',
      'clearInterval',
      'setImmediate',
      'clearImmediate',
      'nextTick',
      'queueMicrotask',
      'hrtime',
      'performance',
    ],
  });
});

afterEach(() => {
  ssm.reset();
  jest.useRealTimers();
});

describe('bearerFromParameter', () => {
  it('reads the parameter decrypted and makes it a bearer token', async () => {
    ssm.on(GetParameterCommand, { Name: NAME, WithDecryption: true }).resolves({ Parameter: { Value: 's3cret' } });
    await expect(bearer()()).resolves.toBe('Bearer s3cret');
  });

  it('keeps the key for maxAgeSeconds, then reads it again, so a rotated key is picked up', async () => {
    ssm
      .on(GetParameterCommand)
      .resolvesOnce({ Parameter: { Value: 'old' } })
      .resolves({ Parameter: { Value: 'new' } });
    const key = bearer(60);

    await expect(key()).resolves.toBe('Bearer old');
    jest.setSystemTime(T0 + 60_000);
    await expect(key()).resolves.toBe('Bearer old');
    jest.setSystemTime(T0 + 61_000);
    await expect(key()).resolves.toBe('Bearer new');

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
  });

  it('reads once for calls made together', async () => {
    ssm.on(GetParameterCommand).resolves({ Parameter: { Value: 'k' } });
    const key = bearer();

    await expect(Promise.all([key(), key(), key()])).resolves.toEqual(['Bearer k', 'Bearer k', 'Bearer k']);

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  it('means no key when the parameter does not exist, and looks again only after maxAgeSeconds', async () => {
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(notFound())
      .resolves({ Parameter: { Value: 'created' } });
    const key = bearer(60);

    await expect(key()).resolves.toBeUndefined();
    jest.setSystemTime(T0 + 60_000);
    await expect(key()).resolves.toBeUndefined();
    jest.setSystemTime(T0 + 60_001);
    await expect(key()).resolves.toBe('Bearer created');

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
  });

  it('passes any other failure on, and asks again at the next call', async () => {
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }))
      .resolves({ Parameter: { Value: 'k' } });
    const key = bearer();

    await expect(key()).rejects.toThrow('Rate exceeded');
    await expect(key()).resolves.toBe('Bearer k');
  });
});
