/**
 * The resources of the lanes form of `custom.quotaOrchestrator`, made from those resources/*.yml write for one lane.
 * Those belong to the lane named `default` (see `UNPREFIXED_LANE`); every other lane gets a copy of each, its logical
 * id prefixed with the lane's (see {@link logicalIdPrefix}), its queue names with the lane (see `laneQueueName`):
 * - the eight queues, with their redrive to the lane's own dead-letter queues;
 * - the alarms on a queue (an aging queue, a dead-letter queue not empty) and those on the lane's metrics (their
 *   dimension `lane`), named with the lane;
 * - the stack outputs of the queues (`<Lane>MainQueueUrl`, …).
 * The roles' statements on the queues, and on the lane's state items (`dynamodb:LeadingKeys` such as
 * `circuit#default`), are widened to every lane's, and the worker's grant of the API key to each lane's parameter;
 * so is each dashboard graph of the default lane's metrics or queues, which shows every lane's.
 * Without a lane named `default`, its resources are removed.
 */
import { poolStateName } from '../domain/quota/poolSettlements';
import { ConfigError } from '../errors';
import { UNPREFIXED_LANE } from '../lanes/laneQueueNames';
import { READ_ORDER, type QueueName } from '../ports/QueueReceiver';
import { isRecord } from '../settingChecks';

/** The logical ids resources/sqs.yml gives the queues of the one-lane form. */
export const QUEUE_LOGICAL_IDS: Readonly<Record<QueueName, string>> = Object.freeze({
  requeue: 'RequeueQueue',
  fifo: 'FifoQueue',
  main: 'MainQueue',
  bulk: 'BulkQueue',
  'requeue-dlq': 'RequeueDeadLetterQueue',
  'fifo-dlq': 'FifoDeadLetterQueue',
  'main-dlq': 'MainDeadLetterQueue',
  'bulk-dlq': 'BulkDeadLetterQueue',
});

/** The `Sid` of the worker's grant of the API key (resources/iam.yml). */
export const API_KEY_STATEMENT = 'ApiKeyParameter';

const QUEUE_IDS: ReadonlySet<string> = new Set(Object.values(QUEUE_LOGICAL_IDS));

/** What a lane's resources' logical ids start with: its name's words, capitalised (`gpt-4o` gives `Gpt4o`). */
export function logicalIdPrefix(lane: string): string {
  return lane
    .split(/[-_]/)
    .filter((word) => word !== '')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join('');
}

/** A lane, as its resources need it. */
export interface TemplateLane {
  readonly lane: string;
  /** The SSM parameter of its API key, if it has one. */
  readonly apiKeyParameter?: string;
  /** The pools it draws from (see `ServiceConfig.pools`). */
  readonly pools?: readonly string[];
}

/** How the roles' statements are widened (see {@link laneResources}). */
interface Widening {
  readonly lanes: readonly TemplateLane[];
  readonly copied: readonly LaneCopier[];
  /** Whether the default lane is one of the lanes. */
  readonly keepDefault: boolean;
  /** The pools the lanes draw from, each once. */
  readonly pools: readonly string[];
}

/** The parts of the template that lanes change (`resources.Resources` and `resources.Outputs` of serverless.yml). */
export interface LaneTemplate {
  readonly Resources: Readonly<Record<string, unknown>>;
  readonly Outputs: Readonly<Record<string, unknown>>;
}

/**
 * The template of `lanes` (see the module's comment): `template`'s resources and outputs with each lane's added.
 * @param prefix what the one-lane form's queue names start with (see `queueNamePrefix`)
 * @param lanesPath where the lanes are written, which names a refusal
 * @throws ConfigError naming a lane whose resources would take another lane's logical ids.
 */
