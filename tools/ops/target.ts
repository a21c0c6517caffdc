import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetFunctionConfigurationCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CLIENT_CONFIG } from '../../lib/adapters/aws/clientConfig';
import type { ServiceConfig } from '../../lib/config';
import { queueUrlsFromEnv, serviceConfigFromEnv, type Env } from '../../lib/configFromEnv';
import { ConfigError } from '../../lib/errors';
import { QUEUE_NAMES, type QueueName } from '../../lib/ports/QueueReceiver';
import { idempotencyNamespace, laneEnvs, readLane } from '../../lib/lanes/laneEnv';
import { laneQueueName, UNPREFIXED_LANE } from '../../lib/lanes/laneQueueNames';
import { readStackFile, StackFileError } from '../local/stackFile';
import { OpsError } from './errors';

/** The AWS clients an operator command uses. */
export interface OpsClients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
}

/**
 * What an operator command works on: one lane of a deployed stage or of the local stack, its state table, its eight
 * queues and its configuration (quotas, time zone, circuit and retry settings) as the service itself reads it.
 */
export interface OpsTarget {
  /** What the target is, for messages: `stage 'dev' in us-east-1` or `the local stack (out/local-stack.json)`. */
  readonly label: string;
  readonly lane: string;
  readonly config: ServiceConfig;
  /** The namespace of the lane's idempotency keys (see `idempotencyNamespace`), if it has one. */
  readonly idempotencyNamespace?: string;
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
 * The lanes a command works on, from a function's environment read through the service's own parsers (see
 * `laneEnvs`): `lane` alone, or every lane when `lane` is undefined.
 * @throws OpsError when the environment does not parse, or has no such lane (naming those it has).
 */
function lanesOf(
  env: Env,
  lane: string | undefined,
  where: string,
  label: string,
): { readonly lane: string; readonly config: ServiceConfig; readonly idempotencyNamespace?: string }[] {
  try {
    const lanes = laneEnvs(env);
    const chosen = lane === undefined ? lanes : lanes.filter((l) => l.lane === lane);
    if (chosen.length === 0) {
      const names = lanes.map((l) => l.lane);
      throw new OpsError(
        names.length === 1
          ? `${label} serves lane '${names[0]}', not '${lane}': pass --lane ${names[0]}, or leave --lane out`
          : `${label} has no lane '${lane}'; its lanes are ${names.map((n) => `'${n}'`).join(', ')}`,
      );
    }
    return chosen.map((l) => {
      const namespace = idempotencyNamespace(l);
      return {
        lane: l.lane,
        config: readLane(l, serviceConfigFromEnv),
        ...(namespace === undefined ? {} : { idempotencyNamespace: namespace }),
      };
    });
  } catch (error) {
    if (error instanceof ConfigError)
      throw new OpsError(`the configuration in ${where} does not parse: ${error.message}`, { cause: error });
    throw error;
  }
}

/**
 * A deployed stage's lanes (`lane` alone, or all of them): its names from serverless.yml's conventions
 * ({@link stageNames}), each lane's queue URLs from `GetQueueUrl`, and each lane's configuration from the orchestrator
 * function's environment (`GetFunctionConfiguration`), parsed by `lib/configFromEnv.ts` as the function parses it.
 * @throws OpsError when the stage's orchestrator function or one of its queues does not exist (or cannot be read),
 *   when its configuration does not parse, or when it does not serve `lane`.
 */
export async function stageTargets(options: StageOptions & { readonly lane?: string }): Promise<OpsTarget[]> {
  const { stage, service, region, profile, lane } = options;
  const config = { ...(region === undefined ? {} : { region }), ...(profile === undefined ? {} : { profile }) };
  const lambda = new LambdaClient({ ...config, ...CLIENT_CONFIG.lambda });
  const sqs = new SQSClient({ ...config, ...CLIENT_CONFIG.sqs });
  const where = async () => `region ${await sqs.config.region()}`;
  const names = stageNames(service, stage);
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
    const lanes = lanesOf(environment, lane, `function ${names.orchestratorFunction}`, `stage '${stage}'`);
    const label = `stage '${stage}' in ${await sqs.config.region()}`;
    const targets: OpsTarget[] = [];
    for (const chosen of lanes) {
      const queueUrls = await stageQueueUrls(sqs, stageNames(service, stage, chosen.lane).queues, stage, where);
      const clients = {
        dynamodb: new DynamoDBClient({ ...config, ...CLIENT_CONFIG.dynamodb }),
        sqs: new SQSClient({ ...config, ...CLIENT_CONFIG.sqs }),
      };
      targets.push({
        label,
        ...chosen,
        tableName: names.table,
        queueUrls,
        clients,
        destroy: () => {
          clients.dynamodb.destroy();
          clients.sqs.destroy();
        },
      });
    }
    return targets;
  } finally {
    lambda.destroy();
    sqs.destroy();
  }
}

