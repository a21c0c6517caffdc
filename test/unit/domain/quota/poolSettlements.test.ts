import { laneReservation, poolStateName, settlementsByState } from '../../../../lib/domain/quota/poolSettlements';
import type { Settlement } from '../../../../lib/domain/quota/ledger';

const reservation = {
  at: 1_000,
  costs: { cost: 1, tokens: 900 },
  windows: { 'day:cost': '2026-11-29' },
  pools: { org: { 'day:tokens': '2026-11-29' }, account: {} },
};

describe('settlementsByState', () => {
  it("records a settlement in its lane, without the pools' part, and in each pool as that pool's reservation", () => {
    const settlement: Settlement = { reservation, actual: { tokens: 400 }, id: 'd-1' };
    const byState = settlementsByState('gpt-4o', [settlement]);
    expect([...byState.keys()]).toEqual(['gpt-4o', 'pool:org', 'pool:account']);
    expect(byState.get('gpt-4o')).toEqual([{ ...settlement, reservation: laneReservation(reservation) }]);
    expect(byState.get('gpt-4o')?.[0]?.reservation).not.toHaveProperty('pools');
    expect(byState.get(poolStateName('org'))).toEqual([
      {
        reservation: { at: 1_000, costs: reservation.costs, windows: { 'day:tokens': '2026-11-29' } },
        actual: { tokens: 400 },
        id: 'd-1',
      },
    ]);
    expect(byState.get('pool:account')?.[0]?.reservation.windows).toEqual({});
  });

  it("records a settlement that only frees the lane's call slot in the lane alone: a pool has none", () => {
    const release: Settlement = { reservation, actual: {}, id: 'd-4' };
    const same: Settlement = { reservation, actual: { cost: 1, tokens: 900 }, id: 'd-5' };
    expect([...settlementsByState('gpt-4o', [release, same]).keys()]).toEqual(['gpt-4o']);
    const refund: Settlement = { reservation, actual: null, id: 'd-6' };
    expect([...settlementsByState('gpt-4o', [release, refund]).keys()]).toEqual(['gpt-4o', 'pool:org', 'pool:account']);
  });

  it('records a settlement of a lane without pools in the lane alone, in one write with the others', () => {
    const plain = { reservation: { at: 1, costs: { cost: 1 }, windows: {} }, actual: null, id: 'd-2' };
    const byState = settlementsByState('default', [plain, { ...plain, id: 'd-3' }]);
    expect([...byState.entries()]).toEqual([['default', [plain, { ...plain, id: 'd-3' }]]]);
  });
});
