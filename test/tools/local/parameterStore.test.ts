import { GetParameterCommand } from '@aws-sdk/client-ssm';
import { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';
import { keyFromParameter } from '../../../lib/adapters/ssm/apiKeyParameter';
import { ssmClient } from '../../../tools/local/clients';
import { startParameterStore, type ParameterStore } from '../../../tools/local/parameterStore';

let store: ParameterStore;

beforeAll(async () => {
  store = await startParameterStore({ '/qo/local/api-key': 'sk-local' });
});

afterAll(async () => {
  await store.close();
});

describe('startParameterStore', () => {
  it("answers the worker's own key reader, through the SDK's SSM client and the Powertools provider", async () => {
    const client = ssmClient(store.endpoint);
    try {
      const provider = new SSMProvider({ awsSdkV3Client: client });
      await expect(keyFromParameter(provider, '/qo/local/api-key', { maxAgeSeconds: 60 })()).resolves.toBe('sk-local');
      // A parameter it does not hold is SSM's ParameterNotFound, which the reader takes for "no key".
      await expect(keyFromParameter(provider, '/qo/local/other', { maxAgeSeconds: 60 })()).resolves.toBeUndefined();
    } finally {
      client.destroy();
    }
    expect(store.reads()).toBe(2);
  });

  it('gives the parameter as a SecureString, and listens on 127.0.0.1', async () => {
    expect(store.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const client = ssmClient(store.endpoint);
    try {
      const { Parameter } = await client.send(
        new GetParameterCommand({ Name: '/qo/local/api-key', WithDecryption: true }),
      );
      expect(Parameter).toMatchObject({
        Name: '/qo/local/api-key',
        Type: 'SecureString',
        Value: 'sk-local',
        Version: 1,
      });
    } finally {
      client.destroy();
    }
  });
});
