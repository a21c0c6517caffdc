import { describeValue } from '../../lib/domain/describeValue';
import { parseSettings } from '../../lib/domain/settings';
import { ConfigError } from '../../lib/errors';

/**
 * How long after an accepted asynchronous invoke a worker starts, as AWS Lambda does it: mostly a warm start a few
 * ms later, a share of cold starts, a share of throttled events that Lambda retries internally and releases
 * together, and rare multi-second holds. Every share is drawn independently per invoke, in that order of precedence
 * (a held event is not also cold).
 */
export interface RealisticStartDelays {
  readonly kind: 'realistic';
  /** A warm start takes from `warmMinMs` to `warmMaxMs`. @default 5 to 40 */
  readonly warmMinMs: number;
  readonly warmMaxMs: number;
  /** Share of invokes that start cold, `coldMinMs` to `coldMaxMs` late. @default 0.05, 200 to 1500 ms */
  readonly coldShare: number;
  readonly coldMinMs: number;
  readonly coldMaxMs: number;
  /**
   * Share of invokes throttled inside Lambda: each waits at least `throttleMinMs`, then until the next multiple of
   * `throttleReleaseEveryMs` on the clock, so throttled events of one stretch start together.
   * @default 0.02, at least 200 ms, released every 1000 ms
   */
  readonly throttledShare: number;
  readonly throttleMinMs: number;
  readonly throttleReleaseEveryMs: number;
  /** Share of invokes held for seconds (a slow placement, a busy host). @default 0.005, 2000 to 5000 ms */
  readonly holdShare: number;
  readonly holdMinMs: number;
  readonly holdMaxMs: number;
}

/** Every worker starts exactly `ms` after its invoke: the old model, kept as one setting. */
export interface FixedStartDelays {
  readonly kind: 'fixed';
  readonly ms: number;
}

/** A start-delay distribution. */
export type StartDelayModel = RealisticStartDelays | FixedStartDelays;

/**
 * Lambda's at-least-once delivery of async events: a share of events is delivered a second time, some while the
 * first delivery runs (`whileRunningMinMs`…`whileRunningMaxMs` after it started), the others after it ended
 * (`afterEndMinMs`…`afterEndMaxMs` after its end). `share: 0` turns it off.
 */
export interface DuplicateDeliveries {
  /** Share of accepted events delivered twice. @default 0.02 */
  readonly share: number;
  /** Of those, the share whose second copy comes while the first still runs; the rest come after it ended. @default 0.5 */
  readonly whileRunningShare: number;
  /** @default 5 to 60 ms after the first delivery started */
  readonly whileRunningMinMs: number;
  readonly whileRunningMaxMs: number;
  /** @default 200 to 3000 ms after the first delivery ended */
  readonly afterEndMinMs: number;
  readonly afterEndMaxMs: number;
}

/** The whole timing of async invokes: when a worker starts, and whether its event comes again. */
export interface InvokeTimingModel {
  readonly start: StartDelayModel;
  readonly duplicates: DuplicateDeliveries;
}

/** The numbers of {@link REALISTIC_START_DELAYS}, also the defaults of a scenario's `startDelays`. */
const REALISTIC_NUMBERS: Omit<RealisticStartDelays, 'kind'> = Object.freeze({
  warmMinMs: 5,
  warmMaxMs: 40,
  coldShare: 0.05,
  coldMinMs: 200,
  coldMaxMs: 1_500,
  throttledShare: 0.02,
  throttleMinMs: 200,
  throttleReleaseEveryMs: 1_000,
  holdShare: 0.005,
  holdMinMs: 2_000,
  holdMaxMs: 5_000,
});

/** The default start delays: see {@link RealisticStartDelays} for each value. */
export const REALISTIC_START_DELAYS: RealisticStartDelays = Object.freeze({ kind: 'realistic', ...REALISTIC_NUMBERS });

/** The default duplicate deliveries: see {@link DuplicateDeliveries} for each value. */
export const DEFAULT_DUPLICATES: DuplicateDeliveries = Object.freeze({
  share: 0.02,
  whileRunningShare: 0.5,
  whileRunningMinMs: 5,
  whileRunningMaxMs: 60,
  afterEndMinMs: 200,
  afterEndMaxMs: 3_000,
});

/** Single delivery: every event runs once. */
export const NO_DUPLICATES: DuplicateDeliveries = Object.freeze({ ...DEFAULT_DUPLICATES, share: 0 });

/** The default world: realistic start delays and a small share of duplicate deliveries. */
export const REALISTIC_TIMING: InvokeTimingModel = Object.freeze({
  start: REALISTIC_START_DELAYS,
  duplicates: DEFAULT_DUPLICATES,
});

/** A fixed start delay of `ms` and a single delivery: the old model. */
export function fixedTiming(ms: number): InvokeTimingModel {
  return Object.freeze({ start: Object.freeze({ kind: 'fixed', ms }), duplicates: NO_DUPLICATES });
}

/** When one accepted event's deliveries start. */
export interface DeliveryPlan {
  /** Delay from the accepted invoke to the first delivery's start. */
  readonly startDelayMs: number;
  /** The second delivery, if this event gets one. */
  readonly duplicate?:
    | { readonly when: 'while-running'; readonly afterStartMs: number }
    | { readonly when: 'after-end'; readonly afterEndMs: number };
  /** What drew the start delay, for counters. */
  readonly start: 'fixed' | 'warm' | 'cold' | 'throttled' | 'held';
}

/**
 * Draws {@link DeliveryPlan}s from an {@link InvokeTimingModel} with injected (seeded) randomness. Deterministic for a
 * given model, random source and sequence of `now`s.
 */
export class InvokeTiming {
  private readonly drawn = new Map<DeliveryPlan['start'] | 'duplicate', number>();

