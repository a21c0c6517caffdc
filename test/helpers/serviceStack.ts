import { createServiceStack as createStack, type ServiceStack } from '../../tools/local/serviceStack';
import type { ServiceStackOptions } from '../../tools/local/stackOptions';
import { testEmulators } from './awsClients';

export * from '../../tools/local/serviceStack';
export * from '../../tools/local/stackOptions';
export { SimulatedCrash } from '../../tools/local/runInterruptions';

/** A {@link ServiceStack} on the emulators that jest's globalSetup started. */
export function createServiceStack(options: Omit<ServiceStackOptions, 'emulators'>): Promise<ServiceStack> {
  return createStack({ ...options, emulators: testEmulators() });
}
