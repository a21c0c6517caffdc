import { tierOfReading } from '../../domain/limits/limitLearner';
import { readLimitHeaders, type LimitReading } from '../../domain/limits/rateLimitHeaders';
import type { ApiResult } from '../../domain/outcome/apiResult';
import type { Classification } from '../../domain/outcome/classify';
import { LimitReportMemory, LOW_REMAINING_SHARE } from './limitReportMemory';
import type { WorkerDeps } from './types';

/** Whether `reading`'s remaining is below {@link LOW_REMAINING_SHARE} of its limit (or of its tier's configured one). */
function isLow(reading: LimitReading, tierLimit: number | undefined): boolean {
  const limit = reading.limit ?? tierLimit;
  return reading.remaining !== undefined && limit !== undefined && reading.remaining < LOW_REMAINING_SHARE * limit;
}

/**
 * Records what the API's answer to a job's call says of its limits, for the orchestrator to learn from (see
 * `LimitLearner`): each reading of the lane's header format that is news to this container (see
 * {@link LimitReportMemory}), and a 429 that no reading explains (none says that nothing remains). Reads nothing when
 * the lane learns nothing (`limits.learn: off`). Never throws: what cannot be recorded is left for a later answer,
 * and the job goes on as it would.
 */
export async function reportLimits(
  result: ApiResult,
  classification: Classification,
  now: number,
  lane: string,
  deps: WorkerDeps,
): Promise<void> {
  const { config } = deps;
  if (config.limits.learn === 'off' || result.kind !== 'response') return;
  const readings = readLimitHeaders(config.limits.headers, result.headers, now);
  const memory = deps.limitReports ?? new LimitReportMemory();
  const writes = readings.map(async (reading) => {
    const low = isLow(reading, config.quotas[tierOfReading(reading, config.quotas, config.limits)]?.limit);
    if (!memory.news(lane, reading, low, now)) return;
    await deps.stores.limits.recordReading(lane, { ...reading, at: now });
    memory.recorded(lane, reading, low, now);
  });
  const explained = readings.some((reading) => reading.remaining === 0);
  if (classification.kind === 'rate-limited' && !explained)
    writes.push(deps.stores.limits.recordRateLimited(lane, now));
  await Promise.all(writes.map((write) => write.catch(() => undefined)));
}