  constructor(
    readonly model: InvokeTimingModel,
    private readonly random: () => number,
  ) {}

  /** The plan of an event accepted at `now` (the clock's time: throttled events are released on its multiples). */
  plan(now: number): DeliveryPlan {
    const { start, duplicates } = this.model;
    const [kind, startDelayMs] = this.startDelay(start, now);
    this.count(kind);
    const plan: DeliveryPlan = { startDelayMs, start: kind };
    if (duplicates.share <= 0 || this.random() >= duplicates.share) return plan;
    this.count('duplicate');
    return this.random() < duplicates.whileRunningShare
      ? {
          ...plan,
          duplicate: {
            when: 'while-running',
            afterStartMs: this.between(duplicates.whileRunningMinMs, duplicates.whileRunningMaxMs),
          },
        }
      : {
          ...plan,
          duplicate: {
            when: 'after-end',
            afterEndMs: this.between(duplicates.afterEndMinMs, duplicates.afterEndMaxMs),
          },
        };
  }

  /** How many plans drew each kind of start, and how many a duplicate, so far. */
  counts(): Readonly<Record<string, number>> {
    return Object.fromEntries(this.drawn);
  }

  private startDelay(model: StartDelayModel, now: number): [DeliveryPlan['start'], number] {
    if (model.kind === 'fixed') return ['fixed', model.ms];
    const r = this.random();
    if (r < model.holdShare) return ['held', this.between(model.holdMinMs, model.holdMaxMs)];
    if (r < model.holdShare + model.throttledShare) {
      const every = model.throttleReleaseEveryMs;
      return ['throttled', Math.ceil((now + model.throttleMinMs) / every) * every - now];
    }
    if (r < model.holdShare + model.throttledShare + model.coldShare)
      return ['cold', this.between(model.coldMinMs, model.coldMaxMs)];
    return ['warm', this.between(model.warmMinMs, model.warmMaxMs)];
  }

  private between(min: number, max: number): number {
    return Math.round(min + this.random() * (max - min));
  }

  private count(kind: DeliveryPlan['start'] | 'duplicate'): void {
    this.drawn.set(kind, (this.drawn.get(kind) ?? 0) + 1);
  }
}

const MS = { min: 0, max: 600_000, integer: true } as const;
const SHARE = { min: 0, max: 1 } as const;
const REALISTIC_RANGES = {
  warmMinMs: MS,
  warmMaxMs: MS,
  coldShare: SHARE,
  coldMinMs: MS,
  coldMaxMs: MS,
  throttledShare: SHARE,
  throttleMinMs: MS,
  throttleReleaseEveryMs: { min: 1, max: 600_000, integer: true },
  holdShare: SHARE,
  holdMinMs: MS,
  holdMaxMs: MS,
} as const;
const DUPLICATE_RANGES = {
  share: SHARE,
  whileRunningShare: SHARE,
  whileRunningMinMs: MS,
  whileRunningMaxMs: MS,
  afterEndMinMs: MS,
  afterEndMaxMs: MS,
} as const;

function checkSpan(field: string, min: number, max: number, name: string): void {
  if (min > max)
    throw new ConfigError(`${field}.${name}MinMs`, `must not exceed ${field}.${name}MaxMs (${max}); got ${min}`);
}

/**
 * Validates a scenario's `startDelays`: `{"kind": "fixed", "ms": N}`, or `{"kind": "realistic", …}` with any of
 * {@link RealisticStartDelays}' fields overriding {@link REALISTIC_START_DELAYS}.
 * @throws ConfigError naming the field and its allowed values (shares adding up to more than 1, a min above its max).
 */
export function parseStartDelays(input: unknown, field = 'startDelays'): StartDelayModel {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ConfigError(field, `must be an object with a kind of fixed or realistic; got ${describeValue(input)}`);
  const { kind, ...rest } = input as Record<string, unknown>;
  if (kind === 'fixed') {
    const { ms } = parseSettings(rest, field, { ms: -1 }, { ms: MS });
    if (ms < 0) throw new ConfigError(`${field}.ms`, 'is required with kind fixed (0 to 600000)');
    return Object.freeze({ kind, ms });
  }
  if (kind !== 'realistic')
    throw new ConfigError(`${field}.kind`, `must be fixed or realistic; got ${describeValue(kind)}`);
  const settings = parseSettings(rest, field, REALISTIC_NUMBERS, REALISTIC_RANGES);
  checkSpan(field, settings.warmMinMs, settings.warmMaxMs, 'warm');
  checkSpan(field, settings.coldMinMs, settings.coldMaxMs, 'cold');
  checkSpan(field, settings.holdMinMs, settings.holdMaxMs, 'hold');
  const shares = settings.coldShare + settings.throttledShare + settings.holdShare;
  if (shares > 1)
    throw new ConfigError(field, `coldShare + throttledShare + holdShare must not exceed 1; got ${shares}`);
  return Object.freeze({ kind, ...settings });
}

/**
 * Validates a scenario's `duplicateDeliveries`: any of {@link DuplicateDeliveries}' fields over
 * {@link DEFAULT_DUPLICATES}; `{"share": 0}` turns duplicates off.
 * @throws ConfigError naming the field and its allowed values.
 */
export function parseDuplicateDeliveries(input: unknown, field = 'duplicateDeliveries'): DuplicateDeliveries {
  const settings = parseSettings(input, field, DEFAULT_DUPLICATES, DUPLICATE_RANGES);
  checkSpan(field, settings.whileRunningMinMs, settings.whileRunningMaxMs, 'whileRunning');
  checkSpan(field, settings.afterEndMinMs, settings.afterEndMaxMs, 'afterEnd');
  return Object.freeze({ ...settings });
}
