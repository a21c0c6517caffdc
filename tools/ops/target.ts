import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CLIENT_CONFIG } from '../../lib/adapters/aws/clientConfig';
import type { ServiceConfig } from '../../lib/config';
import { serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import { ConfigError } from '../../lib/errors';
import { QUEUE_NAMES, type QueueName } from '../../lib/ports/QueueReceiver';
import { laneEnvs, readLane } from '../../lib/lanes/laneEnv';
import { laneQueueName, UNPREFIXED_LANE } from '../../lib/lanes/laneQueueNames';
import { readStackFile, StackFileError } from '../local/stackFile';
import { OpsError } from './errors';

/** The AWS clients an operator command uses. */
export interface OpsClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * What an operator command works on: one lane of a deployed stage or of the local stack, its state table, its six
 * queues and its configuration (quotas, time zone, circuit and retry settings) as the service itself reads it.
 */
export interface OpsTarget {
  /** What the target is, for messages: `stage 'dev' in us-east-1` or `the local stack (out/local-stack.json)`. */
  readonly label: string;
  readonly lane: string;
  readonly config: ServiceConfig;
  readonly tableName: string;
  readonly queueUrls: Readonly<Record<QueueName, string>>;
  readonly clients: OpsClients;
  /** Closes the clients' sockets. */
  destroy(): void;
}

/** Where a deployed stage is (`--stage`, `--region`, `--profile`, `--service`). */
export interface StageOptions {
  readonly stage: string;
  readonly service: string;
  /** @default the SDK's (`AWS_REGION`, the profile's region) */
  readonly region?: string;
  /** @default the SDK's (`AWS_PROFILE`, else `default`) */
  readonly profile?: string;
}

/** The physical names of a deployed stage's resources, as serverless.yml's `custom.names` makes them. */
export interface StageNames {
  readonly table: string;
  readonly queues: Readonly<Record<QueueName, string>>;
  readonly orchestratorFunction: string;
  readonly workerFunction: string;
}

/**
 * The names serverless.yml's `custom.names` gives the resources of `service` on `stage` (`${service}-${stage}-…`), the
 * queues those of `lane` (see `laneQueueName`: the default lane's are the one-lane deployment's).
 */
export function stageNames(service: string, stage: string, lane = UNPREFIXED_LANE): StageNames {
  const prefix = `${service}-${stage}`;
  return {
    table: prefix,
    queues: Object.fromEntries(QUEUE_NAMES.map((queue) => [queue, laneQueueName(`${prefix}-`, lane, queue)])) as Record<
      QueueName,
      string
    >,
    orchestratorFunction: `${prefix}-orchestrator`,
    workerFunction: `${prefix}-worker`,
  };
}

/**
 * The configuration of `lane` from a function's environment, through the service's own parsers (see `laneEnvs`).
 * @throws OpsError when it does not parse, or when the deployment has no such lane (naming those it has).
 */
function configOf(env: Env, lane: string, where: string, label: string): ServiceConfig {
  try {
    const lanes = laneEnvs(env);
    const found = lanes.find((l) => l.lane === lane);
    if (found === undefined) {
      const names = lanes.map((l) => l.lane);
      throw new OpsError(
        names.length === 1
          ? `${label} serves lane '${names[0]}', not '${lane}': pass --lane ${names[0]}`
          : `${label} has no lane '${lane}'; its lanes are ${names.map((n) => `'${n}'`).join(', ')}: pass one with --lane`,
      );
    }
    return readLane(found, serviceConfigFromEnv);
  } catch (error) {
    if (error instanceof ConfigError)
      throw new OpsError(`the configuration in ${where} does not parse: ${error.message}`, { cause: error });
    throw error;
  }
}

/**
 * A deployed stage: its names from serverless.yml's conventions ({@link stageNames}), its queue URLs from
 * `GetQueueUrl`, and the lane's configuration from the orchestrator function's environment
 * (`GetFunctionConfiguration`), parsed by `lib/configFromEnv.ts` as the function parses it.
 * @throws OpsError when the stage's orchestrator function or one of its queues does not exist (or cannot be read),
 *   when its configuration does not parse, or when it does not serve `lane`.
 */
export async function stageTarget(options: StageOptions & { readonly lane: string }): Promise<OpsTarget> {
  const { stage, service, region, profile, lane } = options;
  const config = { ...(region === undefined ? {} : { region }), ...(profile === undefined ? {} : { profile }) };
  const clients = {
    dynamodb: new DynamoDBClient({ ...config, ...CLIENT_CONFIG.dynamodb }),
    sqs: new SQSClient({ ...config, ...CLIENT_CONFIG.sqs }),
  };
  const lambda = new LambdaClient({ ...config, ...CLIENT_CONFIG.lambda });
  const destroy = (): void => {
    clients.dynamodb.destroy();
    clients.sqs.destroy();
  };
  const names = stageNames(service, stage, lane);
  const where = async () => `region ${await clients.sqs.config.region()}`;
  try {
    let environment: Env;
    try {
      const { Environment } = await lambda.send(
        new GetFunctionConfigurationCommand({ FunctionName: names.orchestratorFunction }),
      );
      environment = Environment?.Variables ?? {};
    } catch (error) {
      if (errorName(error) === 'ResourceNotFoundException') {
        throw new OpsError(
          `stage '${stage}' of service '${service}' not found in ${await where()}: there is no function ${names.orchestratorFunction} (check --stage, --service and --region)`,
          { cause: error },
        );
      }
      throw error;
    }
    const serviceConfig = configOf(environment, lane, `function ${names.orchestratorFunction}`, `stage '${stage}'`);
    const urls = await Promise.all(
      QUEUE_NAMES.map(async (queue) => {
        try {
          const { QueueUrl } = await clients.sqs.send(new GetQueueUrlCommand({ QueueName: names.queues[queue] }));
          if (QueueUrl === undefined) throw new OpsError(`SQS returned no URL for queue ${names.queues[queue]}`);
          return [queue, QueueUrl] as const;
        } catch (error) {
          if (/QueueDoesNotExist|NonExistentQueue/.test(errorName(error))) {
            throw new OpsError(`queue ${names.queues[queue]} of stage '${stage}' not found in ${await where()}`, {
              cause: error,
            });
          }
          throw error;
        }
      }),
    );
    return {
      label: `stage '${stage}' in ${await clients.sqs.config.region()}`,
      lane,
      config: serviceConfig,
      tableName: names.table,
      queueUrls: Object.fromEntries(urls) as Record<QueueName, string>,
      clients,
      destroy,
    };
  } catch (error) {
    destroy();
    throw error;
  } finally {
    lambda.destroy();
  }
}

/**
 * The local stack that `npm start -- --keep` keeps up, from the file it wrote: its endpoints, dummy credentials,
 * table, queues, and the lane's configuration from the orchestrator's environment.
 * @throws OpsError when the file is missing or malformed, when its configuration does not parse, or when it does not
 *   serve `lane`.
 */
export function localTarget(file: string, lane: string): OpsTarget {
  let info;
  try {
    info = readStackFile(file);
  } catch (error) {
    if (error instanceof StackFileError) throw new OpsError(error.message, { cause: error });
    throw error;
  }
  const label = `the local stack (${file})`;
  const config = configOf(
    info.functions.orchestrator.environment,
    lane,
    `${file} (functions.orchestrator.environment)`,
    label,
  );
  const base = { region: info.region, credentials: info.credentials };
  const clients = {
    dynamodb: new DynamoDBClient({ ...base, endpoint: info.endpoints.dynamodb, ...CLIENT_CONFIG.dynamodb }),
    sqs: new SQSClient({ ...base, endpoint: info.endpoints.sqs, ...CLIENT_CONFIG.sqs }),
  };
  return {
    label,
    lane,
    config,
    tableName: info.tableName,
    queueUrls: info.queueUrls,
    clients,
    destroy: () => {
      clients.dynamodb.destroy();
      clients.sqs.destroy();
    },
  };
}

/** The `name` of an SDK error (its code), or `''`. */
function errorName(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : '';
}
