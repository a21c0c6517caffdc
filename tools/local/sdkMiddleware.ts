import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { LambdaClient } from '@aws-sdk/client-lambda';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SSMClient } from '@aws-sdk/client-ssm';

/** A handler of an SDK middleware stack, without the SDK's per-client generics. */
export type LooseHandler = (args: {
  readonly request?: unknown;
  readonly input?: unknown;
}) => Promise<{ readonly response?: unknown; readonly output?: unknown }>;

/** A middleware as the fault hooks write it; `context.commandName` is e.g. `'GetItemCommand'`. */
export type LooseMiddleware = (next: LooseHandler, context: { readonly commandName?: string }) => LooseHandler;

/**
 * Adds `middleware` to one SDK client's stack. `initialize` runs before the SDK's retries, once per `send`;
 * `deserialize` with `priority: 'low'` runs once per attempt, right before the request leaves, and what it answers
 * is parsed (and retried) as the service's own answer would be.
 */
export function addMiddleware(
  client: DynamoDBClient | SQSClient | LambdaClient | SSMClient,
  middleware: LooseMiddleware,
  options: {
    readonly step: 'initialize' | 'deserialize';
    readonly name: string;
    readonly priority?: 'high' | 'normal' | 'low';
  },
): void {
  (client.middlewareStack as unknown as { add(m: LooseMiddleware, o: object): void }).add(middleware, options);
}
