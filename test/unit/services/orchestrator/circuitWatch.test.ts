import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { INITIAL_CIRCUIT, transition } from '../../../../lib/domain/breaker/circuit';
import type { Circuit } from '../../../../lib/domain/breaker/state';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import { CircuitWatch } from '../../../../lib/services/orchestrator/circuitWatch';
import { StateLink } from '../../../../lib/services/orchestrator/stateLink';
import { roomHarness, type RoomHarness } from '../../../helpers/orchestratorRooms';
import { LANE, START, openCircuit } from '../../../helpers/serviceFixtures';

/** The circuit `failureThreshold` transient failures at `at` leave. */
function openedAt(h: RoomHarness, at: number): Circuit {
  let circuit = INITIAL_CIRCUIT;
  for (let i = 0; i < h.config.circuit.failureThreshold; i++)
    circuit = transition(circuit, { type: 'transient-failure' }, at, circuitPolicyFrom(h.config.circuit));
  return circuit;
}

describe('CircuitWatch', () => {
  describe('letsThrough', () => {
    it('starts the slow-start ramp when the circuit lets work through again, once', async () => {
      const h = roomHarness();
      const watch = new CircuitWatch(h.run, new StateLink(h.run), h.ports, h.pacer, openedAt(h, START));
      const startRamp = jest.spyOn(h.pacer, 'startRamp');
      expect(watch.letsThrough(START)).toBe(false);

      await expect(watch.read()).resolves.toBe(true); // the store holds no circuit: closed
      expect(watch.letsThrough(START + 10)).toBe(true);
      expect(watch.letsThrough(START + 20)).toBe(true);
      expect(startRamp.mock.calls).toEqual([[START + 10]]);
    });

    it('starts no ramp for a circuit that let work through from the start', () => {
      const h = roomHarness();
      const watch = new CircuitWatch(h.run, new StateLink(h.run), h.ports, h.pacer, INITIAL_CIRCUIT);
      const startRamp = jest.spyOn(h.pacer, 'startRamp');

      expect(watch.letsThrough(START)).toBe(true);
      expect(startRamp).not.toHaveBeenCalled();
    });

    it("hands a 429's pause to the pacer once", async () => {
      const h = roomHarness();
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'rate-limited', retryAt: START + 3_000 },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      const watch = new CircuitWatch(h.run, new StateLink(h.run), h.ports, h.pacer, INITIAL_CIRCUIT);
      const pause = jest.spyOn(h.pacer, 'pause');
      await watch.read();

      expect(watch.letsThrough(START)).toBe(true);
      expect(watch.letsThrough(START + 10)).toBe(true);
      expect(pause.mock.calls).toEqual([[START + 3_000, h.ports.random]]);
    });
  });

  describe('held', () => {
    it('lets nothing through while an operator holds the lane, and ramps up once it is resumed', async () => {
      const h = roomHarness();
      const watch = new CircuitWatch(h.run, new StateLink(h.run), h.ports, h.pacer, INITIAL_CIRCUIT);
      const startRamp = jest.spyOn(h.pacer, 'startRamp');
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'operator-paused', by: 'alice' },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      await watch.read();
      expect(watch.held).toBe(true);
      expect(watch.letsThrough(START)).toBe(false);

      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'operator-resumed', by: 'bob' },
        START + 5,
        circuitPolicyFrom(h.config.circuit),
      );
      await watch.read();
      expect(watch.held).toBe(false);
      expect(watch.letsThrough(START + 10)).toBe(true);
      expect(startRamp.mock.calls).toEqual([[START + 10]]);
    });
  });

  describe('read', () => {
    it('keeps the circuit last read when the store fails, and says so', async () => {
      const h = roomHarness();
      const link = new StateLink(h.run);
      const watch = new CircuitWatch(h.run, link, h.ports, h.pacer, openedAt(h, START));
      jest.spyOn(h.stores.circuit, 'loadCircuit').mockRejectedValue(new Error('throttled'));

      await expect(watch.read()).resolves.toBe(false);
      expect(link.side.kind).toBe('outage');
      expect(watch.letsThrough(START)).toBe(false);
    });
  });

  describe('sendHealthCheckIfDue', () => {
    it('sends nothing before the check is due, and says when it is', async () => {
      const h = roomHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      const watch = new CircuitWatch(
        h.run,
        new StateLink(h.run),
        h.ports,
        h.pacer,
        await loadCircuit(h.stores.circuit, LANE),
      );

      await expect(watch.sendHealthCheckIfDue(START + 1_000)).resolves.toBe(START + 2_000);
      expect(h.run.tally.healthChecks).toBe(0);
    });

    it('sends none while an operator holds the lane, even once it is due', async () => {
      const h = roomHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      await applyCircuitEvent(
        h.stores.circuit,
        LANE,
        { type: 'operator-paused', by: 'alice' },
        START,
        circuitPolicyFrom(h.config.circuit),
      );
      const invoke = jest.spyOn(h.ports.invoker, 'invoke');
      const watch = new CircuitWatch(
        h.run,
        new StateLink(h.run),
        h.ports,
        h.pacer,
        await loadCircuit(h.stores.circuit, LANE),
      );

      await expect(watch.sendHealthCheckIfDue(START + 2_000)).resolves.toBeUndefined();
      expect(invoke).not.toHaveBeenCalled();
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({ state: { status: 'open' } });
    });

    it('sends the due check once it has won the circuit write, and counts it', async () => {
      const h = roomHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      const invoke = jest.spyOn(h.ports.invoker, 'invoke');
      const watch = new CircuitWatch(
        h.run,
        new StateLink(h.run),
        h.ports,
        h.pacer,
        await loadCircuit(h.stores.circuit, LANE),
      );

      await watch.sendHealthCheckIfDue(START + 2_000);
      expect(invoke.mock.calls).toEqual([
        [{ kind: 'health-check', lane: LANE, checkId: 'id-1', sentAt: START + 2_000 }],
      ]);
      expect(h.events).toEqual([
        { type: 'circuit-seen', at: START, status: 'open' },
        {
          type: 'circuit-transition',
          lane: LANE,
          at: START + 2_000,
          from: 'open',
          to: 'half-open',
          reason: 'health check id-1 sent',
        },
        { type: 'circuit-seen', at: START + 2_000, status: 'half-open', previous: 'open' },
        { type: 'health-check-sent', at: START + 2_000, checkId: 'id-1' },
      ]);
      expect(h.run.tally.healthChecks).toBe(1);
      await expect(loadCircuit(h.stores.circuit, LANE)).resolves.toMatchObject({
        state: { status: 'half-open', checkId: 'id-1' },
      });
    });

    it('sends nothing and returns undefined when the circuit write fails: the outage takes over', async () => {
      const h = roomHarness();
      await openCircuit(h.stores.circuit, h.config, START);
      const link = new StateLink(h.run);
      const watch = new CircuitWatch(h.run, link, h.ports, h.pacer, await loadCircuit(h.stores.circuit, LANE));
      jest.spyOn(h.stores.circuit, 'saveCircuit').mockRejectedValue(new Error('throttled'));
      const invoke = jest.spyOn(h.ports.invoker, 'invoke');

      await expect(watch.sendHealthCheckIfDue(START + 2_000)).resolves.toBeUndefined();
      expect(invoke).not.toHaveBeenCalled();
      expect(link.side.kind).toBe('outage');
    });
  });
});
