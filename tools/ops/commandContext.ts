import type { Command } from 'commander';
import type { Clock } from '../../lib/ports/Clock';
import type { OpsTarget } from './target';

/** Where a command's output goes: a readable text, or a JSON document. */
export interface Out {
  print(text: string): void;
  json(value: unknown): void;
}

/**
 * Runs `work` on each target the global options of `command` name (the lane of `--lane`, else every lane), and
 * closes their clients. `oneLane` names a command that refuses several lanes.
 */
export type OnTargets = (
  command: Command,
  work: (target: OpsTarget, out: Out) => Promise<void>,
  options?: { readonly oneLane?: string },
) => Promise<void>;

/** What a group of commands gets from the CLI that holds it. */
export interface CommandContext {
  readonly onTargets: OnTargets;
  readonly clock: Clock;
  /** Marks the run as done with some items failed (exit 1). */
  partial(): void;
}