/** One lane of a deployed stage (see {@link stageTargets}). */
export async function stageTarget(options: StageOptions & { readonly lane: string }): Promise<OpsTarget> {
  const [target] = await stageTargets(options);
  if (target === undefined) throw new OpsError(`stage '${options.stage}' has no lane '${options.lane}'`);
  return target;
}

/**
 * The URL of each of a lane's queues, by its name.
 * @throws OpsError naming a queue that does not exist.
 */
async function stageQueueUrls(
  sqs: SQSClient,
  names: Readonly<Record<QueueName, string>>,
  stage: string,
  where: () => Promise<string>,
): Promise<Record<QueueName, string>> {
  const urls = await Promise.all(
    QUEUE_NAMES.map(async (queue) => {
      try {
        const { QueueUrl } = await sqs.send(new GetQueueUrlCommand({ QueueName: names[queue] }));
        if (QueueUrl === undefined) throw new OpsError(`SQS returned no URL for queue ${names[queue]}`);
        return [queue, QueueUrl] as const;
      } catch (error) {
        if (/QueueDoesNotExist|NonExistentQueue/.test(errorName(error))) {
          throw new OpsError(`queue ${names[queue]} of stage '${stage}' not found in ${await where()}`, {
            cause: error,
          });
        }
        throw error;
      }
    }),
  );
  return Object.fromEntries(urls) as Record<QueueName, string>;
}

/**
 * The local stack that `npm start -- --keep` keeps up, from the file it wrote: its endpoints, dummy credentials,
 * table, and the lanes of the orchestrator's environment (`lane` alone, or all of them), each with its queues (those
 * the file names for a one-lane stack, those `QUEUE_URL_PREFIX` names for a stack of several lanes) and its
 * configuration.
 * @throws OpsError when the file is missing or malformed, when its configuration does not parse, or when it does not
 *   serve `lane`.
 */
export function localTargets(file: string, lane?: string): OpsTarget[] {
  let info;
  try {
    info = readStackFile(file);
  } catch (error) {
    if (error instanceof StackFileError) throw new OpsError(error.message, { cause: error });
    throw error;
  }
  const label = `the local stack (${file})`;
  const env = info.functions.orchestrator.environment;
  const where = `${file} (functions.orchestrator.environment)`;
  const lanes = lanesOf(env, lane, where, label);
  const queueUrlsOf = new Map(laneEnvs(env).map((l) => [l.lane, l.inLanes ? queueUrlsFromEnv(l.env) : info.queueUrls]));
  const base = { region: info.region, credentials: info.credentials };
  return lanes.map((chosen) => {
    const clients = {
      dynamodb: new DynamoDBClient({ ...base, endpoint: info.endpoints.dynamodb, ...CLIENT_CONFIG.dynamodb }),
      sqs: new SQSClient({ ...base, endpoint: info.endpoints.sqs, ...CLIENT_CONFIG.sqs }),
    };
    return {
      label,
      ...chosen,
      tableName: info.tableName,
      queueUrls: queueUrlsOf.get(chosen.lane) ?? info.queueUrls,
      clients,
      destroy: () => {
        clients.dynamodb.destroy();
        clients.sqs.destroy();
      },
    };
  });
}

/** The `name` of an SDK error (its code), or `''`. */
function errorName(error: unknown): string {
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' ? name : '';
}