export function laneResources(
  template: LaneTemplate,
  lanes: readonly TemplateLane[],
  prefix: string,
  lanesPath: string,
): LaneTemplate {
  checkDistinctIds(lanes, lanesPath);
  const keepDefault = lanes.some(({ lane }) => lane === UNPREFIXED_LANE);
  const copied = lanes.filter(({ lane }) => lane !== UNPREFIXED_LANE).map(({ lane }) => new LaneCopier(lane, prefix));
  const pools = distinct(lanes.flatMap((lane) => lane.pools ?? [])) as string[];
  const widening: Widening = { lanes, copied, keepDefault, pools };
  const Resources: Record<string, unknown> = {};
  for (const [id, resource] of Object.entries(template.Resources)) {
    if (!isLaneResource(id, resource)) {
      Resources[id] = widenDashboard(widenPolicies(resource, widening), copied, keepDefault);
      continue;
    }
    if (keepDefault) Resources[id] = resource;
    for (const copier of copied) Resources[copier.id(id)] = copier.resource(resource);
  }
  const Outputs: Record<string, unknown> = {};
  for (const [key, output] of Object.entries(template.Outputs)) {
    if (!referencesQueue(output)) {
      Outputs[key] = output;
      continue;
    }
    if (keepDefault) Outputs[key] = output;
    for (const copier of copied) Outputs[copier.id(key)] = copier.value(output);
  }
  return { Resources, Outputs };
}

/** @throws ConfigError when two lanes' logical-id prefixes are the same (`a-b` and `a_b`). */
function checkDistinctIds(lanes: readonly TemplateLane[], lanesPath: string): void {
  const seen = new Map<string, string>();
  for (const { lane } of lanes) {
    const id = lane === UNPREFIXED_LANE ? '' : logicalIdPrefix(lane);
    const other = seen.get(id);
    if (other !== undefined)
      throw new ConfigError(
        `${lanesPath}.${lane}`,
        `its resources would be named like lane '${other}''s (${id === '' ? 'no prefix' : id}…): rename one of them`,
      );
    seen.set(id, lane);
  }
}

/** Whether a resource is one a lane has its own copy of: a queue, or an alarm on a queue or on the lane's metrics. */
function isLaneResource(id: string, resource: unknown): boolean {
  if (QUEUE_IDS.has(id)) return true;
  return (
    isRecord(resource) &&
    resource.Type === 'AWS::CloudWatch::Alarm' &&
    (referencesQueue(resource) || someNode(resource, isDefaultLaneDimension))
  );
}

/** Whether `node` is the metric dimension `lane` of the default lane. */
function isDefaultLaneDimension(node: unknown): boolean {
  return isRecord(node) && node.Name === 'lane' && node.Value === UNPREFIXED_LANE;
}

/** The queue's logical id that `node` refers to (`Ref` or `Fn::GetAtt`), if it is such a reference. */
function queueReference(node: unknown): string | undefined {
  if (!isRecord(node)) return undefined;
  const keys = Object.keys(node);
  if (keys.length !== 1) return undefined;
  const target = node.Ref ?? node['Fn::GetAtt'];
  const id = Array.isArray(target) ? target[0] : typeof target === 'string' ? target.split('.')[0] : undefined;
  return typeof id === 'string' && QUEUE_IDS.has(id) ? id : undefined;
}

/** Whether `value` refers to one of the one-lane form's queues anywhere inside. */
function referencesQueue(value: unknown): boolean {
  return someNode(value, (node) => queueReference(node) !== undefined);
}

/** Whether `test` holds for `value` or any value inside it. */
function someNode(value: unknown, test: (node: unknown) => boolean): boolean {
  if (test(value)) return true;
  if (Array.isArray(value)) return value.some((item) => someNode(item, test));
  return isRecord(value) && Object.values(value).some((item) => someNode(item, test));
}

/** What a queue's name (or a name made from one) starts with after the prefix: its source queue's suffix. */
const QUEUE_NAME_START = new RegExp(`^(${READ_ORDER.join('|')})([-.]|$)`);

/** Copies the one-lane form's resources for one lane. */
class LaneCopier {
  private readonly idPrefix: string;

  constructor(
    readonly lane: string,
    private readonly prefix: string,
  ) {
    this.idPrefix = logicalIdPrefix(lane);
  }

  /** The lane's logical id (or output key) of the one-lane form's `id`. */
  id(id: string): string {
    return `${this.idPrefix}${id}`;
  }

  /** A copy of the resource for the lane; an alarm not named after a queue gets the lane at the end of its name. */
  resource(resource: unknown): unknown {
    const copy = this.value(resource);
    if (!isRecord(copy) || !isRecord(copy.Properties) || !isRecord(resource) || !isRecord(resource.Properties))
      return copy;
    const name = resource.Properties.AlarmName;
    if (typeof name !== 'string' || copy.Properties.AlarmName !== name) return copy;
    return { ...copy, Properties: { ...copy.Properties, AlarmName: `${name}-${this.lane}` } };
  }

