import { ledgerOf, storedLedger } from '../../../../lib/adapters/dynamodb/storedLedger';
import { QuotaLedger } from '../../../../lib/domain/quota/ledger';
import { parseTiers } from '../../../../lib/domain/quota/tiers';
import { StateFormatError } from '../../../../lib/errors';

describe('the stored ledger', () => {
  const START = Date.UTC(2026, 10, 28, 12);

  /** A ledger of an LLM lane's three minute tiers, a call a second for 55 s, each with a prompt of its own size. */
  function busyLedger() {
    const ledger = new QuotaLedger(
      parseTiers([
        { limit: 120, per: 'minute' },
        { limit: 200_000, per: 'minute', unit: 'input_tokens' },
        { limit: 60_000, per: 'minute', unit: 'output_tokens' },
      ]),
    );
    for (let i = 0; i < 55; i++) {
      const at = START + i * 1_000;
      ledger.reserve(at, { requests: 1, input_tokens: 500 + ((i * 397) % 1_500), output_tokens: 1_024 });
    }
    return ledger.snapshot();
  }

  it('reads back what it stores', () => {
    const ledger = busyLedger();
    expect(ledgerOf(storedLedger(ledger), 'a')).toEqual(ledger);
  });

  it('fits a busy ledger of three minute tiers in one write unit (1 KB), where its text takes two', () => {
    const ledger = busyLedger();
    expect(JSON.stringify(ledger).length).toBeGreaterThan(1_024);
    expect(storedLedger(ledger).length).toBeLessThan(1_024);
  });

  it('reads the plain JSON text that saves wrote before', () => {
    expect(ledgerOf('{"v":1,"tiers":{"day:requests":{"w":"2026-11-23","u":3}}}', 'a')).toEqual({
      v: 1,
      tiers: { 'day:requests': { w: '2026-11-23', u: 3 } },
    });
  });

  it.each([
    ['bytes that are not deflated text', new Uint8Array([1, 2, 3, 255])],
    ['a number', 42],
    ['text that is not JSON', 'not json'],
  ])("refuses %s, naming the lane's ledger", (_, value) => {
    expect(() => ledgerOf(value, 'lane-7')).toThrow(StateFormatError);
    expect(() => ledgerOf(value, 'lane-7')).toThrow(/ledger of lane 'lane-7'/);
  });
});
