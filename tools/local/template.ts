import { CreateTableCommand, type CreateTableCommandInput, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createQueue, queueArn } from './laneQueues';

/** One resource of a {@link Template}: its type, properties and dependencies, and any other resource attribute. */
export type TemplateResource = {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DependsOn?: string | string[];
} & Readonly<Record<string, unknown>>;

/** A CloudFormation template as `osls package` writes it (JSON). */
export interface Template {
  readonly Resources: Readonly<Record<string, TemplateResource>>;
  readonly Outputs?: Readonly<Record<string, { readonly Value: unknown }>>;
}

/** Attributes of a created resource, as `Ref` and `Fn::GetAtt` see them. */
interface Physical {
  readonly ref: string;
  readonly attributes: Readonly<Record<string, string>>;
}

/** The local stand-in for AWS's pseudo parameters; fauxqs keeps its queues in account 000000000000. */
export const LOCAL_ACCOUNT = { region: 'us-east-1', accountId: '000000000000', partition: 'aws' } as const;

/** The ARN of a function in the local account. */
export function localFunctionArn(name: string): string {
  return `arn:${LOCAL_ACCOUNT.partition}:lambda:${LOCAL_ACCOUNT.region}:${LOCAL_ACCOUNT.accountId}:function:${name}`;
}

/**
 * Resolves CloudFormation intrinsics (`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join`, `Fn::Select`, `Fn::Split`) against the resources created
 * locally. Lambda functions resolve to their `FunctionName`, so environments that name them work as deployed.
 */
export class LocalStack {
  private readonly physical = new Map<string, Physical>();

  constructor(readonly template: Template) {}

  /** Records a resource created (or stood in for) locally. */
  define(logicalId: string, physical: Physical): void {
    this.physical.set(logicalId, physical);
  }

  /**
   * The value of a template expression.
   * @throws Error naming an intrinsic or a resource this local stack cannot resolve.
   */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((item) => this.resolve(item));
    if (typeof value !== 'object' || value === null) return value;
    const entries = Object.entries(value);
    const [key, argument] = entries[0] ?? [];
    if (entries.length === 1 && key === 'Ref') return this.ref(String(argument));
    if (entries.length === 1 && key === 'Fn::GetAtt') {
      const [id, attribute] = Array.isArray(argument) ? argument.map(String) : String(argument).split('.');
      return this.getAtt(id ?? '', attribute ?? '');
    }
    if (entries.length === 1 && key === 'Fn::Join') {
      const [separator, parts] = argument as [string, unknown[]];
      return (this.resolve(parts) as unknown[]).join(separator);
    }
    if (entries.length === 1 && key === 'Fn::Select') {
      const [index, list] = argument as [unknown, unknown];
      return (this.resolve(list) as unknown[])[Number(this.resolve(index))];
    }
    if (entries.length === 1 && key === 'Fn::Split') {
      const [separator, text] = argument as [string, unknown];
      return String(this.resolve(text)).split(separator);
    }
    if (entries.length === 1 && key === 'Fn::Sub') {
      const text = Array.isArray(argument) ? String(argument[0]) : String(argument);
      return text.replace(/\$\{([^}]+)\}/g, (_, name: string) =>
        String(name.includes('.') ? this.getAtt(...(name.split('.') as [string, string])) : this.ref(name)),
      );
    }
    if (key?.startsWith('Fn::') === true) throw new Error(`the local run cannot resolve ${key}`);
    return Object.fromEntries(entries.map(([k, v]) => [k, this.resolve(v)]));
  }

  /** The physical id of a created resource. */
  ref(id: string): string {
    if (id === 'AWS::Region') return LOCAL_ACCOUNT.region;
    if (id === 'AWS::AccountId') return LOCAL_ACCOUNT.accountId;
    if (id === 'AWS::Partition') return LOCAL_ACCOUNT.partition;
    const physical = this.physical.get(id);
    if (physical === undefined) throw new Error(`the local run has no resource '${id}' to resolve`);
    return physical.ref;
  }

  private getAtt(id: string, attribute: string): string {
    const value = this.physical.get(id)?.attributes[attribute];
    if (value === undefined) throw new Error(`the local run cannot resolve Fn::GetAtt ${id}.${attribute}`);
    return value;
  }

  /**
   * The URL of a created queue, from its ARN.
   * @throws Error when no queue of this stack has that ARN.
   */
  queueUrlOfArn(arn: string): string {
    const physical = [...this.physical.values()].find(
      (p) => p.attributes.Arn === arn && p.attributes.QueueUrl !== undefined,
    );
    if (physical === undefined) throw new Error(`the local run has no queue with ARN ${arn}`);
    return physical.ref;
  }

  /** Logical ids of the template's resources of one type. */
  idsOf(type: string): string[] {
    return Object.entries(this.template.Resources)
      .filter(([, resource]) => resource.Type === type)
      .map(([id]) => id);
  }

  /**
   * A resource's properties with every intrinsic resolved; only `keys` when given, so that properties the local
   * run does not use (a function's code bucket, its role) need not resolve.
   */
  properties(id: string, keys?: readonly string[]): Record<string, unknown> {
    const all = this.template.Resources[id]?.Properties ?? {};
    const picked =
      keys === undefined ? all : Object.fromEntries(Object.entries(all).filter(([key]) => keys.includes(key)));
    return this.resolve(picked) as Record<string, unknown>;
  }
}

