/**
 * Each function's role in the packaged template grants exactly what its code calls: the actions of the SDK commands
 * its code can send (found in its bundle's source, see ./sdkCommands), on the queues, items, function and parameter
 * its code paths reach (the table GRANTS below, justified by those paths), plus what Lambda itself does with the role.
 * A new SDK call without its permission fails here, and so does a permission without a call.
 */
import { packagedTemplate, packageService, PackagingError, readTemplate } from '../../tools/local/packageService';
import { rm } from 'node:fs/promises';
import type { Template } from '../../tools/local/template';
import { bundledFiles, SdkCommandAnalysis, type SdkCommand } from './sdkCommands';
import { OVERRIDE_ATTRIBUTES } from '../../lib/adapters/dynamodb/overrideItem';
import { TABLE_KEY } from '../../lib/adapters/dynamodb/itemValues';

jest.setTimeout(30_000);

/** Each function: its handler's file, its role and its Lambda function in the template. */
const FUNCTIONS = {
  orchestrator: {
    handler: 'functions/orchestrator.ts',
    role: 'OrchestratorRole',
    lambda: 'OrchestratorLambdaFunction',
  },
  worker: { handler: 'functions/worker.ts', role: 'WorkerRole', lambda: 'WorkerLambdaFunction' },
} as const;
type Fn = keyof typeof FUNCTIONS;

const SOURCES = ['MainQueue', 'BulkQueue', 'FifoQueue', 'RequeueQueue'];
const DEAD_LETTER_QUEUES = [
  'MainDeadLetterQueue',
  'BulkDeadLetterQueue',
  'FifoDeadLetterQueue',
  'RequeueDeadLetterQueue',
];

/** The result destinations the worker is packaged with here: none (serverless.yml's), an SQS queue, an EventBridge bus. */
const RESULT_DESTINATIONS = {
  none: undefined,
  sqs: { type: 'sqs', queueArn: 'arn:aws:sqs:us-east-1:123456789012:results' },
  eventbridge: { type: 'eventbridge', busName: 'results-bus' },
} as const;
type Destination = keyof typeof RESULT_DESTINATIONS;

/**
 * One grant: `actions` on each of `on`. A target is a resource's logical id, `item <partition key>` for items of the
 * state table (`{lane}` stands for the function's LANE), `parameter <name>`, `arn <ARN>` or `bus <name>` (of the
 * stack's account and region). `by: 'lambda'` marks what Lambda does with the role rather than the function's code.
 * `results` marks a grant the role has only when serverless.yml sets that result destination.
 */
interface Grant {
  readonly actions: readonly string[];
  readonly on: readonly string[];
  readonly by?: 'lambda';
  readonly results?: Exclude<Destination, 'none'>;
}

