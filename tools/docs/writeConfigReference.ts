/**
 * `npm run docs:config`: writes docs/configuration.md from the configuration parsers and their TSDoc
 * (see configReference.ts). test/tools/docs/configReference.test.ts fails while the committed file differs.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildConfigReference, CONFIG_REFERENCE_FILE } from './configReference';

const target = path.resolve(__dirname, '../..', CONFIG_REFERENCE_FILE);
writeFileSync(target, buildConfigReference());
process.stdout.write(`wrote ${CONFIG_REFERENCE_FILE}\n`);