/** Queue attributes CloudFormation takes as properties and CreateQueue takes as attributes (as strings). */
const QUEUE_ATTRIBUTES = [
  'DelaySeconds',
  'MaximumMessageSize',
  'MessageRetentionPeriod',
  'ReceiveMessageWaitTimeSeconds',
  'VisibilityTimeout',
  'FifoQueue',
  'ContentBasedDeduplication',
];

/**
 * Creates the template's DynamoDB tables and SQS queues on the emulators, from the same definitions the deployment
 * uses, and records Lambda functions by name. Queues are created dead-letter queues first, so redrive policies resolve.
 */
export async function provisionStack(
  template: Template,
  clients: { readonly dynamodb: DynamoDBClient; readonly sqs: SQSClient },
): Promise<LocalStack> {
  const stack = new LocalStack(template);
  for (const id of stack.idsOf('AWS::Lambda::Function')) {
    const name = String(template.Resources[id]?.Properties?.FunctionName);
    stack.define(id, { ref: name, attributes: { Arn: localFunctionArn(name) } });
  }
  for (const id of stack.idsOf('AWS::DynamoDB::Table')) {
    const p = stack.properties(id);
    const input = {
      TableName: p.TableName,
      KeySchema: p.KeySchema,
      AttributeDefinitions: p.AttributeDefinitions,
      BillingMode: p.BillingMode ?? 'PAY_PER_REQUEST',
      ...(p.ProvisionedThroughput === undefined ? {} : { ProvisionedThroughput: p.ProvisionedThroughput }),
    } as CreateTableCommandInput;
    const created = await clients.dynamodb.send(new CreateTableCommand(input));
    stack.define(id, { ref: String(p.TableName), attributes: { Arn: created.TableDescription?.TableArn ?? '' } });
  }
  const queues = stack.idsOf('AWS::SQS::Queue');
  const withRedriveLast = [...queues].sort((a, b) => Number(hasRedrive(template, a)) - Number(hasRedrive(template, b)));
  for (const id of withRedriveLast) {
    const p = stack.properties(id);
    const attributes: Record<string, string> = {};
    for (const name of QUEUE_ATTRIBUTES) if (p[name] !== undefined) attributes[name] = String(p[name]);
    if (p.RedrivePolicy !== undefined) attributes.RedrivePolicy = JSON.stringify(p.RedrivePolicy);
    const queueUrl = await createQueue(clients.sqs, String(p.QueueName), attributes);
    stack.define(id, {
      ref: queueUrl,
      attributes: { Arn: await queueArn(clients.sqs, queueUrl), QueueName: String(p.QueueName), QueueUrl: queueUrl },
    });
  }
  return stack;
}

function hasRedrive(template: Template, id: string): boolean {
  return template.Resources[id]?.Properties?.RedrivePolicy !== undefined;
}

