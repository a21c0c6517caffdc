import { GetParameterCommand, ParameterNotFound, type SSMClient } from '@aws-sdk/client-ssm';

/**
 * The example worker's API credential, read from an SSM Parameter Store parameter (a `SecureString`, decrypted) and
 * sent as `authorization: Bearer <value>`. A parameter that does not exist means the API takes no key. The lookup
 * is made when the first call needs it; any other failure (throttling, access denied) is thrown, so the call reports
 * it and the next one asks again.
 */
export function bearerFromParameter(client: SSMClient, name: string): () => Promise<string | undefined> {
  return async () => {
    try {
      const { Parameter } = await client.send(new GetParameterCommand({ Name: name, WithDecryption: true }));
      return Parameter?.Value === undefined ? undefined : `Bearer ${Parameter.Value}`;
    } catch (error) {
      if (error instanceof ParameterNotFound) return undefined;
      throw error;
    }
  };
}
