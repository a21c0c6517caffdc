/**
 * The contract of a one-lane deployment: serverless.yml's own one-lane settings package into exactly the template
 * they packaged into before lanes existed (fixtures/one-lane-template.json, packaged at commit a927899), apart from
 * what changes with every build (the code's S3 key and the version resources named after its hash). A deployment
 * that updates to this code changes no resource, name, grant, alarm or variable, and so keeps its queues and its
 * stored state (test/contract checks the stores read state saved before). Change the fixture only with a deliberate
 * change of the one-lane deployment (`npx tsx test/deployment/fixtures/writeOneLaneTemplate.ts`), and say so where
 * it lands.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { packageService, readTemplate, type PackageRun } from '../../tools/local/packageService';
import { withoutBuild } from '../helpers/templateBuild';

jest.setTimeout(30_000);

const FIXTURE = path.join(__dirname, 'fixtures', 'one-lane-template.json');

let run: PackageRun | undefined;

afterAll(async () => {
  if (run !== undefined) await rm(run.dir, { recursive: true, force: true });
});

it('packages the one-lane settings of serverless.yml into the template they packaged into before lanes', async () => {
  run = await packageService();
  if (run.code !== 0) throw new Error(`osls package failed (exit ${run.code}):\n${run.output}`);
  const expected = JSON.parse(readFileSync(FIXTURE, 'utf8')) as unknown;
  expect(withoutBuild(await readTemplate(run))).toEqual(expected);
});
