// engine: once
// No file under src/ reaches itself through its imports. In a circle the load order decides which file sees
// the other half-initialised, and two files that each need the other are one idea split in two: the shared
// piece belongs in a third (a types file, or the lower module), never behind a dynamic import.
//
// Type-only imports count. They are erased at run time, so a circle made only of them cannot break the load
// order, but it still says that neither file can be understood, moved or tested without the other; each one
// found was fixed the same way as a runtime circle. A failure prints each circle as the path round it, with
// its type-only steps marked.
//
// None is allowed: a store's interface file (`store.ts`) names no implementation (the composition root,
// src/stores.ts, puts each engine's together), so an implementation's import of its interface is one way.
import { afterAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { importCycles, importGraph, importsOf, ROOT, type ImportEdge } from '../helpers/imports';

const edge = (to: string, typeOnly = false): ImportEdge => ({ to, typeOnly, spec: to });

describe('import cycles', () => {
  test('no file under src/ is in an import cycle, type-only imports included', () => {
    const graph = importGraph('src');
    // The graph is the whole of src/: the composition root reaches the features, which reach the platform.
    expect(graph.get('src/runtime.ts')!.map((e) => e.to)).toContain('src/deps.ts');
    expect(graph.size).toBeGreaterThan(150);
    expect(importCycles(graph)).toEqual([]);
  });

  test('a cycle is found and printed as the path round it, type-only steps marked', () => {
    const graph = new Map<string, ImportEdge[]>([
      ['a.ts', [edge('b.ts')]],
      ['b.ts', [edge('c.ts', true), edge('d.ts')]],
      ['c.ts', [edge('a.ts')]],
      ['d.ts', []],
      ['e.ts', [edge('e.ts')]],
      ['f.ts', [edge('a.ts'), edge('d.ts')]],
    ]);
    expect(importCycles(graph).sort()).toEqual(['a.ts → b.ts → (type) c.ts → a.ts', 'e.ts → e.ts']);
    // Without the type-only step there is no circle through a, b and c.
    graph.set('b.ts', [edge('d.ts')]);
    expect(importCycles(graph)).toEqual(['e.ts → e.ts']);
  });

  describe('every form of import is read', () => {
    const dir = mkdtempSync(join(tmpdir(), 'drs-imports-'));
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    mkdirSync(join(dir, 'lib'));
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']) writeFileSync(join(dir, `${name}.ts`), 'export type T = 1;\nexport const v = 1;\n');
    writeFileSync(join(dir, 'lib/index.ts'), 'export const v = 1;\n');
    const at = (name: string) => relative(ROOT, join(dir, name));

    test('values, types, re-exports, side effects, dynamic imports, import types and folders', () => {
      writeFileSync(
        join(dir, 'main.tsx'),
        [
          "import { v } from './a';",
          "import type { T } from './b';",
          "import { type T as U } from './c';",
          "import { type T as W, v as x } from './d';",
          "export { v as y } from './e';",
          "export type { T as Z } from './f';",
          "import './g';",
          'import {',
          '  v as multiline,',
          "} from './h.ts';",
          "export const later = () => import('./i');",
          "export type Later = import('./j').T;",
          "import { v as folder } from './lib';",
          "import { Elysia } from 'elysia';",
          "// import { v } from './not-an-import';",
          "const text = \"import { v } from './not-an-import-either'\";",
        ].join('\n'),
      );
      const found = importsOf(at('main.tsx')).map((e) => [e.to, e.typeOnly]);
      expect(found).toEqual([
        [at('a.ts'), false],
        [at('b.ts'), true],
        [at('c.ts'), true],
        [at('d.ts'), false],
        [at('e.ts'), false],
        [at('f.ts'), true],
        [at('g.ts'), false],
        [at('h.ts'), false],
        [at('i.ts'), false],
        [at('j.ts'), true],
        [at('lib/index.ts'), false],
      ]);
    });

    test('an import naming no file fails the check instead of being left out', () => {
      writeFileSync(join(dir, 'broken.ts'), "import { v } from './missing';\n");
      expect(() => importsOf(at('broken.ts'))).toThrow("the import './missing' names no file");
    });
  });
});
