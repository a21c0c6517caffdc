import ts from 'typescript';

/** Which files import which: each file, and the files of the graph it imports. */
export type ImportGraph = ReadonlyMap<string, readonly string[]>;

/**
 * The import graph of `files`: for each, the files among `files` that it imports in any form the compiler sees
 * (`import`, `import type`, `export … from`, `import x = require(…)`, dynamic `import(…)`, `typeof import(…)`,
 * `require(…)`). Module names resolve as the compiler resolves them with `options`; a name that resolves outside
 * `files` (a package, a built-in, a file of another folder) is no edge.
 * @param host reads the files and answers the resolver's lookups: the disk (`ts.sys`) unless given
 * @throws Error when a file of `files` cannot be read.
 */
export function importGraph(
  files: readonly string[],
  options: ts.CompilerOptions,
  host: ts.ModuleResolutionHost = ts.sys,
): ImportGraph {
  const inGraph = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = host.readFile(file);
    if (text === undefined) throw new Error(`cannot read ${file}`);
    const imported = ts
      .preProcessFile(text, true, true)
      .importedFiles.map(({ fileName }) => ts.resolveModuleName(fileName, file, options, host).resolvedModule)
      .map((resolved) => resolved?.resolvedFileName)
      .filter((target): target is string => target !== undefined && inGraph.has(target));
    graph.set(file, [...new Set(imported)]);
  }
  return graph;
}

/**
 * The import circles of `graph`: its strongly connected components of more than one file, and the files that import
 * themselves (Tarjan's algorithm). Each circle's files are sorted, and the circles by their first file.
 */
export function importCycles(graph: ImportGraph): string[][] {
  const order = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const circles: string[][] = [];
  /** Visits `file` and returns its low link: the earliest file still on the stack that it reaches. */
  const visit = (file: string): number => {
    const own = order.size;
    order.set(file, own);
    stack.push(file);
    onStack.add(file);
    let low = own;
    for (const next of graph.get(file) ?? []) {
      if (!order.has(next)) low = Math.min(low, visit(next));
      else if (onStack.has(next)) low = Math.min(low, order.get(next) ?? low);
    }
    if (low === own) {
      const component = stack.splice(stack.lastIndexOf(file));
      for (const member of component) onStack.delete(member);
      if (component.length > 1 || graph.get(file)?.includes(file)) circles.push(component.sort());
    }
    return low;
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}
