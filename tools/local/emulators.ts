import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { EmulatorEndpoints } from './clients';

/** The DynamoDB and SQS emulators of a local run, listening on 127.0.0.1 only. */
export interface Emulators extends EmulatorEndpoints {
  stop(): Promise<void>;
}

/** How long the emulators may take to start. */
const START_TIMEOUT_MS = 30_000;

/**
 * Starts dynalite and fauxqs (see `emulatorServer.mjs`) in a child process, so that the emulated AWS side runs on
 * its own event loop, as it does on AWS, rather than competing with the functions for this one.
 * @throws Error when the child exits or says nothing within 30 s.
 */
export async function startEmulators(): Promise<Emulators> {
  const child = spawn(process.execPath, [join(__dirname, 'emulatorServer.mjs')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const endpoints = await new Promise<EmulatorEndpoints>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the emulators did not start within 30 s')), START_TIMEOUT_MS);
    child.once('exit', (code) => reject(new Error(`the emulators exited with code ${code} before starting`)));
    createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve(JSON.parse(line) as EmulatorEndpoints);
    });
  });
  return {
    ...endpoints,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.stdin.end();
      }),
  };
}
