/**
 * Each function's role in the packaged template grants exactly what its code calls: the actions of the SDK commands
 * its code can send (found in its bundle's source, see ./sdkCommands), on the queues, items, function and parameter
 * its code paths reach (the table GRANTS below, justified by those paths), plus what Lambda itself does with the role.
 * A new SDK call without its permission fails here, and so does a permission without a call.
 */
import { packagedTemplate } from '../../tools/local/packageService';
import type { Template } from '../../tools/local/template';
import { bundledFiles, SdkCommandAnalysis, type SdkCommand } from './sdkCommands';

jest.setTimeout(30_000);

/** Each function: its handler's file, its role and its Lambda function in the template. */
const FUNCTIONS = {
  orchestrator: { handler: 'functions/orchestrator.ts', role: 'OrchestratorRole', lambda: 'OrchestratorLambdaFunction' },
  worker: { handler: 'functions/worker.ts', role: 'WorkerRole', lambda: 'WorkerLambdaFunction' },
} as const;
type Fn = keyof typeof FUNCTIONS;

const SOURCES = ['MainQueue', 'FifoQueue', 'RequeueQueue'];
const DEAD_LETTER_QUEUES = ['MainDeadLetterQueue', 'FifoDeadLetterQueue', 'RequeueDeadLetterQueue'];

/**
 * One grant: `actions` on each of `on`. A target is a resource's logical id, `item <partition key>` for items of the
 * state table (`{lane}` stands for the function's LANE), or `parameter <name>`. `by: 'lambda'` marks what Lambda does
 * with the role rather than the function's code.
 */
interface Grant {
  readonly actions: readonly string[];
  readonly on: readonly string[];
  readonly by?: 'lambda';
}

