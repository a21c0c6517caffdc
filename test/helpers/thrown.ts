/**
 * The error of class `type` that `run` throws. Fails the test when `run` throws nothing, and rethrows any other
 * error, so assertions on the returned error's fields always run.
 */
export function thrown<E extends Error>(type: abstract new (...args: never[]) => E, run: () => unknown): E {
  try {
    run();
  } catch (error) {
    if (error instanceof type) return error;
    throw error;
  }
  throw new Error(`expected a ${type.name}`);
}