/** What each role may do, and where: each line says which code paths need it. */
const GRANTS: Record<Fn, readonly Grant[]> = {
  orchestrator: [
    // DynamoLeaseStore acquires, renews and releases the lease with UpdateItem; DynamoLedgerStore reads the ledger
    // (GetItem, and reads the fence back when a save is refused) and saves it with the ids it folded (UpdateItem), reads
    // and writes (fenced) the call slots' item, and reads the settlement shards and removes what a save folded
    // (UpdateItem). It never puts an item whole.
    {
      actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
      on: ['item lane#{lane}', 'item slots#{lane}', 'item settle#{lane}#*'],
    },
    // RunLimits.learn reads what the workers recorded of the API's limits (DynamoLimitStore.loadObservations).
    { actions: ['dynamodb:GetItem'], on: ['item limits#{lane}'] },
    // DynamoCircuitStore: runOrchestrator and CircuitWatch load the circuit; CircuitWatch writes it (a versioned
    // UpdateItem through applyCircuitEvent, which reads a refused write's id back) when it sends a health check. No
    // idempotency item: the worker keeps those.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item circuit#{lane}'] },
    // Intake.next receives from READ_ORDER (requeue ▸ fifo ▸ main) only, never from a DLQ; Intake.release hands
    // buffered messages, all received from those, back with visibility 0; deadLetter deletes the original after
    // sending it to its DLQ (Intake.deadLetterHead).
    {
      actions: ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'],
      on: SOURCES,
    },
    // deadLetter sends to deadLetterQueueOf(source); the orchestrator never requeues (retryLater is the worker's).
    { actions: ['sqs:SendMessage'], on: DEAD_LETTER_QUEUES },
    // LambdaInvoker: the Dispatcher's jobs and CircuitWatch's health checks, to WORKER_FUNCTION_NAME.
    { actions: ['lambda:InvokeFunction'], on: ['WorkerLambdaFunction'] },
  ],
  worker: [
    // DynamoSettlementRecorder.addSettlements writes into a settlement shard's map (UpdateItem), and nothing else.
    { actions: ['dynamodb:UpdateItem'], on: ['item settle#{lane}#*'] },
    // applyCircuitEvent from reportToCircuit (successes, failures, 429s, 4xx refusals) and processHealthCheck (the
    // probe's claim and verdict): load, then a versioned UpdateItem, reading a refused write's id back.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item circuit#{lane}'] },
    // reportLimits records the API's limit readings and unexplained 429s (DynamoLimitStore: conditional UpdateItems).
    { actions: ['dynamodb:UpdateItem'], on: ['item limits#{lane}'] },
    // DynamoIdempotencyStore: putIdempotencyIfAbsent claims with a conditional UpdateItem and reads a refusing record
    // back (GetItem); putIdempotency records the outcome (UpdateItem, keeping the dispatch marks); claimRefund marks a
    // refund with a conditional UpdateItem and reads its mark back. The key is the producer's, so any `idem#` item.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item idem#*'] },
    // recordBatchSuccesses writes a batch's successes (UpdateItem); batchSuccess reads them (GetItem). The batch id
    // is a dispatch id, so any `batch#` item.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item batch#*'] },
    // processJob deletes its message (event.queue, a source queue) on a duplicate and on success; deadLetter and
    // retryLater delete the original after sending its copy. It never receives.
    { actions: ['sqs:DeleteMessage'], on: SOURCES },
    // retryLater keeps a FIFO message in flight in its own queue, pushing its visibility out by the delay.
    { actions: ['sqs:ChangeMessageVisibility'], on: ['FifoQueue'] },
    // retryLater sends any other message to the requeue queue; deadLetter sends to the source's DLQ. It never sends
    // to main or fifo (producers do).
    { actions: ['sqs:SendMessage'], on: ['RequeueQueue', ...DEAD_LETTER_QUEUES] },
    // bearerFromParameter reads the API key parameter (a SecureString under aws/ssm, whose key policy lets SSM decrypt
    // for any principal of the account, so no kms:Decrypt is needed).
    { actions: ['ssm:GetParameter'], on: ['parameter /quota-orchestrator/dev/api-key'] },
    // serverless.yml's destinations.onFailure: Lambda sends a crashed invocation's record with the worker's role.
    { actions: ['sqs:SendMessage'], on: ['WorkerFailureQueue'], by: 'lambda' },
    // The result handler of custom.quotaOrchestrator.results (the plugin adds the statement): SqsResultDestination
    // asks the queue's URL once and sends to it (SendMessageBatch); EventBridgeResultDestination puts events on the bus.
    {
      actions: ['sqs:GetQueueUrl', 'sqs:SendMessage'],
      on: [`arn ${RESULT_DESTINATIONS.sqs.queueArn}`],
      results: 'sqs',
    },
    { actions: ['events:PutEvents'], on: [`bus ${RESULT_DESTINATIONS.eventbridge.busName}`], results: 'eventbridge' },
  ],
};

interface Statement {
  readonly Sid?: string;
  readonly Effect: string;
  readonly Action: string | string[];
  readonly Resource: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
}

/** The SDK commands of a function: every one its bundle's files construct, and those its handler can reach. */
interface Commands {
  readonly bundled: SdkCommand[];
  readonly reachable: SdkCommand[];
}

/** The producer client that producers import (the package's entry), whose requests the producer policy grants. */
const PRODUCER = 'lib/producer/index.ts';

/** The operator CLI (`npm run ops`), whose sends the operator policy grants. */
const OPERATOR_CLI = 'tools/cli/ops.ts';

/**
 * What the operator policy grants, and where (targets as in {@link Grant}, `{lane}` being the orchestrator's LANE,
 * the lane the CLI checks it serves): each line says which commands of the CLI need it.
 */
