import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { TABLE_KEY } from '../../lib/adapters/dynamodb/DynamoTable';

const POLL_MS = 10;
const ACTIVE_WITHIN_MS = 10_000;

/**
 * Creates a state table with the schema the DynamoDB stores expect (partition key `TABLE_KEY` of type S, no sort
 * key, on demand) and waits until it is ACTIVE. TTL is not enabled: dynalite has no UpdateTimeToLive, and the
 * store never relies on TTL deleting anything.
 * @throws Error when the table is not ACTIVE within 10 s.
 */
export async function createStateTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: tableName,
      KeySchema: [{ AttributeName: TABLE_KEY, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: TABLE_KEY, AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const deadline = Date.now() + ACTIVE_WITHIN_MS;
  while ((await client.send(new DescribeTableCommand({ TableName: tableName }))).Table?.TableStatus !== 'ACTIVE') {
    if (Date.now() > deadline) throw new Error(`table ${tableName} is not ACTIVE after ${ACTIVE_WITHIN_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** Deletes a state table: one made by {@link createStateTable}, or the packaged template's. */
export async function deleteStateTable(client: DynamoDBClient, tableName: string): Promise<void> {
  await client.send(new DeleteTableCommand({ TableName: tableName }));
}