/** What each role may do, and where: each line says which code paths need it. */
const GRANTS: Record<Fn, readonly Grant[]> = {
  orchestrator: [
    // DynamoLeaseStore acquires, renews and releases the lease with UpdateItem; DynamoLedgerStore reads the ledger and
    // the pending settlements (GetItem, and reads the fence back when a save is refused) and saves the ledger while
    // removing the settlements it folded (UpdateItem). All in the lane item; it never puts that item whole.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item lane#{lane}'] },
    // DynamoCircuitStore: runOrchestrator and CircuitWatch load the circuit; CircuitWatch writes it (a versioned
    // UpdateItem through applyCircuitEvent, which reads a refused write's id back) when it sends a health check. No
    // idempotency item: the worker keeps those.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item circuit#{lane}'] },
    // Intake.next receives from READ_ORDER (requeue ▸ fifo ▸ main) only, never from a DLQ; Intake.release hands
    // buffered messages, all received from those, back with visibility 0; deadLetter deletes the original after
    // sending it to its DLQ (Intake.deadLetterHead).
    { actions: ['sqs:ReceiveMessage', 'sqs:ChangeMessageVisibility', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], on: SOURCES },
    // deadLetter sends to deadLetterQueueOf(source); the orchestrator never requeues (retryLater is the worker's).
    { actions: ['sqs:SendMessage'], on: DEAD_LETTER_QUEUES },
    // LambdaInvoker: the Dispatcher's jobs and CircuitWatch's health checks, to WORKER_FUNCTION_NAME.
    { actions: ['lambda:InvokeFunction'], on: ['WorkerLambdaFunction'] },
  ],
  worker: [
    // DynamoSettlementRecorder.addSettlements appends to the lane item's settlements (UpdateItem), and nothing else.
    { actions: ['dynamodb:UpdateItem'], on: ['item lane#{lane}'] },
    // applyCircuitEvent from reportToCircuit (successes, failures, 429s, 4xx refusals) and processHealthCheck (the
    // probe's claim and verdict): load, then a versioned UpdateItem, reading a refused write's id back.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item circuit#{lane}'] },
    // DynamoIdempotencyStore: putIdempotencyIfAbsent claims with a conditional UpdateItem and reads a refusing record
    // back (GetItem); putIdempotency records the outcome (UpdateItem, keeping the dispatch marks); claimRefund marks a
    // refund with a conditional UpdateItem and reads its mark back. The key is the producer's, so any `idem#` item.
    { actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'], on: ['item idem#*'] },
    // recordBatchSuccesses writes a batch's successes (UpdateItem); batchSuccessAt reads them (GetItem). The batch id
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

let template: Template;
let analysis: Record<Fn, Commands>;

beforeAll(async () => {
  const commands = async (): Promise<Record<Fn, Commands>> => {
    const program = new SdkCommandAnalysis(Object.values(FUNCTIONS).map((fn) => fn.handler));
    const of = async (handler: string): Promise<Commands> => {
      const files = await bundledFiles(handler);
      return { bundled: program.constructedIn(files), reachable: program.reachableFrom(handler, files) };
    };
    return { orchestrator: await of(FUNCTIONS.orchestrator.handler), worker: await of(FUNCTIONS.worker.handler) };
  };
  // Packaging (a child process) and the analysis run side by side.
  [template, analysis] = await Promise.all([packagedTemplate(), commands()]);
}, 120_000);

const sorted = (values: Iterable<string>) => [...new Set(values)].sort();
const isLogs = (action: string) => action.startsWith('logs:');

/** The statements of a role's inline policies. */
function statementsOf(role: string): Statement[] {
  const policies = (template.Resources[role]?.Properties?.Policies ?? []) as { PolicyDocument: { Statement: Statement | Statement[] } }[];
  return policies.flatMap((policy) => ([] as Statement[]).concat(policy.PolicyDocument.Statement));
}

/** A statement's resource as a {@link Grant} target: a logical id, or the parameter's name. */
function targetOf(resource: unknown): string {
  const getAtt = (resource as { 'Fn::GetAtt'?: [string, string] })['Fn::GetAtt'];
  if (getAtt?.[1] === 'Arn') return getAtt[0];
  const parts = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join']?.[1];
  if (parts !== undefined && parts.at(-2) === ':parameter') return `parameter ${String(parts.at(-1))}`;
  return JSON.stringify(resource);
}

/** The partition keys a DynamoDB statement is restricted to (a statement without the condition reaches every item). */
function leadingKeysOf(statement: Statement): string[] {
  const keys = statement.Condition?.['ForAllValues:StringLike']?.['dynamodb:LeadingKeys'];
  return keys === undefined ? ['<every item>'] : ([] as string[]).concat(keys as string | string[]);
}

/** Every `action target` pair a role grants, logs aside; DynamoDB pairs name the items their condition allows. */
function grantedPairs(role: string): string[] {
  return statementsOf(role).flatMap((statement) =>
    ([] as string[]).concat(statement.Action).filter((action) => !isLogs(action)).flatMap((action) =>
      ([] as unknown[]).concat(statement.Resource).flatMap((resource) => {
        const target = targetOf(resource);
        if (!action.startsWith('dynamodb:')) return [`${action} ${target}`];
        return leadingKeysOf(statement).map((key) => `${action} ${target === 'StateTable' ? 'item' : target} ${key}`);
      }),
    ),
  );
}

/** The pairs the GRANTS table asks for, with `{lane}` replaced by the function's LANE in the template. */
function expectedPairs(fn: Fn, grants: readonly Grant[] = GRANTS[fn]): string[] {
  const lane = (template.Resources[FUNCTIONS[fn].lambda]?.Properties?.Environment as { Variables: { LANE?: unknown } }).Variables.LANE;
  if (typeof lane !== 'string') throw new Error(`${FUNCTIONS[fn].lambda} has no literal LANE`);
  return grants.flatMap((grant) => grant.actions.flatMap((action) => grant.on.map((target) => `${action} ${target.replace('{lane}', lane)}`)));
}

describe.each(Object.keys(FUNCTIONS) as Fn[])('the role of the %s', (fn) => {
  const { role } = FUNCTIONS[fn];
  const codeActions = () => sorted(analysis[fn].reachable.map((command) => command.action));

  it("grants exactly the actions of the SDK commands its code can send, and of what Lambda does with it (logs aside)", () => {
    const lambdaActions = GRANTS[fn].filter((grant) => grant.by === 'lambda').flatMap((grant) => grant.actions);
    const granted = statementsOf(role).flatMap((statement) => ([] as string[]).concat(statement.Action)).filter((action) => !isLogs(action));
    expect(sorted(granted)).toEqual(sorted([...codeActions(), ...lambdaActions]));
  });

  it('grants each action on exactly the queues, items, function or parameter its code paths reach (see GRANTS)', () => {
    expect(sorted(grantedPairs(role))).toEqual(sorted(expectedPairs(fn)));
    // Each pair is granted once: no statement repeats another's.
    expect(grantedPairs(role)).toHaveLength(new Set(grantedPairs(role)).size);
  });

  it("has a GRANTS table whose code actions are those of the function's SDK commands", () => {
    expect(sorted(GRANTS[fn].filter((grant) => grant.by === undefined).flatMap((grant) => grant.actions))).toEqual(codeActions());
  });

  it("reaches the table's items only through their partition keys, in statements of plain Allow", () => {
    for (const statement of statementsOf(role)) {
      expect(Object.keys(statement).filter((key) => !['Sid', 'Effect', 'Action', 'Resource', 'Condition'].includes(key))).toEqual([]);
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
  });
});

describe('the SDK commands found', () => {
  it("are those the handler can reach, not every one its bundle holds: the worker bundles SqsQueues.receive but never receives", () => {
    const actions = (commands: SdkCommand[]) => sorted(commands.map((command) => command.action));
    expect(actions(analysis.worker.bundled)).toContain('sqs:ReceiveMessage');
    expect(actions(analysis.worker.reachable)).not.toContain('sqs:ReceiveMessage');
    for (const fn of Object.keys(FUNCTIONS) as Fn[]) expect(actions(analysis[fn].bundled)).toEqual(expect.arrayContaining(actions(analysis[fn].reachable)));
  });

  it('follow calls through the ports to the adapters that send them', () => {
    // processJob and queueOutcomes call the QueueReceiver and store ports, never the SDK: their sends and writes
    // are found in the adapters the worker's wiring puts behind those ports.
    const where = sorted(analysis.worker.reachable.map((command) => `${command.file} ${command.command}`));
    expect(where).toEqual(expect.arrayContaining(['lib/adapters/sqs/SqsQueues.ts SendMessageCommand', 'lib/adapters/dynamodb/DynamoTable.ts UpdateCommand']));
    expect(analysis.worker.reachable.filter((command) => command.file.startsWith('lib/services/'))).toEqual([]);
  });
});
