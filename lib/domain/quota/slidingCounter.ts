import type { SlidingTierJSON } from './ledgerJSON';
import type { HeldUnits, TierCounter } from './tierCounter';

/**
 * How finely sliding-window history is kept: each window is cut into this many buckets. A bucket's units are
 * treated as if they had all arrived at its last millisecond, so history expires at most one bucket (0.4 % of
 * the window) late: the ledger never under-counts, and costs at most 0.4 % of throughput. It also bounds the
 * serialised form to `BUCKETS_PER_WINDOW + 1` bucket amounts (plus granularity and first index) per sliding tier.
 */
export const BUCKETS_PER_WINDOW = 250;

/**
 * Sliding-window history as a dense run of buckets. Bucket `k` covers `[k·g, (k+1)·g)`; its units count in every
 * window `(T − W, T]` with `T < expiry(k) = (k+1)·g − 1 + W`, i.e. as if they arrived at the bucket's last ms.
 */
export class SlidingCounter implements TierCounter {
  private readonly g: number;
  private first = 0;
  private amounts: number[] = [];

  /** An empty history of a tier of `limit` units per window of `windowMs`. */
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {
    this.g = windowMs / BUCKETS_PER_WINDOW;
  }

  /** The history `json` saved (see {@link SlidingCounter.toJSON}), counted against `limit` per window of `windowMs`. */
  static fromJSON(limit: number, windowMs: number, json: SlidingTierJSON): SlidingCounter {
    const counter = new SlidingCounter(limit, windowMs);
    json.a.forEach((amount, i) => {
      // Re-bucket conservatively if the granularity ever changes: keep each amount at its latest instant.
      const lastMs = (json.b + i + 1) * json.g - 1;
      if (amount > 0) counter.charge(Math.floor(lastMs / counter.g), amount);
    });
    if (json.h !== undefined && json.h[1] > 0)
      counter.charge(Math.floor(((json.h[0] + 1) * json.g - 1) / counter.g), json.h[1]);
    return counter;
  }

  /**
   * A history of a tier of `limit` units per window of `windowMs` that counts it full for every call slotted at or
   * before `slot` which it never counted (made under a configuration without the tier). The limit goes in the bucket
   * after that of `slot`, where no such call lies, so a settlement of one gives nothing back (see
   * {@link SlidingCounter.adjust}): the tier is full until one window after that bucket.
   */
  static filledThrough(limit: number, windowMs: number, slot: number): SlidingCounter {
    const counter = new SlidingCounter(limit, windowMs);
    counter.charge(Math.floor(slot / counter.g) + 1, limit);
    return counter;
  }

  private expiry(k: number): number {
    return (k + 1) * this.g - 1 + this.windowMs;
  }

  private prune(now: number): void {
    let drop = 0;
    while (drop < this.amounts.length && (this.expiry(this.first + drop) <= now || this.amounts[drop] === 0)) drop++;
    if (drop > 0) {
      this.amounts = this.amounts.slice(drop);
      this.first += drop;
    }
  }

  private total(): number {
    return this.amounts.reduce((sum, a) => sum + a, 0);
  }

  /** Reads only: a probe of a later instant must not drop buckets that still count before it. */
  earliestFit(now: number, units: number, cap?: number): number {
    if (units > this.limit) return Number.POSITIVE_INFINITY;
    const limit = cap === undefined ? this.limit : Math.max(units, Math.min(cap, this.limit));
    // Buckets expire in order: those expired by `now` come first.
    let live = 0;
    while (live < this.amounts.length && this.expiry(this.first + live) <= now) live++;
    let inWindow = 0;
    for (let i = live; i < this.amounts.length; i++) inWindow += this.amounts[i] ?? 0;
    if (inWindow + units <= limit) return now;
    for (let i = live; i < this.amounts.length; i++) {
      inWindow -= this.amounts[i] ?? 0;
      if (inWindow + units <= limit) return Math.max(now, this.expiry(this.first + i));
    }
    return now; // unreachable: an empty history always fits units <= limit
  }

  /** {@inheritDoc TierCounter.add} */
  add(now: number, units: number): undefined {
    this.prune(now);
    this.charge(Math.floor(now / this.g), units);
    return undefined;
  }

  /** {@inheritDoc TierCounter.adjust} */
  adjust(at: number, _window: string | undefined, delta: number): void {
    const k = Math.floor(at / this.g);
    const i = k - this.first;
    if (this.amounts.length > 0 && i >= 0 && i < this.amounts.length) {
      this.amounts[i] = Math.max(0, (this.amounts[i] ?? 0) + delta);
    } else if (delta > 0 && !this.expiredBeforeNewest(k)) {
      this.charge(k, delta); // an under-estimate whose bucket is not held: charge it where it happened
    }
  }

  /**
   * Whether bucket `k` had expired by the start of the newest held bucket, an instant that has already passed, so
   * it can never count again. Charging it anyway would pad the history (and its serialised form, past the
   * `BUCKETS_PER_WINDOW + 1` bound) with a zero for every bucket between it and the present.
   */
  private expiredBeforeNewest(k: number): boolean {
    return this.amounts.length > 0 && this.expiry(k) <= (this.first + this.amounts.length - 1) * this.g;
  }

  private charge(k: number, units: number): void {
    if (this.amounts.length === 0) {
      this.first = k;
      this.amounts = [units];
      return;
    }
    if (k < this.first) {
      this.amounts = [...new Array<number>(this.first - k).fill(0), ...this.amounts];
      this.first = k;
    }
    const i = k - this.first;
    while (this.amounts.length <= i) this.amounts.push(0);
    this.amounts[i] = (this.amounts[i] ?? 0) + units;
  }

  /** {@inheritDoc TierCounter.used} */
  used(now: number): number {
    this.prune(now);
    return this.total();
  }

  /** {@inheritDoc TierCounter.windowEnd} */
  windowEnd(): number {
    return Number.POSITIVE_INFINITY;
  }

  /** {@inheritDoc TierCounter.toJSON} */
  toJSON(held?: HeldUnits): SlidingTierJSON {
    let end = this.amounts.length;
    while (end > 0 && this.amounts[end - 1] === 0) end--;
    const json = { g: this.g, b: this.first, a: this.amounts.slice(0, end) };
    // Units dispatched at any t <= until leave every window by until + W; the bucket of `until` expires no sooner.
    return held === undefined || held.units === 0
      ? json
      : { ...json, h: [Math.floor(held.until / this.g), held.units] };
  }
}