/** What the local stack needs of one `AWS::Lambda::Function` and its `AWS::Lambda::EventInvokeConfig`. */
export interface FunctionDefinition {
  readonly name: string;
  readonly handler: string;
  readonly timeoutMs: number;
  readonly reservedConcurrency?: number;
  readonly maximumRetryAttempts: number;
  readonly onFailureQueueUrl?: string;
  readonly environment: Readonly<Record<string, string>>;
}

/** The scheduled rule: which function it starts, and how often. */
export interface Schedule {
  readonly functionName: string;
  readonly periodMs: number;
}

/** The packaged service's two functions, with their environments resolved against the local resources, and its schedule. */
export interface PackagedFunctions {
  readonly orchestrator: FunctionDefinition;
  readonly worker: FunctionDefinition;
  readonly schedule: Schedule;
}

/** Handlers as serverless.yml names them. */
const WORKER_HANDLER = 'functions/worker.handler';
const ORCHESTRATOR_HANDLER = 'functions/orchestrator.handler';

/**
 * The orchestrator, the worker and the schedule of a provisioned stack.
 * @throws Error when the template lacks one of them.
 */
export function packagedFunctions(stack: LocalStack): PackagedFunctions {
  const functions = functionsOf(stack);
  return {
    orchestrator: functionWith(functions, ORCHESTRATOR_HANDLER),
    worker: functionWith(functions, WORKER_HANDLER),
    schedule: scheduleOf(stack),
  };
}

/** The template's functions, with their environments resolved against the local resources. */
function functionsOf(stack: LocalStack): FunctionDefinition[] {
  const invokeConfigs = stack
    .idsOf('AWS::Lambda::EventInvokeConfig')
    .map((id) => stack.properties(id, ['FunctionName', 'MaximumRetryAttempts', 'DestinationConfig']));
  return stack.idsOf('AWS::Lambda::Function').map((id) => {
    const p = stack.properties(id, [
      'FunctionName',
      'Handler',
      'Timeout',
      'ReservedConcurrentExecutions',
      'Environment',
    ]);
    const name = String(p.FunctionName);
    const invokeConfig = invokeConfigs.find((c) => c.FunctionName === name);
    const onFailure = (invokeConfig?.DestinationConfig as { OnFailure?: { Destination?: string } } | undefined)
      ?.OnFailure?.Destination;
    const reserved = p.ReservedConcurrentExecutions;
    return {
      name,
      handler: String(p.Handler),
      timeoutMs: Number(p.Timeout ?? 6) * 1000,
      ...(reserved === undefined ? {} : { reservedConcurrency: Number(reserved) }),
      // Lambda's default for asynchronous invocations is two retries.
      maximumRetryAttempts: Number(invokeConfig?.MaximumRetryAttempts ?? 2),
      ...(onFailure === undefined ? {} : { onFailureQueueUrl: stack.queueUrlOfArn(onFailure) }),
      environment: ((p.Environment as { Variables?: Record<string, string> } | undefined)?.Variables ?? {}) as Record<
        string,
        string
      >,
    };
  });
}

/**
 * The function with a given handler.
 * @throws Error when the template has none.
 */
function functionWith(functions: readonly FunctionDefinition[], handler: string): FunctionDefinition {
  const found = functions.find((fn) => fn.handler === handler);
  if (found === undefined) throw new Error(`the packaged template has no function with handler ${handler}`);
  return found;
}

/** The scheduled rule of `rate(N minute[s])`. */
function scheduleOf(stack: LocalStack): Schedule {
  for (const id of stack.idsOf('AWS::Events::Rule')) {
    const p = stack.properties(id, ['ScheduleExpression', 'Targets']);
    const rate = /^rate\((\d+) minutes?\)$/.exec(String(p.ScheduleExpression));
    const target = (p.Targets as { Arn?: string }[] | undefined)?.[0]?.Arn;
    if (rate?.[1] !== undefined && target !== undefined)
      return { functionName: target.split(':').pop() ?? target, periodMs: Number(rate[1]) * 60_000 };
  }
  throw new Error('the packaged template has no rate(N minutes) schedule rule targeting a function');
}
