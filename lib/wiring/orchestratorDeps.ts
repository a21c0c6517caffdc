import { randomUUID } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { CLIENT_CONFIG } from '../adapters/aws/clientConfig';
import { DynamoLimitStore } from '../adapters/dynamodb/DynamoLimitStore';
import { DynamoCircuitStore } from '../adapters/dynamodb/DynamoCircuitStore';
import { DynamoLeaseStore } from '../adapters/dynamodb/DynamoLeaseStore';
import { DynamoLedgerStore } from '../adapters/dynamodb/DynamoLedgerStore';
import { LambdaInvoker } from '../adapters/lambda/LambdaInvoker';
import { systemClock } from '../adapters/systemClock';
import { requiredEnv, RESOURCE_ENV, type Env } from '../configFromEnv';
import type { OrchestratorDeps } from '../services/orchestrator/types';
import { stateAndQueuesFromEnv, type StateAndQueueClients } from './stateAndQueues';
import { shardCounts } from '../domain/quota/settlementShards';

/** The AWS clients of the orchestrator function. */
export interface OrchestratorClients extends StateAndQueueClients {
  readonly lambda: LambdaClient;
}

/** The orchestrator's clients with the SDK's defaults and {@link CLIENT_CONFIG}. */
export function orchestratorClients(): OrchestratorClients {
  return {
    dynamodb: new DynamoDBClient(CLIENT_CONFIG.dynamodb),
    sqs: new SQSClient(CLIENT_CONFIG.sqs),
    lambda: new LambdaClient(CLIENT_CONFIG.lambda),
  };
}

/** The orchestrator's dependencies except `owner` (one per run) and `onEvent` (the handler's logger). */
export type OrchestratorBaseDeps = Omit<OrchestratorDeps, 'owner' | 'onEvent'>;

/**
 * Builds the orchestrator's adapters from its environment, validating the configuration.
 * @throws ConfigError naming the missing or invalid variable.
 */
export function orchestratorDepsFromEnv(env: Env, clients: OrchestratorClients): OrchestratorBaseDeps {
  const { table, ...shared } = stateAndQueuesFromEnv(env, clients);
  return {
    ...shared,
    stores: {
      lease: new DynamoLeaseStore(table),
      ledger: new DynamoLedgerStore(table, shardCounts(shared.config.quotas, shared.config.pools)),
      circuit: new DynamoCircuitStore(table),
      limits: new DynamoLimitStore(table),
    },
    clock: systemClock,
    invoker: new LambdaInvoker({
      client: clients.lambda,
      functionName: requiredEnv(env, RESOURCE_ENV.workerFunctionName),
    }),
    random: Math.random,
    newId: randomUUID,
  };
}
