import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { dynamoStores } from '../adapters/dynamodb/dynamoStores';
import { SqsQueues } from '../adapters/sqs/SqsQueues';
import type { ServiceConfig } from '../config';
import { queueUrlsFromEnv, requiredEnv, RESOURCE_ENV, serviceConfigFromEnv, type Env } from '../configFromEnv';
import type { StateStores } from '../ports/StateStores';

/** The clients both functions use: the state table's and the queues'. */
export interface StateAndQueueClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * What both functions build from their environment: the validated configuration, the four stores on the state table
 * `TABLE_NAME` (each function keeps those it uses) and the lane's queues.
 * @throws ConfigError naming the missing or invalid variable.
 */
export function stateAndQueuesFromEnv(env: Env, clients: StateAndQueueClients): { config: ServiceConfig; stores: StateStores; queues: SqsQueues } {
  return {
    config: serviceConfigFromEnv(env),
    stores: dynamoStores({ client: DynamoDBDocumentClient.from(clients.dynamodb), tableName: requiredEnv(env, RESOURCE_ENV.tableName) }),
    queues: new SqsQueues({ client: clients.sqs, queueUrls: queueUrlsFromEnv(env) }),
  };
}
