import { GetParameterCommand, ParameterNotFound, SSMClient } from '@aws-sdk/client-ssm';
import { mockClient } from 'aws-sdk-client-mock';
import { bearerFromParameter } from '../../../../lib/adapters/ssm/apiKeyParameter';

const ssm = mockClient(SSMClient);
const client = new SSMClient({ region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' } });

afterEach(() => ssm.reset());

describe('bearerFromParameter', () => {
  it('reads the parameter decrypted and makes it a bearer token', async () => {
    ssm.on(GetParameterCommand, { Name: '/qo/dev/api-key', WithDecryption: true }).resolves({ Parameter: { Value: 's3cret' } });
    await expect(bearerFromParameter(client, '/qo/dev/api-key')()).resolves.toBe('Bearer s3cret');
  });

  it('means no key when the parameter does not exist', async () => {
    ssm.on(GetParameterCommand).rejects(new ParameterNotFound({ message: 'not found', $metadata: {} }));
    await expect(bearerFromParameter(client, '/qo/dev/api-key')()).resolves.toBeUndefined();
  });

  it('passes any other failure on', async () => {
    ssm.on(GetParameterCommand).rejects(Object.assign(new Error('Rate exceeded'), { name: 'ThrottlingException' }));
    await expect(bearerFromParameter(client, '/qo/dev/api-key')()).rejects.toThrow('Rate exceeded');
  });
});
