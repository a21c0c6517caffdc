import { ParameterNotFound } from '@aws-sdk/client-ssm';
import { GetParameterError } from '@aws-lambda-powertools/parameters/errors';
import type { SSMProvider } from '@aws-lambda-powertools/parameters/ssm';

/** Options of {@link keyFromParameter}. */
export interface ApiKeyParameterOptions {
  /** How long a key read, or a parameter found missing, is kept before the parameter is read again (a rotation is picked up within it). */
  readonly maxAgeSeconds: number;
  /** Epoch ms now, for how long a missing parameter is remembered. @default `Date.now` (the provider's cache reads it too) */
  readonly now?: () => number;
}

/**
 * The example worker's API credential, read from an SSM Parameter Store parameter (a `SecureString`, decrypted)
 * through a Powertools `SSMProvider`, as it is: the caller puts it in its header. The provider caches the value for
 * `maxAgeSeconds`, so a rotated key is picked up within that; calls made while a read is under way share it. A
 * parameter that does not exist means the API takes no key, and is looked for again only after `maxAgeSeconds`
 * too. Any other failure (throttling, access denied) is thrown, so the call reports it and the next one asks again.
 */
export function keyFromParameter(
  provider: SSMProvider,
  name: string,
  { maxAgeSeconds, now = Date.now }: ApiKeyParameterOptions,
): () => Promise<string | undefined> {
  let missingUntil = Number.NEGATIVE_INFINITY;
  let reading: Promise<string | undefined> | undefined;
  const read = async (): Promise<string | undefined> => {
    if (now() <= missingUntil) return undefined;
    try {
      return await provider.get(name, { decrypt: true, maxAge: maxAgeSeconds });
    } catch (error) {
      if (!(error instanceof GetParameterError && error.cause instanceof ParameterNotFound)) throw error;
      missingUntil = now() + maxAgeSeconds * 1000;
      return undefined;
    }
  };
  return () =>
    (reading ??= read().finally(() => {
      reading = undefined;
    }));
}
