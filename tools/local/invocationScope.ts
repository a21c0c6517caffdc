import { AsyncLocalStorage } from 'node:async_hooks';
import { addMiddleware } from './sdkMiddleware';

/**
 * An invocation of a hosted function killed at its timeout: what the code it was running meets at its next request,
 * since Lambda stops a function at its timeout and nothing after that point runs.
 */
export class KilledAtTimeout extends Error {
  override readonly name = 'KilledAtTimeout';
  constructor() {
    super('the invocation was killed at its timeout: no request of it goes out after that');
  }
}

/** One invocation as the code it runs sees it. */
interface Invocation {
  killed: boolean;
}

const current = new AsyncLocalStorage<Invocation>();

/**
 * Runs `handler` as one invocation: every request it makes through a client made killable (see {@link killable},
 * {@link killableFetch}), however deep in its awaits and timers, throws {@link KilledAtTimeout} once `kill` was
 * called, before it goes out and when its answer comes back. Node cannot stop the handler itself; this stops what it
 * does to the world, which is what a killed Lambda invocation stops.
 */
export function runInvocation<T>(handler: () => Promise<T>): {
  readonly result: Promise<T>;
  readonly kill: () => void;
} {
  const invocation: Invocation = { killed: false };
  const result = current.run(invocation, () => Promise.resolve().then(handler));
  return { result, kill: () => void (invocation.killed = true) };
}

/**
 * `send()`, unless the invocation it runs in was killed, before it is sent or when its answer comes back: then
 * {@link KilledAtTimeout}. Outside an invocation it is `send()`.
 */
async function whileAlive<T>(send: () => Promise<T>): Promise<T> {
  const killed = () => current.getStore()?.killed === true;
  if (killed()) throw new KilledAtTimeout();
  const answer = await send();
  if (killed()) throw new KilledAtTimeout();
  return answer;
}

/**
 * Makes `client`'s requests fail with {@link KilledAtTimeout} in a killed invocation: each attempt (so that a retry
 * does not go out either), right before it leaves and when its answer comes back.
 */
export function killable<C extends Parameters<typeof addMiddleware>[0]>(client: C): C {
  addMiddleware(client, (next) => (args) => whileAlive(() => next(args)), {
    step: 'deserialize',
    priority: 'low',
    name: 'killedAtTimeout',
  });
  return client;
}

/** `inner`, failing with {@link KilledAtTimeout} in a killed invocation, before the request and at its answer. */
export function killableFetch(inner: typeof fetch): typeof fetch {
  return (input, init) => whileAlive(() => inner(input, init));
}