  /** `value` with its queue references, queue names, lane dimensions and state keys made the lane's. */
  value(value: unknown): unknown {
    const queue = queueReference(value);
    if (queue !== undefined && isRecord(value)) {
      if ('Ref' in value) return { Ref: this.id(queue) };
      const target = value['Fn::GetAtt'];
      const attribute = Array.isArray(target) ? target[1] : String(target).split('.').slice(1).join('.');
      return { 'Fn::GetAtt': [this.id(queue), attribute] };
    }
    if (isDefaultLaneDimension(value)) return { Name: 'lane', Value: this.lane };
    if (typeof value === 'string') return this.name(value);
    if (Array.isArray(value)) return value.map((item) => this.value(item));
    if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.value(v)]));
    return value;
  }

  /**
   * One metric of a dashboard graph (see `widenDashboard`) as the lane's: its queue names and lane dimension made the
   * lane's, and a metric math expression's id and `lane="default"` filter too.
   */
  dashboardMetric(entry: unknown): unknown {
    const copy = this.value(entry);
    if (!Array.isArray(copy)) return copy;
    return copy.map((item: unknown, i) => {
      if (item === UNPREFIXED_LANE && copy[i - 1] === 'lane') return this.lane;
      if (!isRecord(item) || typeof item.expression !== 'string') return item;
      return {
        ...item,
        ...(typeof item.id === 'string' ? { id: `${item.id}${this.idPrefix}` } : {}),
        expression: item.expression.split(`lane="${UNPREFIXED_LANE}"`).join(`lane="${this.lane}"`),
      };
    });
  }

  /** A queue's name, or a name made from one (`<prefix>main-dlq-not-empty`), with the lane after the prefix. */
  private name(text: string): string {
    const rest = text.startsWith(this.prefix) ? text.slice(this.prefix.length) : undefined;
    return rest !== undefined && QUEUE_NAME_START.test(rest) ? `${this.prefix}${this.lane}-${rest}` : text;
  }

  /** A state item's key of the default lane (`circuit#default`, `settle#default#*`) as the lane's, else `undefined`. */
  stateKey(text: string): string | undefined {
    const match = /^([a-z]+)#default(#\*)?$/.exec(text);
    return match === null ? undefined : `${match[1]}#${this.lane}${match[2] ?? ''}`;
  }
}

/**
 * The key of pool `pool`'s item (`lane#pool:<pool>`, `settle#pool:<pool>#*`, `circuit#pool:<pool>`: its 429 pause)
 * like the default lane's `key`, if a pool has one.
 */
function poolStateKey(key: string, pool: string): string | undefined {
  const match = /^(lane|settle|circuit)#default(#\*)?$/.exec(key);
  return match === null ? undefined : `${match[1]}#${poolStateName(pool)}${match[2] ?? ''}`;
}

/** The one-lane form's state-item key pattern of the default lane (`lane#default`, `settle#default#*`). */
function isDefaultStateKey(text: unknown): boolean {
  return typeof text === 'string' && /^[a-z]+#default(#\*)?$/.test(text);
}

/**
 * A role or managed policy with each statement widened to the lanes (see the module's comment); any other resource as
 * it is.
 */
function widenPolicies(resource: unknown, widening: Widening): unknown {
  if (!isRecord(resource) || !isRecord(resource.Properties)) return resource;
  const widen = (document: unknown): unknown => {
    if (!isRecord(document) || !Array.isArray(document.Statement)) return document;
    const Statement = document.Statement.flatMap((statement: unknown) => widenStatement(statement, widening));
    return { ...document, Statement };
  };
  const properties = resource.Properties;
  if (resource.Type === 'AWS::IAM::ManagedPolicy')
    return { ...resource, Properties: { ...properties, PolicyDocument: widen(properties.PolicyDocument) } };
  if (resource.Type !== 'AWS::IAM::Role' || !Array.isArray(properties.Policies)) return resource;
  const Policies = properties.Policies.map((policy: unknown) =>
    isRecord(policy) ? { ...policy, PolicyDocument: widen(policy.PolicyDocument) } : policy,
  );
  return { ...resource, Properties: { ...properties, Policies } };
}

