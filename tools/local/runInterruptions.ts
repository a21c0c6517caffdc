/**
 * How the fault suite and the integration tests interrupt a local orchestrator run as a real one is interrupted: a
 * process killed at one of its requests (a timeout, an OOM, a deploy), or frozen for a while after one (a stale lease
 * holder). Both hook the run's own SDK clients.
 */
import type { FunctionClients } from './clients';
import { addMiddleware } from './sdkMiddleware';
import { pause } from './waitFor';

/** How a killed run ends: it was stopped at its request number `afterCalls + 1`, a `command`. */
export class SimulatedCrash extends Error {
  override readonly name = 'SimulatedCrash';
  constructor(
    readonly afterCalls: number,
    readonly command: string,
  ) {
    super(`orchestrator killed (simulated crash) after ${afterCalls} AWS requests, at ${command}`);
  }
}

/** Pauses the run that uses `clients` for `forMs` right after its request number `afterCalls` is answered. */
export function armFreeze(
  clients: FunctionClients,
  { afterCalls, forMs }: { readonly afterCalls: number; readonly forMs: number },
): void {
  let calls = 0;
  for (const client of [clients.dynamodb, clients.sqs, clients.lambda]) {
    addMiddleware(
      client,
      (next) => async (args) => {
        const output = await next(args);
        if (++calls === afterCalls) await pause(forMs);
        return output;
      },
      { step: 'initialize', name: 'simulatedFreeze' },
    );
  }
}

/** Which request of a run is its last: the request's number, its command, and how many of that command so far. */
export type KillPoint = (request: {
  readonly number: number;
  readonly command: string;
  readonly ofCommand: number;
}) => boolean;

/**
 * Kills the run that uses `clients` at the first request `isKillPoint` picks, as a process killed there would stop:
 * that request and every later one never leave and never answer, so the run does nothing more, and `onKill` is told
 * which request it was. The hook sits in the `initialize` step, ahead of the SDK's retries.
 * `DynamoDBDocumentClient.from` shares the bare client's middleware stack, so the store is covered.
 */
export function armKillSwitch(
  clients: FunctionClients,
  isKillPoint: KillPoint,
  onKill: (crash: SimulatedCrash) => void,
): void {
  let calls = 0;
  let killed = false;
  const perCommand = new Map<string, number>();
  const never = new Promise<never>(() => undefined);
  for (const client of [clients.dynamodb, clients.sqs, clients.lambda]) {
    addMiddleware(
      client,
      (next, context) => async (args) => {
        if (killed) return never;
        const command = String(context.commandName ?? 'unknown');
        const ofCommand = (perCommand.get(command) ?? 0) + 1;
        perCommand.set(command, ofCommand);
        if (!isKillPoint({ number: ++calls, command, ofCommand })) return next(args);
        killed = true;
        onKill(new SimulatedCrash(calls - 1, command));
        return never;
      },
      { step: 'initialize', name: 'simulatedCrash' },
    );
  }
}
