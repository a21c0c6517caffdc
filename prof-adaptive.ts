import { readFileSync } from 'node:fs';
import { parseScenario } from './tools/simulation/scenario';
import { runSimulation } from './tools/simulation/runSimulation';

async function main() {
  const scenario = parseScenario(JSON.parse(readFileSync('tools/simulation/scenarios/adaptive.json', 'utf8')));
  const { api } = await runSimulation(scenario);
  const log = api.callLog;
  const t0 = log[0]!.at;
  const perSecond = new Map<number, string>();
  for (const c of log) {
    const s = Math.floor((c.at - t0) / 1000);
    perSecond.set(s, (perSecond.get(s) ?? '') + (c.status === 429 ? 'x' : '.'));
  }
  for (const [s, marks] of [...perSecond].sort((a, b) => a[0] - b[0])) console.log(String(s).padStart(3), marks.length, marks);
  console.log('first', t0, 'last', (log.at(-1)!.at - t0) / 1000);
}
main();
