import { execFileSync } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

/**
 * ESLint's `no-restricted-imports` messages for `code` as if it were the file `file` of the repository. ESLint loads
 * eslint.config.mjs with a dynamic import, which jest's CommonJS runtime cannot do, so a child node process lints.
 */
function restrictedImports(file: string, code: string): string[] {
  const script = `
    const { ESLint } = await import('eslint');
    const [result] = await new ESLint({ cwd: process.cwd() }).lintText(process.env.CODE, { filePath: process.env.FILE });
    console.log(JSON.stringify(result.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message)));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: ROOT,
    env: { ...process.env, CODE: code, FILE: path.join(ROOT, file) },
    encoding: 'utf8',
  });
  return JSON.parse(out) as string[];
}

describe('import fences (eslint.config.mjs)', () => {
  it('keeps devDependencies and tools/ out of what ships: lib/ and functions/', () => {
    const code =
      "import Bottleneck from 'bottleneck';\nimport { pause } from '../../tools/local/waitFor';\nexport const used = [Bottleneck, pause];\n";
    for (const file of ['lib/services/probe.ts', 'functions/probe.ts']) {
      const messages = restrictedImports(
        file,
        file.startsWith('functions') ? code.replace('../../tools', '../tools') : code,
      );
      expect(messages).toEqual([
        expect.stringContaining("'bottleneck' import is restricted"),
        expect.stringMatching(/tools\/local\/waitFor' import is restricted.*tools\/ does not/),
      ]);
    }
  });

  it('lets lib/ import its dependencies and node: built-ins', () => {
    const code =
      "import { SQSClient } from '@aws-sdk/client-sqs';\nimport { randomUUID } from 'node:crypto';\nimport { CONFIG_ENV } from '../configFromEnv';\nexport const used = [SQSClient, randomUUID, CONFIG_ENV];\n";
    expect(restrictedImports('lib/wiring/probe.ts', code)).toEqual([]);
  });

  it('keeps adapters out of services', () => {
    const code = "import { SqsQueues } from '../../adapters/sqs/SqsQueues';\nexport const used = SqsQueues;\n";
    expect(restrictedImports('lib/services/worker/probe.ts', code)).toEqual([
      expect.stringContaining('never imports lib/adapters'),
    ]);
  });

  it('keeps the AWS SDK out of services, as well as devDependencies', () => {
    const code =
      "import { SQSClient } from '@aws-sdk/client-sqs';\nimport Bottleneck from 'bottleneck';\nexport const used = [SQSClient, Bottleneck];\n";
    expect(restrictedImports('lib/services/probe.ts', code)).toEqual([
      expect.stringContaining('never imports the AWS SDK'),
      expect.stringContaining("'bottleneck' import is restricted"),
    ]);
  });

  it('lets services import ports, the domain and node: built-ins', () => {
    const code =
      "import type { Clock } from '../../ports/Clock';\nimport { classify } from '../../domain/outcome/classify';\nimport { randomUUID } from 'node:crypto';\nexport const used = [classify, randomUUID] as const;\nexport type Used = Clock;\n";
    expect(restrictedImports('lib/services/worker/probe.ts', code)).toEqual([]);
  });

  it('keeps services out of adapters', () => {
    const code = "import { parseJob } from '../../services/parseJob';\nexport const used = parseJob;\n";
    expect(restrictedImports('lib/adapters/sqs/probe.ts', code)).toEqual([
      expect.stringContaining('never import lib/services'),
    ]);
  });

  it('keeps the domain free of the AWS SDK and I/O, as well as of devDependencies', () => {
    const code =
      "import { SQSClient } from '@aws-sdk/client-sqs';\nimport { readFileSync } from 'node:fs';\nimport fc from 'fast-check';\nexport const used = [SQSClient, readFileSync, fc];\n";
    expect(restrictedImports('lib/domain/quota/probe.ts', code)).toEqual([
      expect.stringContaining('free of the AWS SDK'),
      expect.stringContaining('no adapters, services or I/O'),
      expect.stringContaining("'fast-check' import is restricted"),
    ]);
  });

  it('keeps ports out of the domain', () => {
    const code =
      "import type { Clock } from '../../ports/Clock';\nimport type { Invoker } from '../../ports';\nexport type Used = [Clock, Invoker];\n";
    expect(restrictedImports('lib/domain/pacing/probe.ts', code)).toEqual([
      expect.stringContaining('never imports lib/ports'),
      expect.stringContaining('never imports lib/ports'),
    ]);
  });

  it('lets tools/ use devDependencies, but no package that package.json does not declare', () => {
    const code =
      "import Bottleneck from 'bottleneck';\nimport leftPad from 'left-pad';\nexport const used = [Bottleneck, leftPad];\n";
    expect(restrictedImports('tools/bench/probe.ts', code)).toEqual([
      expect.stringContaining("'left-pad' import is restricted"),
    ]);
  });
});
