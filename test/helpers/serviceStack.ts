import { createServiceStack as createStack, type ServiceStack, type ServiceStackOptions } from '../../lib/local/serviceStack';
import { testEmulators } from './awsClients';

export * from '../../lib/local/serviceStack';

/** A {@link ServiceStack} on the emulators that jest's globalSetup started. */
export function createServiceStack(options: Omit<ServiceStackOptions, 'emulators'>): Promise<ServiceStack> {
  return createStack({ ...options, emulators: testEmulators() });
}
