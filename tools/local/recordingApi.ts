import type { ApiCaller, ApiResult } from '../../lib/ports/ApiCaller';
import type { Clock } from '../../lib/ports/Clock';
import { jobFieldsOf } from '../simulation/jobs';
import type { VirtualApiCall, VirtualApiReport } from '../simulation/virtualApi';

/** What a local run reads from the API it drives: the simulated one, or a recorder of the calls to an external one. */
export interface ObservedApi {
  report(): VirtualApiReport;
  succeededIds(): string[];
  readonly callLog: readonly VirtualApiCall[];
}

interface JobFields {
  readonly id: string;
  readonly group?: string;
  readonly seq?: number;
}

function jobFields(body: string, idempotencyKey: string): JobFields {
  const { id, group, seq } = jobFieldsOf(body);
  return {
    id: typeof id === 'string' ? id : idempotencyKey,
    ...(typeof group === 'string' ? { group } : {}),
    ...(typeof seq === 'number' ? { seq } : {}),
  };
}

/**
 * Keeps the same books as the simulated API for the calls the workers make to an external API (`--api-url`), from
 * the traffic alone: calls (each from its send to its answer), 429s, second successes of one job id, and FIFO order (a handled call, answered 200 or
 * 400, whose group had another call in flight when it was sent, or whose group had already handled a higher `seq`).
 * It wraps each worker's own caller (see {@link RecordingApi.around}) rather than standing in the calls' way: a proxy
 * on this machine would add its own delays between a worker's slot and the call's arrival. Job bodies follow the
 * local run's `{"id","group"?,"seq"?}` shape.
 */
export class RecordingApi implements ObservedApi {
  private readonly calls: VirtualApiCall[] = [];
  private readonly successes = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private readonly highestHandledSeq = new Map<string, number>();
  private readonly counts = { rejectedByApi: 0, duplicates: 0, fifoOrderViolations: 0, probes: 0 };

  constructor(private readonly clock: Clock) {}

  /** `upstream` (a worker's caller of the external API), with every call and probe recorded here. */
  around(upstream: ApiCaller): ApiCaller {
    return {
      call: (body, context) => this.call(upstream, body, context),
      probe: () => {
        this.counts.probes++;
        return upstream.probe();
      },
    };
  }

  private async call(
    upstream: ApiCaller,
    body: string,
    context: { readonly idempotencyKey: string },
  ): Promise<ApiResult> {
    const at = this.clock.now();
    const job = jobFields(body, context.idempotencyKey);
    const crowded = job.group !== undefined && (this.inFlight.get(job.group) ?? 0) > 0;
    if (job.group !== undefined) this.inFlight.set(job.group, (this.inFlight.get(job.group) ?? 0) + 1);
    const result = await upstream.call(body, context);
    const status = result.kind === 'response' ? result.status : 0;
    this.calls.push({ at, ...job, status, endAt: this.clock.now() });
    if (status === 429) this.counts.rejectedByApi++;
    if (status === 200) {
      const before = this.successes.get(job.id) ?? 0;
      this.successes.set(job.id, before + 1);
      if (before > 0) this.counts.duplicates++;
    }
    if (job.group !== undefined) this.recordGroup(job.group, job.seq, crowded, status === 200 || status === 400);
    return result;
  }

  report(): VirtualApiReport {
    return { apiCalls: this.calls.length, ...this.counts };
  }

  succeededIds(): string[] {
    return [...this.successes.keys()];
  }

  get callLog(): readonly VirtualApiCall[] {
    return this.calls;
  }

  private recordGroup(group: string, seq: number | undefined, crowded: boolean, handled: boolean): void {
    this.inFlight.set(group, (this.inFlight.get(group) ?? 1) - 1);
    if (!handled) return;
    const highest = this.highestHandledSeq.get(group) ?? Number.NEGATIVE_INFINITY;
    if (crowded || (seq !== undefined && seq < highest)) this.counts.fifoOrderViolations++;
    if (seq !== undefined) this.highestHandledSeq.set(group, Math.max(seq, highest));
  }
}
