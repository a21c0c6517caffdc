/**
 * What a condition scenario found: `held` when the service survived the condition, with a line on what was checked
 * and seen either way.
 */
export interface ConditionCheck {
  readonly held: boolean;
  readonly detail: string;
}

/**
 * A reproduction of one condition the service must survive: a short, exact sequence of late, repeated or lost
 * deliveries, answers and writes, run through the service's own code (the worker, the orchestrator, the stores) on a
 * fake clock, whose check fails if the service breaks a promise under it. The emulator scenarios draw faults at
 * random shares; these pin down the combinations random shares rarely draw.
 */
export interface ConditionScenario {
  /** A short kebab-case name, unique among the fault suite's scenarios. */
  readonly name: string;
  /** The number of the condition it reproduces, in the table of `docs/testing.md`. */
  readonly condition: number;
  /** What it sets up, in a sentence. */
  readonly injects: string;
  /** What a service that does not survive it would do, in a sentence. */
  readonly breaks: string;
  /** Runs the sequence and checks the promise. */
  run(): Promise<ConditionCheck>;
}
