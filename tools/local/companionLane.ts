/**
 * A second lane beside a service stack's own (see `ServiceStackOptions.companion`), as the lanes form deploys it: its
 * own queues (named by `laneQueueName`), its own simulated API with its own tiers, and the pools of the stack's lane,
 * which both APIs count together. The stack's functions then read the lanes form's environment (`LANES` and
 * `QUEUE_URL_PREFIX`), so that the worker takes each event to its lane, and each orchestrator run runs both lanes.
 */
import type { SQSClient } from '@aws-sdk/client-sqs';
import { SqsQueues } from '../../lib/adapters/sqs/SqsQueues';
import { CONFIG_ENV, QUEUE_URL_ENV, RESOURCE_ENV, type Env } from '../../lib/configFromEnv';
import { parseTiers } from '../../lib/domain/quota/tiers';
import { LANE_VARIABLES, LANES_ENV } from '../../lib/lanes/laneEnv';
import { laneQueueName } from '../../lib/lanes/laneQueueNames';
import { READ_ORDER, type QueueName } from '../../lib/ports/QueueReceiver';
import type { Clock } from '../../lib/ports/Clock';
import type { ReceivedMessage } from '../../lib/ports/QueueReceiver';
import type { SharedTiers } from '../simulation/tierTally';
import { VirtualApi } from '../simulation/virtualApi';
import { startApiServer, type ApiServer } from './apiServer';
import { createLaneQueues } from './laneQueues';
import { LaneQueuesView } from './laneQueuesView';

/** The companion lane's name. */
export const COMPANION = 'mate';

/** What a companion lane is made of. */
export interface CompanionOptions {
  /** Its own tiers, as `QUOTAS` takes them. */
  readonly quotas: readonly { readonly limit: number; readonly per: string }[];
  /** The pools its API counts with the stack's lane's (the same objects). */
  readonly shared: readonly SharedTiers[];
  readonly clock: Clock;
  readonly latencyMs: number;
  readonly maxReceiveCount: number;
}

/** A companion lane running beside a stack's lane. */
export class CompanionLane {
  private constructor(
    /** The referee of its calls. */
    readonly api: VirtualApi,
    private readonly server: ApiServer,
    private readonly view: LaneQueuesView,
    private readonly queues: SqsQueues,
    readonly queueUrls: Readonly<Record<QueueName, string>>,
    private readonly quotas: CompanionOptions['quotas'],
  ) {}

  /**
   * Creates the lane's queues beside those of `mainUrl` (the stack's lane's main queue, whose name is `<prefix>main`)
   * and serves its API.
   */
  static async create(sqs: SQSClient, mainUrl: string, options: CompanionOptions): Promise<CompanionLane> {
    const prefix = queueUrlPrefix(mainUrl);
    const name = laneQueueName(prefix.name, COMPANION, 'main');
    const queueUrls = await createLaneQueues(sqs, name.slice(0, -'-main'.length), {
      maxReceiveCount: options.maxReceiveCount,
    });
    const api = new VirtualApi({
      clock: options.clock,
      tiers: parseTiers(options.quotas),
      shared: options.shared,
      latencyMs: options.latencyMs,
    });
    const server = await startApiServer(api);
    const queues = new SqsQueues({ client: sqs, queueUrls });
    return new CompanionLane(api, server, new LaneQueuesView(sqs, queueUrls), queues, queueUrls, options.quotas);
  }

  /** Sends `count` healthy jobs `m-1` … `m-<count>` to its main queue. */
  async sendJobs(count: number): Promise<void> {
    for (let n = 1; n <= count; n++) await this.queues.send('main', { body: JSON.stringify({ id: `m-${n}` }) });
  }

  /** True when its four source queues hold nothing (visible, in flight or delayed). */
  async drained(): Promise<boolean> {
    const counts = await Promise.all(READ_ORDER.map((queue) => this.view.count(queue)));
    return counts.every((n) => n === 0);
  }

  /** Every message of its dead-letter queues. */
  receiveDeadLetters(): Promise<ReceivedMessage[]> {
    return this.view.receiveDeadLetters();
  }

  /**
   * The lanes form's environment of the stack's one-lane `env` (its lane's own variables in `LANES`, its queues'
   * URLs replaced by `QUEUE_URL_PREFIX`) with this lane beside it: the stack's lane's variables with its own tiers
   * and API.
   */
  lanesEnv(env: Env): Env {
    const own: Record<string, string> = {};
    const shared: Record<string, string> = {};
    const queueUrlNames: readonly string[] = Object.values(QUEUE_URL_ENV);
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined || name === CONFIG_ENV.lane || queueUrlNames.includes(name)) continue;
      if (LANE_VARIABLES.includes(name)) own[name] = value;
      else shared[name] = value;
    }
    const companion = {
      ...own,
      [CONFIG_ENV.quotas]: JSON.stringify(this.quotas),
      [RESOURCE_ENV.apiUrl]: this.server.apiUrl,
      [RESOURCE_ENV.healthUrl]: this.server.healthUrl,
    };
    const lane = env[CONFIG_ENV.lane] ?? 'default';
    return {
      ...shared,
      [LANES_ENV.lanes]: JSON.stringify({ [lane]: own, [COMPANION]: companion }),
      [LANES_ENV.queueUrlPrefix]: queueUrlPrefix(env[QUEUE_URL_ENV.main] ?? '').url,
    };
  }

  /** Stops its API server. */
  close(): Promise<void> {
    return this.server.close();
  }
}

/** What the URL and the name of a lane's main queue (`<prefix>main`) start with. */
function queueUrlPrefix(mainUrl: string): { readonly url: string; readonly name: string } {
  if (!mainUrl.endsWith('main')) throw new Error(`a main queue's URL ends with 'main'; got ${mainUrl}`);
  const url = mainUrl.slice(0, -'main'.length);
  return { url, name: url.slice(url.lastIndexOf('/') + 1) };
}
