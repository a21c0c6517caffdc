import path from 'node:path';
import ts from 'typescript';
import { REPO_ROOT } from '../../tools/local/packageService';
import { importCycles, importGraph } from '../helpers/importCycles';
import { tsProject } from '../helpers/tsProject';

/** The import graph of in-memory `files` (name → text), resolved as the compiler resolves this repository. */
function graphOf(files: Readonly<Record<string, string>>): ReturnType<typeof importGraph> {
  const host: ts.ModuleResolutionHost = {
    fileExists: (file) => file in files,
    readFile: (file) => files[file],
  };
  return importGraph(Object.keys(files), tsProject().options, host);
}

describe('importCycles', () => {
  it('finds two files that import each other, a type-only import included', () => {
    const graph = graphOf({
      '/p/a.ts': "import { b } from './b';\nexport const a = () => b;\n",
      '/p/b.ts': "import type { A } from './a';\nexport const b: A | undefined = undefined;\n",
    });
    expect(graph).toEqual(
      new Map([
        ['/p/a.ts', ['/p/b.ts']],
        ['/p/b.ts', ['/p/a.ts']],
      ]),
    );
    expect(importCycles(graph)).toEqual([['/p/a.ts', '/p/b.ts']]);
  });

  it('follows re-exports, dynamic imports and index files into a circle', () => {
    const graph = graphOf({
      '/p/entry.ts': "export * from './rooms';\n",
      '/p/rooms/index.ts': "export { room } from './room';\n",
      '/p/rooms/room.ts': "export const room = () => import('../entry');\n",
    });
    expect(importCycles(graph)).toEqual([['/p/entry.ts', '/p/rooms/index.ts', '/p/rooms/room.ts']]);
  });

  it('finds no circle in a chain, and leaves packages, built-ins and missing files out of the graph', () => {
    const graph = graphOf({
      '/p/top.ts':
        "import { middle } from './middle';\nimport ts from 'typescript';\nexport const top = [middle, ts];\n",
      '/p/middle.ts': "import { bottom } from './bottom';\nimport './missing';\nexport const middle = bottom;\n",
      '/p/bottom.ts': "import { readFileSync } from 'node:fs';\nexport const bottom = readFileSync;\n",
    });
    expect(graph).toEqual(
      new Map([
        ['/p/top.ts', ['/p/middle.ts']],
        ['/p/middle.ts', ['/p/bottom.ts']],
        ['/p/bottom.ts', []],
      ]),
    );
    expect(importCycles(graph)).toEqual([]);
  });

  it('finds a file that imports itself, and each of several circles once', () => {
    const graph = new Map([
      ['self', ['self']],
      ['a', ['b']],
      ['b', ['c', 'x']],
      ['c', ['a']],
      ['x', ['y']],
      ['y', ['x', 'z']],
      ['z', []],
    ]);
    expect(importCycles(graph)).toEqual([['a', 'b', 'c'], ['self'], ['x', 'y']]);
  });
});

describe('imports among the files of lib/, functions/ and tools/', () => {
  it('form no circle, type-only imports included', () => {
    const { fileNames, options } = tsProject();
    const source = fileNames.filter((file) => /^(lib|functions|tools)\//.test(path.relative(REPO_ROOT, file)));
    const graph = importGraph(source, options);
    expect(graph.get(path.join(REPO_ROOT, 'functions/worker.ts'))).not.toEqual([]);
    expect(graph.get(path.join(REPO_ROOT, 'tools/cli/start.ts'))).not.toEqual([]);
    const circles = importCycles(graph).map((circle) => circle.map((file) => path.relative(REPO_ROOT, file)));
    expect(circles).toEqual([]);
  });
});
