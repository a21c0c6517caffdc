import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { SSMClient } from '@aws-sdk/client-ssm';
import { CLIENT_CONFIG } from '../../lib/adapters/aws/clientConfig';
import type { OrchestratorClients } from '../../lib/wiring/orchestratorDeps';
import { LOCAL_ACCOUNT } from './template';

/** The emulators accept any credentials; these are never real ones. */
export const FAKE_CREDENTIALS = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

/** Where the DynamoDB and SQS emulators listen. */
export interface EmulatorEndpoints {
  readonly dynamodbEndpoint: string;
  readonly sqsEndpoint: string;
}

/**
 * One function's clients on the local stack. Every function gets all three, as the orchestrator needs them; the
 * worker uses the DynamoDB and SQS ones, and an SSM client on the local parameter store where a run serves one
 * (see `ssmClient`).
 */
export type FunctionClients = OrchestratorClients;

/** Region and credentials of every local client. */
const LOCAL = { region: LOCAL_ACCOUNT.region, credentials: FAKE_CREDENTIALS } as const;

/** A DynamoDB client on the emulator at `endpoint`, with the production settings ({@link CLIENT_CONFIG}). */
export function dynamodbClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ ...LOCAL, endpoint, ...CLIENT_CONFIG.dynamodb });
}

/** An SQS client on the emulator at `endpoint`, with the production settings ({@link CLIENT_CONFIG}). */
export function sqsClient(endpoint: string): SQSClient {
  return new SQSClient({ ...LOCAL, endpoint, ...CLIENT_CONFIG.sqs });
}

/** An SSM client on the local parameter store at `endpoint` (see `startParameterStore`), with the production settings. */
export function ssmClient(endpoint: string): SSMClient {
  return new SSMClient({ ...LOCAL, endpoint, ...CLIENT_CONFIG.ssm });
}

/** A Lambda client on the local Lambda host at `endpoint`, with the production settings (one attempt an invoke). */
export function lambdaClient(endpoint: string): LambdaClient {
  return new LambdaClient({ ...LOCAL, endpoint, ...CLIENT_CONFIG.lambda });
}

/** A function's clients on the emulators and a Lambda endpoint, with the production settings ({@link CLIENT_CONFIG}). */
export function functionClients(emulators: EmulatorEndpoints, lambdaEndpoint: string): FunctionClients {
  return {
    dynamodb: dynamodbClient(emulators.dynamodbEndpoint),
    sqs: sqsClient(emulators.sqsEndpoint),
    lambda: lambdaClient(lambdaEndpoint),
  };
}

/** Closes a function's clients' sockets. */
export function destroyClients(clients: FunctionClients): void {
  clients.dynamodb.destroy();
  clients.sqs.destroy();
  clients.lambda.destroy();
}
