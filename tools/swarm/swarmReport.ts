import { INVARIANTS, type InvariantName } from './invariants';
import { replayCommand, type SeedResult } from './runSwarm';

/** The swarm's summary, as `npm run swarm -- --json` prints it. */
export interface SwarmSummary {
  readonly seedsRun: number;
  readonly firstSeed: number;
  /** Seeds with at least one breach. */
  readonly breaches: number;
  readonly breachesByInvariant: Readonly<Partial<Record<InvariantName, number>>>;
  readonly invariantsChecked: readonly InvariantName[];
  /** How many seeds drew each fault family. */
  readonly families: Readonly<Record<string, number>>;
  /** Seeds whose run ended with jobs still queued (not lost: a liveness figure, not a breach), and those jobs. */
  readonly unfinishedSeeds: number;
  readonly unfinishedJobs: number;
  /** Faults injected over all seeds, by kind. */
  readonly faultsInjected: number;
  readonly seedsPerSecond: number;
  /** Each breached seed, with the command that replays it. */
  readonly breached: readonly {
    readonly seed: number;
    readonly replay: string;
    readonly breaches: SeedResult['breaches'];
  }[];
}

/** Sums the seeds' results; `seconds` is the wall time they took. */
export function summarize(results: readonly SeedResult[], seconds: number): SwarmSummary {
  const byInvariant: Partial<Record<InvariantName, number>> = {};
  const families: Record<string, number> = {};
  let faultsInjected = 0;
  for (const result of results) {
    for (const breach of result.breaches) byInvariant[breach.invariant] = (byInvariant[breach.invariant] ?? 0) + 1;
    for (const family of result.families) families[family] = (families[family] ?? 0) + 1;
    faultsInjected += Object.values(result.faults).reduce((sum, n) => sum + n, 0);
  }
  const breached = results.filter((r) => r.breaches.length > 0);
  return {
    seedsRun: results.length,
    firstSeed: results[0]?.seed ?? 0,
    breaches: breached.length,
    breachesByInvariant: byInvariant,
    invariantsChecked: Object.keys(INVARIANTS) as InvariantName[],
    families: Object.fromEntries(Object.entries(families).sort()),
    unfinishedSeeds: results.filter((r) => r.unfinished > 0).length,
    unfinishedJobs: results.reduce((sum, r) => sum + r.unfinished, 0),
    faultsInjected,
    seedsPerSecond: seconds === 0 ? 0 : Math.round((results.length / seconds) * 10) / 10,
    breached: breached.map((r) => ({ seed: r.seed, replay: replayCommand(r.seed), breaches: r.breaches })),
  };
}

/** The summary for a person: the totals, then each breach with its replay command. */
export function formatSummary(summary: SwarmSummary): string {
  const lines = [
    `seeds ${summary.firstSeed}…${summary.firstSeed + summary.seedsRun - 1}: ${summary.seedsRun} run, ${summary.breaches} breached, ${summary.seedsPerSecond} seeds/s, ${summary.faultsInjected} faults injected`,
    `invariants checked: ${summary.invariantsChecked.join(', ')}`,
    `unfinished after an hour: ${summary.unfinishedJobs} jobs in ${summary.unfinishedSeeds} seeds (still queued, not lost)`,
    `families drawn: ${Object.entries(summary.families)
      .map(([family, n]) => `${family} ${n}`)
      .join(', ')}`,
  ];
  for (const { seed, replay, breaches } of summary.breached) {
    lines.push(`BREACH seed ${seed}: replay with \`${replay}\``);
    for (const breach of breaches) lines.push(`  ${breach.invariant}: ${breach.detail}`);
  }
  return lines.join('\n');
}
