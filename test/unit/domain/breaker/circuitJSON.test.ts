import { healthCheckDueAt, INITIAL_CIRCUIT, transition } from '../../../../lib/domain/breaker/circuit';
import { circuitFromJSON, circuitToJSON, LEGACY_OPEN_REASON } from '../../../../lib/domain/breaker/circuitJSON';
import type { Circuit } from '../../../../lib/domain/breaker/state';
import { MAX_TRANSITIONS_KEPT } from '../../../../lib/domain/breaker/transitionLog';
import { StateFormatError } from '../../../../lib/errors';
import { circuitIn, circuitsAt, failures, P, started, T0 } from '../../../helpers/circuitFixtures';

// The tests of the codec never move the clock: every circuit is built at T0.
const { applyAll, openCircuit, halfOpenCircuit } = circuitsAt(() => T0);

describe('circuitToJSON', () => {
  describe('closed', () => {
    it('writes the initial circuit as plain JSON with a numeric version', () => {
      expect(circuitToJSON(INITIAL_CIRCUIT)).toEqual({
        version: 0,
        state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 },
        pausedUntil: 0,
      });
    });

    it('shares no array with the circuit', () => {
      const circuit = applyAll(INITIAL_CIRCUIT, failures(2));
      const json = circuitToJSON(circuit);
      expect(json.state).not.toBe(circuit.state);
      expect(json.state.status === 'closed' && json.state.failures).not.toBe(
        circuit.state.status === 'closed' && circuit.state.failures,
      );
    });
  });
});

