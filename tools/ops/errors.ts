/**
 * An expected failure of an operator command: a stage, queue or local stack that is not there, an argument out of
 * range. The CLI prints its message alone, without a stack trace, and exits with {@link EXIT.failed}.
 */
export class OpsError extends Error {
  override readonly name = 'OpsError';
}

/** The operator CLI's exit codes. */
export const EXIT = {
  ok: 0,
  /** The command ran, but some of its items failed (an NDJSON line, a dead letter that could not be redriven). */
  partial: 1,
  /** The command could not run: bad arguments, or a target, queue or file that is not there. */
  failed: 2,
} as const;

/**
 * The operator's message for an error the SDK or the network raised, when it is an expected one (no credentials, no
 * access, nothing listening where the target says), else `undefined`.
 */
export function expectedFailure(error: unknown, target: string | undefined): string | undefined {
  const name = (error as { name?: unknown } | null)?.name;
  const message = String((error as { message?: unknown } | null)?.message ?? error);
  const code =
    (error as { code?: unknown; cause?: { code?: unknown } } | null)?.code ??
    (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  const on = target === undefined ? '' : ` (${target})`;
  if (name === 'CredentialsProviderError')
    return `no AWS credentials: ${message}. Pass --profile, or set AWS_PROFILE or the AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY variables`;
  if (
    typeof name === 'string' &&
    /AccessDenied|UnrecognizedClient|InvalidClientTokenId|ExpiredToken|InvalidSignature/.test(name)
  )
    return `AWS refused the request${on}: ${name}: ${message}`;
  if (
    name === 'ResourceNotFoundException' ||
    (typeof name === 'string' && /QueueDoesNotExist|NonExistentQueue/.test(name))
  )
    return `not found${on}: ${message}`;
  if (code === 'ECONNREFUSED' || /ECONNREFUSED/.test(message))
    return `nothing answers${on}: ${message}. Is \`npm start -- --keep\` still running?`;
  if (
    (typeof code === 'string' && /^(ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNRESET)$/.test(code)) ||
    name === 'TimeoutError'
  )
    return `cannot reach AWS${on}: ${message}`;
  if (/Region is missing/i.test(message)) return 'no AWS region: pass --region, or set AWS_REGION';
  return undefined;
}
