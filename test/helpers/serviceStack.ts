import {
  createServiceStack as createStack,
  type ServiceStack,
  type ServiceStackOptions,
} from '../../tools/local/serviceStack';
import { testEmulators } from './awsClients';

export * from '../../tools/local/serviceStack';

/** A {@link ServiceStack} on the emulators that jest's globalSetup started. */
export function createServiceStack(options: Omit<ServiceStackOptions, 'emulators'>): Promise<ServiceStack> {
  return createStack({ ...options, emulators: testEmulators() });
}