describe('circuitFromJSON', () => {
  const samples: [string, () => Circuit][] = [
    [
      'closed',
      () => ({
        state: { status: 'closed', failures: [T0 - 5, T0], closedAt: T0 - 60_000, reopenStreak: 2 },
        pausedUntil: T0 + 9,
        clientErrorRun: 0,
        hold: null,
        transitions: [],
        version: 12,
      }),
    ],
    [
      'closed with a client-error run',
      () => circuitIn({ status: 'closed', failures: [], closedAt: null, reopenStreak: 0 }, 0, 4),
    ],
    ['never-closed', () => INITIAL_CIRCUIT],
    ['open', () => openCircuit({ failedChecks: 3, reopenStreak: 1 })],
    ['half-open', () => halfOpenCircuit({ failedChecks: 1 })],
    ['half-open, started', () => halfOpenCircuit({ probeStartedAt: T0 + 3 })],
    ['open on a caller rejection', () => openCircuit({ reason: 'caller rejected: HTTP 403 Forbidden' })],
    ['open, tried with a job', () => openCircuit({ reason: 'caller rejected: HTTP 401 Unauthorized', trial: 'job' })],
    ['half-open, tried with a job', () => halfOpenCircuit({ probeStartedAt: T0 + 3, trial: 'job' })],
    [
      'forced open, paused, with transitions',
      () =>
        applyAll(openCircuit(), [
          { type: 'operator-opened', by: 'alice' },
          { type: 'operator-paused', by: 'bob' },
        ]),
    ],
  ];

  describe.each(samples)('%s', (_label, make) => {
    it('round-trips through circuitToJSON', () => {
      expect(circuitFromJSON(circuitToJSON(make()))).toEqual(make());
    });

    it('round-trips through JSON text', () => {
      expect(circuitFromJSON(JSON.parse(JSON.stringify(circuitToJSON(make()))))).toEqual(make());
    });
  });

  describe('top level', () => {
    it('ignores store bookkeeping beside version, state and pausedUntil', () => {
      expect(circuitFromJSON({ ...circuitToJSON(INITIAL_CIRCUIT), pk: 'lane#sms', updatedAt: 5 })).toEqual(
        INITIAL_CIRCUIT,
      );
    });

    it('returns a frozen circuit', () => {
      expect(Object.isFrozen(circuitFromJSON(circuitToJSON(openCircuit())))).toBe(true);
    });
  });

  describe('stored before the probe claim and caller rejections', () => {
    const legacyOpen = { status: 'open', openedAt: T0, nextCheckAt: T0 + 10_000, failedChecks: 1, reopenStreak: 0 };
    const legacyHalfOpen = {
      status: 'half-open',
      openedAt: T0,
      checkId: 'c1',
      checkSentAt: T0 + 10_000,
      failedChecks: 1,
      reopenStreak: 0,
    };

    it('reads a missing hold as none and missing transitions as none, and writes neither while there are none', () => {
      const circuit = circuitFromJSON({ version: 3, state: legacyOpen, pausedUntil: 0 });
      expect(circuit.hold).toBeNull();
      expect(circuit.transitions).toEqual([]);
      expect(circuitToJSON(circuit)).not.toHaveProperty('hold');
      expect(circuitToJSON(circuit)).not.toHaveProperty('transitions');
    });

    it(`keeps the last ${MAX_TRANSITIONS_KEPT} of more transitions stored`, () => {
      const transitions = Array.from({ length: 12 }, (_, i) => ({
        at: T0 + i,
        from: 'closed',
        to: 'closed',
        reason: `r${i}`,
      }));
      expect(circuitFromJSON({ version: 3, state: legacyOpen, pausedUntil: 0, transitions }).transitions).toEqual(
        transitions.slice(2),
      );
    });

    it('reads a missing clientErrorRun as 0, and writes none while it is 0', () => {
      const circuit = circuitFromJSON({
        version: 3,
        state: { status: 'closed', failures: [], closedAt: null, reopenStreak: 0 },
        pausedUntil: 0,
      });
      expect(circuit.clientErrorRun).toBe(0);
      expect(circuitToJSON(circuit)).not.toHaveProperty('clientErrorRun');
    });

    it('reads open and half-open states without trial as tried with a probe, and writes none for them', () => {
      const open = circuitFromJSON({ version: 3, state: legacyOpen, pausedUntil: 0 });
      const halfOpen = circuitFromJSON({ version: 3, state: legacyHalfOpen, pausedUntil: 0 });
      expect(open.state).not.toHaveProperty('trial');
      expect(halfOpen.state).not.toHaveProperty('trial');
      expect(circuitToJSON(open).state).not.toHaveProperty('trial');
    });

    it('reads an open state without reason as opened on transient failures', () => {
      expect(circuitFromJSON({ version: 3, state: legacyOpen, pausedUntil: 0 }).state).toEqual({
        ...legacyOpen,
        reason: LEGACY_OPEN_REASON,
      });
    });

    it('reads a half-open state without probeStartedAt as started at its send, so no worker may claim it again', () => {
      const circuit = circuitFromJSON({ version: 3, state: legacyHalfOpen, pausedUntil: 0 });
      expect(circuit.state).toEqual({ ...legacyHalfOpen, probeStartedAt: T0 + 10_000, reason: LEGACY_OPEN_REASON });
      expect(transition(circuit, started('c1'), T0 + 10_001, P)).toBe(circuit);
      expect(healthCheckDueAt(circuit, P.probe)).toBe(T0 + 25_000);
    });
  });

  describe('malformed', () => {
    const closed = { status: 'closed', failures: [1, 2], closedAt: null, reopenStreak: 0 };
    const open = { status: 'open', openedAt: 1, nextCheckAt: 2, failedChecks: 0, reopenStreak: 0 };
    const halfOpen = {
      status: 'half-open',
      openedAt: 1,
      checkId: 'c',
      checkSentAt: 2,
      failedChecks: 0,
      reopenStreak: 0,
    };
    const wrap = (state: unknown): Record<string, unknown> => ({ version: 1, state, pausedUntil: 0 });
    const without = (record: Record<string, unknown>, key: string): Record<string, unknown> =>
      Object.fromEntries(Object.entries(record).filter(([k]) => k !== key));

    it.each<[string, unknown, RegExp]>([
      ['an open state tried by a probe', wrap({ ...open, trial: 'probe' }), /circuit\.state\.trial must be 'job'/],
      ['a half-open state with a null trial', wrap({ ...halfOpen, trial: null }), /circuit\.state\.trial must be/],
      ['a closed state with a trial', wrap({ ...closed, trial: 'job' }), /circuit\.state\.trial is not a field/],
      ['a string', 'closed', /^stored circuit must be an object; got "closed"$/],
      ['null', null, /^stored circuit must be an object; got null$/],
      ['an array', [], /^stored circuit must be an object/],
      [
        'a non-numeric version',
        { ...wrap(closed), version: '1' },
        /^stored circuit\.version must be a non-negative integer; got "1"$/,
      ],
      [
        'a missing version',
        without(wrap(closed), 'version'),
        /^stored circuit\.version must be a non-negative integer; got nothing$/,
      ],
      [
        'a negative version',
        { ...wrap(closed), version: -1 },
        /circuit\.version must be a non-negative integer; got -1/,
      ],
      [
        'a fractional version',
        { ...wrap(closed), version: 1.5 },
        /circuit\.version must be a non-negative integer; got 1.5/,
      ],
      ['a missing pausedUntil', without(wrap(closed), 'pausedUntil'), /circuit\.pausedUntil must be a finite number/],
      ['a missing state', without(wrap(closed), 'state'), /circuit\.state must be an object; got nothing/],
      [
        'an unknown status',
        wrap({ ...closed, status: 'opening' }),
        /circuit\.state\.status must be 'closed', 'open' or 'half-open'; got "opening"/,
      ],
      ['a missing status', wrap(without(closed, 'status')), /circuit\.state\.status must be/],
      [
        'closed without failures',
        wrap(without(closed, 'failures')),
        /circuit\.state\.failures must be an ascending array of epoch ms; got nothing/,
      ],
      [
        'closed with non-numeric failures',
        wrap({ ...closed, failures: ['1'] }),
        /circuit\.state\.failures must be an ascending array/,
      ],
      [
        'closed with failures out of order',
        wrap({ ...closed, failures: [2, 1] }),
        /circuit\.state\.failures must be an ascending array/,
      ],
      [
        'closed with a string closedAt',
        wrap({ ...closed, closedAt: '5' }),
        /circuit\.state\.closedAt must be a finite number/,
      ],
      [
        'closed without closedAt',
        wrap(without(closed, 'closedAt')),
        /circuit\.state\.closedAt must be a finite number/,
      ],
      [
        'closed without reopenStreak',
        wrap(without(closed, 'reopenStreak')),
        /circuit\.state\.reopenStreak must be a non-negative integer/,
      ],
      [
        'closed carrying open data',
        wrap({ ...closed, openedAt: 1 }),
        /circuit\.state\.openedAt is not a field of the 'closed' state/,
      ],
      [
        'open without nextCheckAt',
        wrap(without(open, 'nextCheckAt')),
        /circuit\.state\.nextCheckAt must be a finite number/,
      ],
      ['open without openedAt', wrap(without(open, 'openedAt')), /circuit\.state\.openedAt must be a finite number/],
      [
        'open with negative failedChecks',
        wrap({ ...open, failedChecks: -1 }),
        /circuit\.state\.failedChecks must be a non-negative integer/,
      ],
      [
        'open carrying a checkId',
        wrap({ ...open, checkId: 'c' }),
        /circuit\.state\.checkId is not a field of the 'open' state/,
      ],
      [
        'half-open without checkId',
        wrap(without(halfOpen, 'checkId')),
        /circuit\.state\.checkId must be a non-empty string; got nothing/,
      ],
      [
        'half-open with an empty checkId',
        wrap({ ...halfOpen, checkId: '' }),
        /circuit\.state\.checkId must be a non-empty string/,
      ],
      [
        'half-open with a numeric checkId',
        wrap({ ...halfOpen, checkId: 7 }),
        /circuit\.state\.checkId must be a non-empty string; got 7/,
      ],
      [
        'half-open without checkSentAt',
        wrap(without(halfOpen, 'checkSentAt')),
        /circuit\.state\.checkSentAt must be a finite number/,
      ],
      [
        'half-open without reopenStreak',
        wrap(without(halfOpen, 'reopenStreak')),
        /circuit\.state\.reopenStreak must be a non-negative integer/,
      ],
      [
        'half-open with a string probeStartedAt',
        wrap({ ...halfOpen, probeStartedAt: '3' }),
        /circuit\.state\.probeStartedAt must be a finite number/,
      ],
      ['open with an empty reason', wrap({ ...open, reason: '' }), /circuit\.state\.reason must be a non-empty string/],
      [
        'half-open with a numeric reason',
        wrap({ ...halfOpen, reason: 401 }),
        /circuit\.state\.reason must be a non-empty string; got 401/,
      ],
      [
        'a negative clientErrorRun',
        { ...wrap(closed), clientErrorRun: -1 },
        /circuit\.clientErrorRun must be a non-negative integer; got -1/,
      ],
      [
        'open with byOperator false',
        wrap({ ...open, byOperator: false }),
        /circuit\.state\.byOperator must be true when present; got false/,
      ],
      [
        'a hold without by',
        { ...wrap(closed), hold: { since: 1 } },
        /circuit\.hold\.by must be a non-empty string; got nothing/,
      ],
      [
        'a hold with a string since',
        { ...wrap(closed), hold: { since: '1', by: 'a' } },
        /circuit\.hold\.since must be a finite number/,
      ],
      [
        'a hold with another key',
        { ...wrap(closed), hold: { since: 1, by: 'a', until: 2 } },
        /circuit\.hold\.until is not a field of the hold/,
      ],
      [
        'transitions that are not a list',
        { ...wrap(closed), transitions: {} },
        /circuit\.transitions must be an array/,
      ],
      [
        'a transition to an unknown status',
        { ...wrap(closed), transitions: [{ at: 1, from: 'closed', to: 'paused', reason: 'r' }] },
        /circuit\.transitions\[0\]\.to must be 'closed', 'open' or 'half-open'; got "paused"/,
      ],
      [
        'a transition without reason',
        { ...wrap(closed), transitions: [{ at: 1, from: 'closed', to: 'open' }] },
        /circuit\.transitions\[0\]\.reason must be a non-empty string/,
      ],
    ])('refuses %s with a StateFormatError naming the field', (_label, json, message) => {
      expect(() => circuitFromJSON(json)).toThrow(StateFormatError);
      expect(() => circuitFromJSON(json)).toThrow(message);
    });
  });
});
