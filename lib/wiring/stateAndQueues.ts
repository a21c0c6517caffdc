import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { DynamoTableOptions } from '../adapters/dynamodb/DynamoTable';
import { SqsQueues } from '../adapters/sqs/SqsQueues';
import type { ServiceConfig } from '../config';
import { queueUrlsFromEnv, requiredEnv, RESOURCE_ENV, serviceConfigFromEnv, type Env } from '../configFromEnv';

/** The clients both functions use: the state table's and the queues'. */
export interface StateAndQueueClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * What both functions build from their environment: the validated configuration, the state table `TABLE_NAME` (on
 * which each function builds the stores it uses) and the lane's queues.
 * @throws ConfigError naming the missing or invalid variable.
 */
export function stateAndQueuesFromEnv(
  env: Env,
  clients: StateAndQueueClients,
): { config: ServiceConfig; table: DynamoTableOptions; queues: SqsQueues } {
  return {
    config: serviceConfigFromEnv(env),
    table: {
      client: DynamoDBDocumentClient.from(clients.dynamodb),
      tableName: requiredEnv(env, RESOURCE_ENV.tableName),
    },
    queues: new SqsQueues({ client: clients.sqs, queueUrls: queueUrlsFromEnv(env) }),
  };
}
