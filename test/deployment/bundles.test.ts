import { bundleInputs } from './sdkCommands';

/** What a handler's bundle carries: repository files, and packages by name. */
async function bundled(handler: string): Promise<{ sources: string[]; packages: string[] }> {
  const inputs = await bundleInputs(handler);
  const packages = inputs.flatMap((input) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(input)?.[1] ?? []);
  return { sources: inputs.filter((input) => !input.includes('node_modules')), packages: [...new Set(packages)] };
}

describe('what each function bundles', () => {
  it("keeps the worker's code out of the orchestrator: no API caller, no SSM", async () => {
    const { sources, packages } = await bundled('functions/orchestrator.ts');
    expect(sources).toEqual(
      expect.arrayContaining([
        'lib/services/orchestrator/runOrchestrator.ts',
        'lib/adapters/lambda/LambdaInvoker.ts',
        'lib/domain/pacing/pacer.ts',
      ]),
    );
    expect(sources.filter((source) => /adapters\/(http|ssm)\/|services\/worker\//.test(source))).toEqual([]);
    expect(packages).toContain('@aws-sdk/client-lambda');
    expect(packages).not.toContain('@aws-sdk/client-ssm');
  });

  it("keeps the orchestrator's code out of the worker: no Lambda invoker, no pacer, no ledger", async () => {
    const { sources, packages } = await bundled('functions/worker.ts');
    expect(sources).toEqual(
      expect.arrayContaining(['lib/services/worker/processWorkerEvent.ts', 'lib/adapters/http/HttpApiCaller.ts']),
    );
    expect(
      sources.filter((source) =>
        /adapters\/lambda\/|domain\/pacing\/pacer|domain\/quota\/ledger|services\/runOrchestrator|services\/orchestrator\//.test(
          source,
        ),
      ),
    ).toEqual([]);
    expect(packages).toContain('@aws-sdk/client-ssm');
    expect(packages).not.toContain('@aws-sdk/client-lambda');
  });
});
