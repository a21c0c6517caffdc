#!/usr/bin/env node
import { basename } from 'node:path';
import { runOps } from '../ops/runOps';

// `npm run ops -- …`, or the package's bin `quota-orchestrator …` once installed: the operator CLI on this process's
// streams (see tools/ops/runOps.ts), named as it was run.
const script = basename(process.argv[1] ?? 'ops');
const name = script.endsWith('.ts') || script.endsWith('.js') ? 'ops' : script;
runOps(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, name }).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
