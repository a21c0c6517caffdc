/** One CloudWatch Embedded Metric Format line, as parsed from stdout. */
export interface EmfLine {
  readonly _aws: {
    readonly Timestamp: number;
    readonly CloudWatchMetrics: readonly {
      readonly Namespace: string;
      readonly Dimensions: readonly (readonly string[])[];
      readonly Metrics: readonly { readonly Name: string; readonly Unit: string }[];
    }[];
  };
  readonly [key: string]: unknown;
}

/** What {@link captureStdout} caught. */
export interface CapturedStdout {
  /** Every line written so far that is a JSON object (log lines and EMF lines), parsed. */
  json(): Record<string, unknown>[];
  /** Every EMF line written so far (a JSON object with `_aws`), parsed. */
  emf(): EmfLine[];
  /** The EMF lines that carry metric `name`, each as `{ dimensions, value }`, plus its unit. */
  metric(name: string): {
    readonly unit: string | undefined;
    readonly dimensions: Readonly<Record<string, unknown>>;
    readonly value: unknown;
  }[];
}

/**
 * Catches what is written to `process.stdout` (where Powertools writes EMF lines, and log lines below warnings) until the test ends; nothing
 * reaches the terminal meanwhile. Call it in a test or a `beforeEach`: jest restores the spy with `restoreMocks` or
 * `jest.restoreAllMocks()`.
 */
export function captureStdout(): CapturedStdout {
  const written: string[] = [];
  jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
    return true;
  });
  const json = (): Record<string, unknown>[] =>
    written
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  const emf = (): EmfLine[] => json().filter((line): line is EmfLine => '_aws' in line);
  return {
    json,
    emf,
    metric: (name) =>
      emf().flatMap((line) =>
        line._aws.CloudWatchMetrics.flatMap(({ Dimensions, Metrics }) => {
          const definition = Metrics.find((m) => m.Name === name);
          if (definition === undefined) return [];
          const dimensions = Object.fromEntries((Dimensions[0] ?? []).map((d) => [d, line[d]]));
          return [{ unit: definition.Unit, dimensions, value: line[name] }];
        }),
      ),
  };
}
