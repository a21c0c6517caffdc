import { LeaseLostError } from '../../../../lib/errors';
import { StateLink } from '../../../../lib/services/orchestrator/stateLink';
import { roomHarness } from '../../../helpers/orchestratorRooms';
import { LANE, START } from '../../../helpers/serviceFixtures';

describe('StateLink', () => {
  const failing = (h: ReturnType<typeof roomHarness>) => () => h.ports.stores.ledger.pendingSettlements(LANE);

  describe('attempt', () => {
    it("passes a call's value through and stays in sync", async () => {
      const h = roomHarness();
      const link = new StateLink(h.run);

      await expect(link.attempt(async () => 42)).resolves.toEqual({ value: 42 });
      expect(link.side).toEqual({ kind: 'in-sync' });
      expect(h.events).toEqual([]);
    });

    it('starts an outage at the first failure and keeps its start while calls fail, the back-off doubling', async () => {
      const h = roomHarness();
      h.flushes.failing.add('pendingSettlements');
      const link = new StateLink(h.run);

      await expect(link.attempt(failing(h))).resolves.toBeUndefined();
      expect(link.side).toEqual({ kind: 'outage', since: START, retryAt: START + 100 });
      await h.clock.advance(100);
      await link.attempt(failing(h));

      expect(link.side).toEqual({ kind: 'outage', since: START, retryAt: START + 300 });
      expect(h.events).toEqual([
        {
          type: 'state-unavailable',
          at: START,
          operation: 'pendingSettlements',
          error: expect.any(String),
          retryAt: START + 100,
        },
        {
          type: 'state-unavailable',
          at: START + 100,
          operation: 'pendingSettlements',
          error: expect.any(String),
          retryAt: START + 300,
        },
      ]);
    });

    it('leaves an outage standing when a call succeeds: only recovered() ends it', async () => {
      const h = roomHarness();
      h.flushes.failing.add('pendingSettlements');
      const link = new StateLink(h.run);
      await link.attempt(failing(h));

      await expect(link.attempt(async () => 'ok')).resolves.toEqual({ value: 'ok' });
      expect(link.side.kind).toBe('outage');
    });

    it('throws what is no store failure, a lost lease included, and stays in sync', async () => {
      const h = roomHarness();
      const link = new StateLink(h.run);

      await expect(link.attempt(() => Promise.reject(new LeaseLostError(LANE, 1)))).rejects.toBeInstanceOf(
        LeaseLostError,
      );
      expect(link.side).toEqual({ kind: 'in-sync' });
    });
  });

  describe('waiting', () => {
    it("is true only before an outage's next try", async () => {
      const h = roomHarness();
      h.flushes.failing.add('pendingSettlements');
      const link = new StateLink(h.run);
      expect(link.waiting(START)).toBe(false);
      await link.attempt(failing(h));

      expect(link.waiting(START + 99)).toBe(true);
      expect(link.waiting(START + 100)).toBe(false);
    });
  });

  describe('recovered', () => {
    it('ends an outage, reporting how long the store was unavailable, and starts the next back-off afresh', async () => {
      const h = roomHarness();
      h.flushes.failing.add('pendingSettlements');
      const link = new StateLink(h.run);
      await link.attempt(failing(h));
      await h.clock.advance(100);
      await link.attempt(failing(h));
      await h.clock.advance(300);

      link.recovered();
      expect(link.side).toEqual({ kind: 'in-sync' });
      expect(h.events[h.events.length - 1]).toEqual({ type: 'state-recovered', at: START + 400, unavailableMs: 400 });
      await link.attempt(failing(h));
      expect(link.side).toEqual({ kind: 'outage', since: START + 400, retryAt: START + 500 });
    });

    it('reports nothing when there was no outage', () => {
      const h = roomHarness();
      new StateLink(h.run).recovered();
      expect(h.events).toEqual([]);
    });
  });
});
