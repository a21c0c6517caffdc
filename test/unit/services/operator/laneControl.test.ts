import { FakeClock } from '../../../../tools/memory/FakeClock';
import { type MemoryCircuitStore, memoryStores } from '../../../../tools/memory/MemoryStores';
import type { CircuitJSON } from '../../../../lib/domain/breaker/circuitJSON';
import type { CircuitStore } from '../../../../lib/ports/CircuitStore';
import { circuitPolicyFrom } from '../../../../lib/domain/breaker/policy';
import { applyCircuitEvent, loadCircuit } from '../../../../lib/services/circuitUpdates';
import {
  forceCircuit,
  pauseLane,
  resumeLane,
  type LaneControlDeps,
} from '../../../../lib/services/operator/laneControl';
import { MAX_OPERATOR_NAME } from '../../../../lib/services/operator/operatorName';
import { LANE, START, openCircuit, testConfig } from '../../../helpers/serviceFixtures';

const CONFIG = testConfig();
const POLICY = circuitPolicyFrom(CONFIG.circuit);
const AT = new Date(START).toISOString();

function deps(): LaneControlDeps & { readonly circuits: MemoryCircuitStore; readonly clock: FakeClock } {
  return { circuits: memoryStores().circuit, clock: new FakeClock(START), lane: LANE };
}

describe('pauseLane', () => {
  it('holds the lane for the operator, stores the hold with its transition, and says so', async () => {
    const d = deps();
    const result = await pauseLane(d, 'alice');
    expect(result).toEqual({
      lane: LANE,
      action: 'pause',
      at: START,
      changed: true,
      message: `lane '${LANE}' paused by alice since ${AT}: nothing is dispatched until it is resumed`,
      paused: { since: START, by: 'alice' },
      circuit: {
        status: 'closed',
        recentTransitions: [{ at: START, from: 'closed', to: 'closed', reason: 'paused by operator (alice)' }],
      },
    });
    await expect(loadCircuit(d.circuits, LANE)).resolves.toMatchObject({
      hold: { since: START, by: 'alice' },
      version: 1,
    });
  });

  it('leaves a paused lane as it is, and says who paused it and since when', async () => {
    const d = deps();
    await pauseLane(d, 'alice');
    await d.clock.advance(60_000);
    const again = await pauseLane(d, 'bob');
    expect(again).toMatchObject({
      changed: false,
      at: START + 60_000,
      message: `lane '${LANE}' was already paused by alice since ${AT}`,
      paused: { since: START, by: 'alice' },
    });
    await expect(loadCircuit(d.circuits, LANE)).resolves.toMatchObject({ version: 1 });
  });

  it('keeps a transition a worker wrote in between: it reloads and applies the pause on top', async () => {
    const d = deps();
    const save = d.circuits.saveCircuit.bind(d.circuits);
    let raced = false;
    jest.spyOn(d.circuits, 'saveCircuit').mockImplementation(async (lane: string, next: CircuitJSON) => {
      if (!raced) {
        raced = true;
        const worker: CircuitStore = {
          loadCircuit: (l) => d.circuits.loadCircuit(l),
          refusalRun: (l) => d.circuits.refusalRun(l),
          saveCircuit: save,
        };
        await applyCircuitEvent(worker, lane, { type: 'transient-failure' }, START, POLICY);
      }
      return save(lane, next);
    });

    await expect(pauseLane(d, 'alice')).resolves.toMatchObject({ changed: true });

    await expect(loadCircuit(d.circuits, LANE)).resolves.toMatchObject({
      state: { status: 'closed', failures: [START] },
      hold: { by: 'alice' },
      version: 2,
    });
  });

  it('trims the name, and refuses a blank one or one too long, writing nothing', async () => {
    const d = deps();
    await expect(pauseLane(d, '  ')).rejects.toThrow(RangeError);
    await expect(pauseLane(d, 'x'.repeat(MAX_OPERATOR_NAME + 1))).rejects.toThrow(RangeError);
    await expect(d.circuits.loadCircuit(LANE)).resolves.toBeUndefined();
    await expect(pauseLane(d, ' alice ')).resolves.toMatchObject({ paused: { by: 'alice' } });
  });
});

