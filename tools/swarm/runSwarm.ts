import { runSimulation } from '../simulation/runSimulation';
import { seededRandom } from '../simulation/random';
import { drawCase } from './drawCase';
import {
  FaultyApi,
  faultyOrchestratorPorts,
  faultyWorkerPorts,
  skewedClock,
  type FaultLog,
  type JournalEntry,
} from './faultyPorts';
import { checkInvariants, type Breach } from './invariants';

/** What one seed came to. */
export interface SeedResult {
  readonly seed: number;
  readonly families: readonly string[];
  readonly jobs: number;
  /** Jobs still in a queue when the run's time (an hour) was up: not lost, but not done either. */
  readonly unfinished: number;
  /** The faults injected, by kind. */
  readonly faults: Readonly<Record<string, number>>;
  readonly breaches: readonly Breach[];
}

/** The command that replays seed `seed` exactly. */
export function replayCommand(seed: number): string {
  return `npm run swarm -- --seed ${seed}`;
}

/**
 * Runs one seed: draws its case (see {@link drawCase}), runs the simulation on virtual time with the case's faults
 * injected into what the workers and the orchestrator see, and checks every invariant. Deterministic: the same seed
 * gives the same result.
 */
export async function runSeed(seed: number): Promise<SeedResult> {
  const swarmCase = drawCase(seed);
  const { faults: plan, scenario } = swarmCase;
  const random = seededRandom(seed ^ 0x5eed_f00d);
  const log: FaultLog = new Map();
  let api: FaultyApi | undefined;
  const entries: JournalEntry[] = [];
  const run = await runSimulation(scenario, {
    worker: (ports, clock) => faultyWorkerPorts(ports, plan, random, log, { clock, entries }),
    api: (referee, clock, start) => {
      api = new FaultyApi({ entries }, referee, clock, start, plan, random, log);
      return api;
    },
    workerClock: (clock) => skewedClock(clock, plan.workerSkewMs),
    orchestrator: (ports) => {
      const killAfter = random() < plan.killedRuns ? 1 + Math.floor(random() * 80) : undefined;
      return faultyOrchestratorPorts(ports, plan, killAfter, random, log);
    },
  });
  const faulty = api as FaultyApi | undefined;
  const breaches = checkInvariants({
    swarmCase,
    run,
    journal: entries,
    peakProbes: faulty?.peakProbes ?? 0,
  });
  return {
    seed,
    families: swarmCase.families,
    jobs: scenario.jobs.count,
    unfinished: run.report.stillQueued,
    faults: Object.fromEntries([...log].sort()),
    breaches,
  };
}