const OPERATOR_GRANTS: readonly Grant[] = [
  // stageTarget (every command on a deployed stage) reads the lane's configuration from the orchestrator's environment.
  { actions: ['lambda:GetFunctionConfiguration'], on: ['OrchestratorLambdaFunction'] },
  // stageTarget asks each of the six queues' URL by its name; status reads each one's depth (queueDepths), and
  // receiveDeadLetters (dlq list|show|redrive) a dead-letter queue's before receiving from it.
  { actions: ['sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], on: [...SOURCES, ...DEAD_LETTER_QUEUES] },
  // receiveDeadLetters receives from the dead-letter queues only; peekDeadLetters and workOnDeadLetters make the
  // letters they leave visible again (changeVisibility 0) there; redrive deletes each letter once it is sent back,
  // deleteDeadLetters the letters it chose, and purgeDeadLetters empties whole dead-letter queues (PurgeQueue).
  {
    actions: ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:PurgeQueue'],
    on: DEAD_LETTER_QUEUES,
  },
  // redrive sends each letter to its source queue (requeue-dlq's to the requeue queue); enqueue sends to main or fifo
  // (enqueueMany: SendMessageBatch).
  { actions: ['sqs:SendMessage'], on: SOURCES },
  // status: readLaneStatus reads the ledger (DynamoLedgerStore.loadLedger: the lane item and the call slots' item), the
  // lease (DynamoLeaseStore.readLease) and the limits override (loadOverride), and writes neither.
  { actions: ['dynamodb:GetItem'], on: ['item lane#{lane}', 'item slots#{lane}'] },
  // limits set|reset: DynamoLimitStore.replaceOverride, a conditional UpdateItem of the lane item's override alone
  // (see the attribute condition checked below).
  { actions: ['dynamodb:UpdateItem'], on: ['item lane#{lane}'] },
  // status loads the circuit; pause, resume and circuit open|close write it through applyCircuitEvent (a versioned
  // UpdateItem, reading a refused write's id back).
  { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item circuit#{lane}'] },
  // dlq redrive: DynamoIdempotencyStore.reopenDeadLettered on the letter's key (a conditional UpdateItem, and GetItem
  // when it is refused). The key is the producer's, so any `idem#` item.
  { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item idem#*'] },
  // job: readJobRecord reads whether a batch claim's batch recorded the job (batchSuccess, GetItem). The
  // batch id is a dispatch id, so any `batch#` item.
  { actions: ['dynamodb:GetItem'], on: ['item batch#*'] },
];

let template: Template;
/** The template packaged with each result destination; `none` is {@link template}. */
let templates: Record<Destination, Template>;
let analysis: Record<Fn, Commands>;
/** Every SDK command the producer client's bundle constructs: a library has no handler, all of it may run. */
let producerCommands: SdkCommand[];
/** Every SDK command the operator CLI's bundle constructs: each command of the CLI runs its own part of it. */
let operatorCommands: SdkCommand[];

beforeAll(async () => {
  const commands = async (): Promise<[Record<Fn, Commands>, SdkCommand[], SdkCommand[]]> => {
    const program = new SdkCommandAnalysis([
      ...Object.values(FUNCTIONS).map((fn) => fn.handler),
      PRODUCER,
      OPERATOR_CLI,
    ]);
    const of = async (handler: string): Promise<Commands> => {
      const files = await bundledFiles(handler);
      return { bundled: program.constructedIn(files), reachable: program.reachableFrom(handler, files) };
    };
    return [
      { orchestrator: await of(FUNCTIONS.orchestrator.handler), worker: await of(FUNCTIONS.worker.handler) },
      program.constructedIn(await bundledFiles(PRODUCER)),
      program.constructedIn(await bundledFiles(OPERATOR_CLI)),
    ];
  };
  const withResults = async (destination: Exclude<Destination, 'none'>): Promise<Template> => {
    const run = await packageService((config) => {
      (config.custom as { quotaOrchestrator: Record<string, unknown> }).quotaOrchestrator.results =
        RESULT_DESTINATIONS[destination];
    });
    try {
      if (run.code !== 0)
        throw new PackagingError(`osls package with ${destination} results failed (exit ${run.code}):\n${run.output}`);
      return await readTemplate(run);
    } finally {
      await rm(run.dir, { recursive: true, force: true });
    }
  };
  // Packaging (child processes) and the analysis run side by side.
  let sqs: Template;
  let eventbridge: Template;
  [template, sqs, eventbridge, [analysis, producerCommands, operatorCommands]] = await Promise.all([
    packagedTemplate(),
    withResults('sqs'),
    withResults('eventbridge'),
    commands(),
  ]);
  templates = { none: template, sqs, eventbridge };
}, 120_000);

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();
const isLogs = (action: string) => action.startsWith('logs:');

/** The statements of a role's inline policies. */
function statementsOf(role: string, from: Template = template): Statement[] {
  const policies = (from.Resources[role]?.Properties?.Policies ?? []) as {
    PolicyDocument: { Statement: Statement | Statement[] };
  }[];
  return policies.flatMap((policy) => ([] as Statement[]).concat(policy.PolicyDocument.Statement));
}

/** A statement's resource as a {@link Grant} target: a logical id, or the parameter's name. */
function targetOf(resource: unknown): string {
  if (typeof resource === 'string') return `arn ${resource}`;
  const getAtt = (resource as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
  if (getAtt?.[1] === 'Arn') return getAtt[0];
  const parts = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1];
  if (parts !== undefined && parts.at(-2) === ':parameter') return `parameter ${String(parts.at(-1))}`;
  if (parts !== undefined && parts.at(-2) === ':event-bus/') return `bus ${String(parts.at(-1))}`;
  return JSON.stringify(resource);
}

/** The partition keys a DynamoDB statement is restricted to (a statement without the condition reaches every item). */
function leadingKeysOf(statement: Statement): string[] {
  const keys = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
  return keys === undefined ? ['<every item>'] : ([] as string[]).concat(keys as string | string[]);
}

/** Every `action target` pair a role grants, logs aside; DynamoDB pairs name the items their condition allows. */
function grantedPairs(role: string, from: Template = template): string[] {
  return pairsOf(statementsOf(role, from));
}

/** Every `action target` pair `statements` grant, logs aside; DynamoDB pairs name the items their condition allows. */
function pairsOf(statements: readonly Statement[]): string[] {
  return statements.flatMap((statement) =>
    ([] as string[])
      .concat(statement.Action)
      .filter((action) => !isLogs(action))
      .flatMap((action) =>
        ([] as unknown[]).concat(statement.Resource).flatMap((resource) => {
          const target = targetOf(resource);
          if (!action.startsWith('dynamodb:')) return [`${action} ${target}`];
          return leadingKeysOf(statement).map((key) => `${action} ${target === 'StateTable' ? 'item' : target} ${key}`);
        }),
      ),
  );
}

/** The grants of `fn` the template packaged with `destination` holds. */
function grantsWith(fn: Fn, destination: Destination): Grant[] {
  return GRANTS[fn].filter((grant) => grant.results === undefined || grant.results === destination);
}

/** The pairs the GRANTS table asks for, with `{lane}` replaced by the function's LANE in the template. */
function expectedPairs(fn: Fn, grants: readonly Grant[] = grantsWith(fn, 'none')): string[] {
  const lane = (template.Resources[FUNCTIONS[fn].lambda]?.Properties?.Environment as { Variables: { LANE?: unknown } })
    .Variables.LANE;
  if (typeof lane !== 'string') throw new Error(`${FUNCTIONS[fn].lambda} has no literal LANE`);
  return grants.flatMap((grant) =>
    grant.actions.flatMap((action) => grant.on.map((target) => `${action} ${target.replace('{lane}', lane)}`)),
  );
}

describe.each(Object.keys(FUNCTIONS) as Fn[])('the role of the %s', (fn) => {
  const { role } = FUNCTIONS[fn];
  const codeActions = () => sorted(analysis[fn].reachable.map((command) => command.action));

  it("grants exactly the actions of the SDK commands its code can send, and of what Lambda does with it (logs aside), but a result destination's send without one", () => {
    const lambdaActions = GRANTS[fn].filter((grant) => grant.by === 'lambda').flatMap((grant) => grant.actions);
    const granted = statementsOf(role)
      .flatMap((statement) => ([] as string[]).concat(statement.Action))
      .filter((action) => !isLogs(action));
    const unset = new Set(
      GRANTS[fn]
        .filter((grant) => grant.results !== undefined)
        .flatMap((grant) => grant.actions)
        .filter((action) => !grantsWith(fn, 'none').some((grant) => grant.actions.includes(action))),
    );
    expect(sorted(granted)).toEqual(
      sorted([...codeActions().filter((action) => !unset.has(action)), ...lambdaActions]),
    );
  });

  it('grants each action on exactly the queues, items, function or parameter its code paths reach (see GRANTS)', () => {
    expect(sorted(grantedPairs(role))).toEqual(sorted(expectedPairs(fn)));
    // Each pair is granted once: no statement repeats another's.
    expect(grantedPairs(role)).toHaveLength(new Set(grantedPairs(role)).size);
  });

  it("has a GRANTS table whose code actions are those of the function's SDK commands", () => {
    expect(sorted(GRANTS[fn].filter((grant) => grant.by === undefined).flatMap((grant) => grant.actions))).toEqual(
      codeActions(),
    );
  });

  it("reaches the table's items only through their partition keys, in statements of plain Allow", () => {
    expectItemsByLeadingKeys(statementsOf(role));
  });
});

/** Expects `statements` to be plain Allow statements, each DynamoDB one on the state table's items by their partition keys only. */
/** The operator's write of the limits override: its condition names the only attributes it may write. */
const OVERRIDE_WRITE = 'LimitsOverride';

function expectItemsByLeadingKeys(statements: readonly Statement[]): void {
  for (const statement of statements.filter((s) => s.Sid !== OVERRIDE_WRITE)) {
    expect(
      Object.keys(statement).filter((key) => !['Sid', 'Effect', 'Action', 'Resource', 'Condition'].includes(key)),
    ).toEqual([]);
    expect(statement.Effect).toBe('Allow');
    const dynamodb = ([] as string[]).concat(statement.Action).some((action) => action.startsWith('dynamodb:'));
    if (!dynamodb) {
      expect(statement.Condition).toBeUndefined();
      continue;
    }
    expect(statement.Resource).toEqual({ 'Fn::GetAtt': ['StateTable', 'Arn'] });
    expect(Object.keys(statement.Condition ?? {})).toEqual(['ForAllValues:StringLike']);
    expect(Object.keys(statement.Condition!['ForAllValues:StringLike']!)).toEqual(['dynamodb:LeadingKeys']);
  }
}

describe('the role of the worker with a result destination', () => {
  it.each(['sqs', 'eventbridge'] as const)(
    'grants the send to a %s destination, and only that beside what it grants without one',
    (destination) => {
      const pairs = grantedPairs('WorkerRole', templates[destination]);
      expect(sorted(pairs)).toEqual(sorted(expectedPairs('worker', grantsWith('worker', destination))));
      expect(pairs).toHaveLength(new Set(pairs).size);
    },
  );

  it('hands the worker its destination through RESULT_DESTINATION, as written', () => {
    const env = (from: Template) =>
      (from.Resources.WorkerLambdaFunction?.Properties?.Environment as { Variables: Record<string, unknown> })
        .Variables;
    expect(env(templates.none)).not.toHaveProperty('RESULT_DESTINATION');
    expect(JSON.parse(env(templates.eventbridge).RESULT_DESTINATION as string)).toEqual(
      RESULT_DESTINATIONS.eventbridge,
    );
  });
});

describe('the SDK commands found', () => {
  it('are those the handler can reach, not every one its bundle holds: the worker bundles SqsQueues.receive but never receives', () => {
    const actions = (commands: SdkCommand[]) => sorted(commands.map((command) => command.action));
    expect(actions(analysis.worker.bundled)).toContain('sqs:ReceiveMessage');
    expect(actions(analysis.worker.reachable)).not.toContain('sqs:ReceiveMessage');
    for (const fn of Object.keys(FUNCTIONS) as Fn[])
      expect(actions(analysis[fn].bundled)).toEqual(expect.arrayContaining(actions(analysis[fn].reachable)));
  });

  it('follow calls through the ports to the adapters that send them', () => {
    // processJob and queueOutcomes call the QueueReceiver and store ports, never the SDK: their sends and writes
    // are found in the adapters the worker's wiring puts behind those ports.
    const where = sorted(analysis.worker.reachable.map((command) => `${command.file} ${command.command}`));
    expect(where).toEqual(
      expect.arrayContaining([
        'lib/adapters/sqs/SqsQueues.ts SendMessageCommand',
        'lib/adapters/dynamodb/DynamoTable.ts UpdateCommand',
      ]),
    );
    expect(analysis.worker.reachable.filter((command) => command.file.startsWith('lib/services/'))).toEqual([]);
  });
});

describe('the producer policy', () => {
  const document = () =>
    (template.Resources.ProducerPolicy?.Properties?.PolicyDocument ?? { Statement: [] }) as {
      Statement: Statement | Statement[];
    };
  const producerStatements = () => ([] as Statement[]).concat(document().Statement);

  it('is a managed policy whose ARN is a stack output', () => {
    expect(template.Resources.ProducerPolicy?.Type).toBe('AWS::IAM::ManagedPolicy');
    expect(template.Outputs?.ProducerPolicyArn?.Value).toEqual({ Ref: 'ProducerPolicy' });
  });

  it('grants exactly the actions of the SDK commands the producer client sends (SendMessageBatch is sqs:SendMessage)', () => {
    const granted = producerStatements().flatMap((statement) => ([] as string[]).concat(statement.Action));
    expect(sorted(producerCommands.map((command) => command.action))).toEqual(['dynamodb:GetItem', 'sqs:SendMessage']);
    expect(sorted(granted)).toEqual(sorted(producerCommands.map((command) => command.action)));
  });

  it('sends to the main, bulk and FIFO queues only, never the requeue queue nor a dead-letter queue, and reads job records', () => {
    expect(sorted(pairsOf(producerStatements()))).toEqual([
      'dynamodb:GetItem item batch#*',
      'dynamodb:GetItem item idem#*',
      'sqs:SendMessage BulkQueue',
      'sqs:SendMessage FifoQueue',
      'sqs:SendMessage MainQueue',
    ]);
    for (const statement of producerStatements()) expect(statement.Effect).toBe('Allow');
    expectItemsByLeadingKeys(producerStatements());
  });
});

describe('the operator policy', () => {
  const operatorStatements = () =>
    ([] as Statement[]).concat(
      (
        (template.Resources.OperatorPolicy?.Properties?.PolicyDocument ?? { Statement: [] }) as {
          Statement: Statement | Statement[];
        }
      ).Statement,
    );
  const cliActions = () => sorted(operatorCommands.map((command) => command.action));

  it('is a managed policy whose ARN is a stack output', () => {
    expect(template.Resources.OperatorPolicy?.Type).toBe('AWS::IAM::ManagedPolicy');
    expect(template.Outputs?.OperatorPolicyArn?.Value).toEqual({ Ref: 'OperatorPolicy' });
  });

  it("grants exactly the actions of the SDK commands the operator CLI's bundle constructs", () => {
    const granted = operatorStatements().flatMap((statement) => ([] as string[]).concat(statement.Action));
    expect(cliActions()).toEqual(
      expect.arrayContaining(['lambda:GetFunctionConfiguration', 'sqs:ReceiveMessage', 'dynamodb:UpdateItem']),
    );
    expect(sorted(granted)).toEqual(cliActions());
  });

  it("has an OPERATOR_GRANTS table whose actions are those of the CLI's SDK commands", () => {
    expect(sorted(OPERATOR_GRANTS.flatMap((grant) => grant.actions))).toEqual(cliActions());
  });

  it("grants each action on exactly the queues, items and function the CLI's commands reach (see OPERATOR_GRANTS), each once", () => {
    const pairs = pairsOf(operatorStatements());
    expect(sorted(pairs)).toEqual(sorted(expectedPairs('orchestrator', OPERATOR_GRANTS)));
    expect(pairs).toHaveLength(new Set(pairs).size);
  });

  it("reaches the table's items only through their partition keys, in statements of plain Allow", () => {
    expectItemsByLeadingKeys(operatorStatements());
  });

  it("writes the lane item's limits override and nothing else of it, asking no value back", () => {
    const write = operatorStatements().find((statement) => statement.Sid === OVERRIDE_WRITE);
    expect(write).toMatchObject({ Effect: 'Allow', Action: 'dynamodb:UpdateItem' });
    const [laneItem] = expectedPairs('orchestrator', [{ actions: [''], on: ['lane#{lane}'] }]);
    expect(write?.Condition).toEqual({
      'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [laneItem?.trim()] },
      'ForAllValues:StringEquals': { 'dynamodb:Attributes': [TABLE_KEY, ...OVERRIDE_ATTRIBUTES] },
      StringEqualsIfExists: { 'dynamodb:ReturnValues': 'NONE' },
    });
  });
});
