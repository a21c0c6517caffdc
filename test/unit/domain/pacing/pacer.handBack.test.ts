import { Pacer } from '../../../../lib/domain/pacing/pacer';
import { DEFAULT_PACING_SETTINGS } from '../../../../lib/domain/pacing/settings';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { parseTiers } from '../../../../lib/domain/quota/tiers';

const T0 = Date.UTC(2026, 0, 5);
/** 60 000 output tokens a minute: smoothing spaces 1 000 tokens 1 s apart. No margin, ramp or burst. */
const tiers = parseTiers([{ limit: 60_000, per: 'minute', unit: 'output_tokens' }]);
const settings = { ...DEFAULT_PACING_SETTINGS, arrivalMarginMs: 0, callAllowanceMs: 0, rampSeconds: 0 };
const estimate = { output_tokens: 1_000 };

describe('Pacer: estimates handed back', () => {
  it('paces a tier at what calls use: the part of an estimate handed back is credited to the next dispatches', () => {
    const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs: 0 }), settings);
    const first = pacer.dispatch(T0, estimate);
    expect(pacer.nextSlot(T0, estimate)).toBe(T0 + 1_000);

    // The call used 400: 600 come back, so the next call of 1 000 is spaced by the 400 the credits do not cover.
    pacer.settle({ reservation: first, actual: { output_tokens: 400 }, id: 'd-1' }, T0 + 500);
    expect(pacer.nextSlot(T0 + 500, estimate)).toBe(T0 + 1_000);
    pacer.dispatch(T0 + 1_000, estimate);
    expect(pacer.nextSlot(T0 + 1_000, estimate)).toBe(T0 + 1_400);
  });

  it('lets a message through at once while the credits cover all of it, and charges the ledger all the same', () => {
    const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs: 0 }), settings);
    const first = pacer.dispatch(T0, estimate);
    pacer.settle({ reservation: first, actual: { output_tokens: 0 }, id: 'd-1' }, T0 + 100);
    expect(pacer.nextSlot(T0 + 100, estimate)).toBe(T0 + 100);
    pacer.dispatch(T0 + 100, estimate);
    expect(pacer.ledger.usage(T0 + 100)[0]?.used).toBe(1_000);
  });

  it('credits nothing for usage above the estimate, which the ledger charges in full', () => {
    const pacer = new Pacer(new QuotaLedger(tiers, { arrivalMarginMs: 0 }), settings);
    const first = pacer.dispatch(T0, estimate);
    pacer.settle({ reservation: first, actual: { output_tokens: 59_500 }, id: 'd-1' }, T0 + 100);
    expect(pacer.ledger.usage(T0 + 100)[0]?.used).toBe(59_500);
    // 1 000 more fit once the first call's 59 500 leave the window, a minute after its slot (and its bucket).
    expect(pacer.nextSlot(T0 + 100, estimate)).toBeGreaterThanOrEqual(T0 + 60_000);
  });
});