describe('resumeLane', () => {
  it('clears the hold and records the resume after the pause', async () => {
    const d = deps();
    await pauseLane(d, 'alice');
    await d.clock.advance(5_000);
    const result = await resumeLane(d, 'bob');
    expect(result).toMatchObject({
      action: 'resume',
      changed: true,
      message: `lane '${LANE}' resumed by bob`,
      paused: null,
    });
    expect(result.circuit.recentTransitions.map((t) => t.reason)).toEqual([
      'paused by operator (alice)',
      'resumed by operator (bob)',
    ]);
    await expect(loadCircuit(d.circuits, LANE)).resolves.toMatchObject({ hold: null, version: 2 });
  });

  it('leaves a lane not paused as it is', async () => {
    const d = deps();
    await expect(resumeLane(d, 'bob')).resolves.toMatchObject({
      changed: false,
      message: `lane '${LANE}' was not paused`,
    });
    await expect(d.circuits.loadCircuit(LANE)).resolves.toBeUndefined();
  });

  it('says when the circuit still holds jobs back after the resume', async () => {
    const d = deps();
    await openCircuit(d.circuits, CONFIG, START);
    await pauseLane(d, 'alice');
    await expect(resumeLane(d, 'bob')).resolves.toMatchObject({
      changed: true,
      message: `lane '${LANE}' resumed by bob, but its circuit is open (3 transient failures within 10 s): jobs wait until it closes`,
    });
  });
});

describe('forceCircuit', () => {
  it('opens the circuit for the operator, with no health check until an operator closes it', async () => {
    const d = deps();
    const result = await forceCircuit(d, 'open', 'alice');
    expect(result).toEqual({
      lane: LANE,
      action: 'circuit-open',
      at: START,
      changed: true,
      message: `circuit of lane '${LANE}' opened by alice: no job and no health check goes until an operator closes it`,
      paused: null,
      circuit: {
        status: 'open',
        reason: 'opened by operator (alice)',
        openedAt: START,
        byOperator: true,
        recentTransitions: [{ at: START, from: 'closed', to: 'open', reason: 'opened by operator (alice)' }],
      },
    });
    await expect(forceCircuit(d, 'open', 'bob')).resolves.toMatchObject({
      changed: false,
      message: `circuit of lane '${LANE}' was already open: opened by operator (alice)`,
    });
  });

  it('takes over a circuit the breaker opened', async () => {
    const d = deps();
    await openCircuit(d.circuits, CONFIG, START);
    await expect(forceCircuit(d, 'open', 'alice')).resolves.toMatchObject({
      changed: true,
      circuit: { status: 'open', byOperator: true, openedAt: START },
    });
  });

  it.each([
    [
      'forced open',
      (d: LaneControlDeps) => forceCircuit(d, 'open', 'alice').then(() => 'open: opened by operator (alice)'),
    ],
    [
      'opened by the breaker',
      (d: LaneControlDeps) =>
        openCircuit(d.circuits, CONFIG, START).then(() => 'open: 3 transient failures within 10 s'),
    ],
    [
      'half-open',
      async (d: LaneControlDeps) => {
        await openCircuit(d.circuits, CONFIG, START);
        await applyCircuitEvent(d.circuits, LANE, { type: 'health-check-sent', checkId: 'c-1' }, START + 2_000, POLICY);
        return 'half-open: 3 transient failures within 10 s';
      },
    ],
  ])('closes a circuit %s, saying what it was', async (_label, make) => {
    const d = deps();
    const was = await make(d);
    await d.clock.advanceTo(START + 3_000);
    const result = await forceCircuit(d, 'closed', 'bob');
    expect(result).toMatchObject({
      action: 'circuit-close',
      changed: true,
      message: `circuit of lane '${LANE}' closed by bob (it was ${was})`,
      circuit: { status: 'closed' },
    });
    expect(result.circuit.recentTransitions.at(-1)).toEqual({
      at: START + 3_000,
      from: was.split(':')[0],
      to: 'closed',
      reason: 'closed by operator (bob)',
    });
    await expect(loadCircuit(d.circuits, LANE)).resolves.toMatchObject({
      state: { status: 'closed', closedAt: START + 3_000 },
    });
  });

  it('leaves a closed circuit as it is, and says that a paused lane stays paused once closed', async () => {
    const d = deps();
    await expect(forceCircuit(d, 'closed', 'bob')).resolves.toMatchObject({
      changed: false,
      message: `circuit of lane '${LANE}' was already closed`,
    });
    await forceCircuit(d, 'open', 'alice');
    await pauseLane(d, 'alice');
    await expect(forceCircuit(d, 'closed', 'bob')).resolves.toMatchObject({
      changed: true,
      message: `circuit of lane '${LANE}' closed by bob (it was open: opened by operator (alice)); the lane stays paused by alice since ${AT} until it is resumed`,
      paused: { since: START, by: 'alice' },
    });
  });
});
