import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { keyFromParameter } from '../../../../lib/adapters/ssm/apiKeyParameter';

const ssm = mockClient(SSMClient);
const client = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });
const NAME = '/qo/dev/api-key';
const T0 = Date.UTC(2026, 0, 5);

/** A key source on a fresh provider (an empty cache), keeping the key `maxAgeSeconds`. */
function keySource(maxAgeSeconds = 300): () => Promise<string | undefined> {
  return keyFromParameter(new SSMProvider({ awsSdkV3Client: client }), NAME, { maxAgeSeconds });
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

describe('keyFromParameter', () => {
  it('reads the parameter decrypted and gives the key as it is', async () => {
    ssm.on(GetParameterCommand, { Name: NAME, WithDecryption: true }).resolves({ Parameter: { Value: 's3cret' } });
    await expect(keySource()()).resolves.toBe('s3cret');
  });

  it('keeps the key for maxAgeSeconds, then reads it again, so a rotated key is picked up', async () => {
    ssm
      .on(GetParameterCommand)
      .resolvesOnce({ Parameter: { Value: 'old' } })
      .resolves({ Parameter: { Value: 'new' } });
    const key = keySource(60);

    await expect(key()).resolves.toBe('old');
    jest.setSystemTime(T0 + 60_000);
    await expect(key()).resolves.toBe('old');
    jest.setSystemTime(T0 + 61_000);
    await expect(key()).resolves.toBe('new');

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
  });

  it('reads once for calls made together', async () => {
    ssm.on(GetParameterCommand).resolves({ Parameter: { Value: 'k' } });
    const key = keySource();

    await expect(Promise.all([key(), key(), key()])).resolves.toEqual(['k', 'k', 'k']);

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(1);
  });

  it('means no key when the parameter does not exist, and looks again only after maxAgeSeconds', async () => {
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(notFound())
      .resolves({ Parameter: { Value: 'created' } });
    const key = keySource(60);

    await expect(key()).resolves.toBeUndefined();
    jest.setSystemTime(T0 + 60_000);
    await expect(key()).resolves.toBeUndefined();
    jest.setSystemTime(T0 + 60_001);
    await expect(key()).resolves.toBe('created');

    expect(ssm.commandCalls(GetParameterCommand)).toHaveLength(2);
  });

  it('passes any other failure on, and asks again at the next call', async () => {
    ssm
      .on(GetParameterCommand)
      .rejectsOnce(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }))
      .resolves({ Parameter: { Value: 'k' } });
    const key = keySource();

    await expect(key()).rejects.toThrow('Rate exceeded');
    await expect(key()).resolves.toBe('k');
  });
});
