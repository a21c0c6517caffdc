import { runOps } from '../ops/runOps';

// `npm run ops -- …`: the operator CLI on this process's streams (see tools/ops/runOps.ts).
runOps(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    console.error(error);
    process.exitCode = 2;
  },
);