/** One statement widened to the lanes; none for the API key's grant when no lane has a key. */
function widenStatement(statement: unknown, widening: Widening): unknown[] {
  const { lanes, copied, keepDefault } = widening;
  if (!isRecord(statement)) return [statement];
  if (statement.Sid === API_KEY_STATEMENT) {
    const parameters = lanes.flatMap(({ apiKeyParameter }) => (apiKeyParameter === undefined ? [] : [apiKeyParameter]));
    return parameters.length === 0 ? [] : [{ ...statement, Resource: parameters.map(parameterArn) }];
  }
  const widened: Record<string, unknown> = { ...statement };
  if (referencesQueue(statement.Resource)) {
    const entries: unknown[] = Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
    const queues = entries.filter((entry) => queueReference(entry) !== undefined);
    const others = entries.filter((entry) => queueReference(entry) === undefined);
    widened.Resource = distinct([
      ...(keepDefault ? entries : others),
      ...copied.flatMap((copier) => queues.map((entry) => copier.value(entry))),
    ]);
  }
  if (statement.Condition !== undefined) widened.Condition = widenKeys(statement.Condition, widening);
  return [widened];
}

/**
 * `condition` with each list of state keys that holds the default lane's widened to every lane's, and its lease and
 * ledger item (`lane#default`), settlement shards (`settle#default#*`) and circuit item (`circuit#default`) to each
 * pool's (`lane#pool:<pool>`, …): a pool's state is a lane's (see `PoolRun`), its circuit item holding only a 429's
 * pause.
 */
function widenKeys(condition: unknown, widening: Widening): unknown {
  const { copied, keepDefault, pools } = widening;
  if (Array.isArray(condition) && condition.some(isDefaultStateKey)) {
    const keys = condition.filter(isDefaultStateKey) as string[];
    return distinct([
      ...(keepDefault ? condition : condition.filter((key) => !isDefaultStateKey(key))),
      ...copied.flatMap((copier) => keys.map((key) => copier.stateKey(key))),
      ...pools.flatMap((pool) => keys.flatMap((key) => poolStateKey(key, pool) ?? [])),
    ]);
  }
  if (isRecord(condition))
    return Object.fromEntries(Object.entries(condition).map(([key, value]) => [key, widenKeys(value, widening)]));
  return condition;
}

/**
 * A dashboard with each graph's metrics of the default lane (its `lane` dimension, or a search for `lane="default"`,
 * or one of its queues) shown for every lane; any other resource as it is. A body that is not JSON text is left as it
 * is.
 */
function widenDashboard(resource: unknown, copied: readonly LaneCopier[], keepDefault: boolean): unknown {
  if (!isRecord(resource) || resource.Type !== 'AWS::CloudWatch::Dashboard' || !isRecord(resource.Properties))
    return resource;
  const text = resource.Properties.DashboardBody;
  if (typeof text !== 'string') return resource;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return resource;
  }
  const ofDefault = (entry: unknown): boolean => {
    const json = JSON.stringify(entry);
    return (
      json.includes(`"lane","${UNPREFIXED_LANE}"`) ||
      json.includes(`lane=\\"${UNPREFIXED_LANE}\\"`) ||
      copied.some((c) => JSON.stringify(c.value(entry)) !== json)
    );
  };
  const widgets = isRecord(body) && Array.isArray(body.widgets) ? body.widgets : [];
  const widened = widgets.map((widget: unknown) => {
    if (!isRecord(widget) || !isRecord(widget.properties) || !Array.isArray(widget.properties.metrics)) return widget;
    const metrics = distinct(
      widget.properties.metrics.flatMap((entry: unknown) =>
        ofDefault(entry)
          ? [...(keepDefault ? [entry] : []), ...copied.map((copier) => copier.dashboardMetric(entry))]
          : [entry],
      ),
    );
    return { ...widget, properties: { ...widget.properties, metrics } };
  });
  const DashboardBody = JSON.stringify({ ...(body as Record<string, unknown>), widgets: widened });
  return { ...resource, Properties: { ...resource.Properties, DashboardBody } };
}

/** `values` without repeats (equal as JSON), in their order: a second run of the plugin widens nothing twice. */
function distinct(values: readonly unknown[]): unknown[] {
  const seen = new Set<string>();
  return values.filter((value) => {
    const key = JSON.stringify(value);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** The ARN of the SSM parameter `name` (a name starting with `/`), in the stack's partition, region and account. */
function parameterArn(name: string): unknown {
  return {
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':ssm:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        ':parameter',
        name,
      ],
    ],
  };
}
