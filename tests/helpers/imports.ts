// The project's own import graph, read from the source with the TypeScript parser: every `import … from`,
// `export … from`, side-effect `import '…'`, `import('…')` call and `import('…').Type` of a relative path,
// resolved to the file it names. What the architecture tests check.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

export const ROOT = join(import.meta.dir, '../..');

/** Every .ts and .tsx file under a directory, as paths relative to the project (`src/app.ts`). */
export function sourceFiles(dir: string): string[] {
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((name) => {
      const p = join(d, name);
      return statSync(p).isDirectory() ? walk(p) : /\.tsx?$/.test(p) ? [relative(ROOT, p)] : [];
    });
  return walk(join(ROOT, dir)).sort();
}

export interface ImportEdge {
  /** The imported file, relative to the project (`src/deps.ts`). */
  to: string;
  /** Erased at run time: `import type`, every named import marked `type`, `export type … from`, `import('…').T`. */
  typeOnly: boolean;
  /** The specifier as written. */
  spec: string;
}

function resolveSpec(from: string, spec: string): string | null {
  const base = resolve(ROOT, dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')]) {
    if (existsSync(c) && statSync(c).isFile()) return relative(ROOT, c);
  }
  return null;
}

function isTypeOnlyImport(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return false;
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return !clause.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
}

/** The relative imports of one file (a path relative to the project, or absolute), resolved. A specifier that names no file is an error. */
export function importsOf(file: string): ImportEdge[] {
  const text = readFileSync(resolve(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: { spec: string; typeOnly: boolean }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ spec: node.moduleSpecifier.text, typeOnly: isTypeOnlyImport(node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push({ spec: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ spec: node.argument.literal.text, typeOnly: true });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      found.push({ spec: node.arguments[0].text, typeOnly: false });
    }
    // Declarations are statements of the file; an `import('…')` can be anywhere, so only then is every node visited.
    if (deep) ts.forEachChild(node, visit);
  };
  const deep = text.includes('import(');
  for (const statement of source.statements) visit(statement);
  return found
    .filter((f) => f.spec.startsWith('.'))
    .map((f) => {
      const to = resolveSpec(file, f.spec);
      if (!to) throw new Error(`${file}: the import '${f.spec}' names no file`);
      return { to, typeOnly: f.typeOnly, spec: f.spec };
    });
}

/** The import graph of every file under `dir`, each file's edges to files under the same directory. */
export function importGraph(dir: string): Map<string, ImportEdge[]> {
  const files = sourceFiles(dir);
  const inside = new Set(files);
  return new Map(files.map((f) => [f, importsOf(f).filter((e) => inside.has(e.to))]));
}

/**
 * Every import cycle of a graph, one per strongly connected group of files (Tarjan's algorithm, linear in
 * files and imports), each written as the path that goes round it: `a.ts → b.ts → a.ts`, a type-only step
 * marked `(type)`.
 */
export function importCycles(graph: Map<string, ImportEdge[]>): string[] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const groups: string[][] = [];
  let next = 0;
  const strong = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const { to } of graph.get(v) ?? []) {
      if (!index.has(to)) {
        strong(to);
        low.set(v, Math.min(low.get(v)!, low.get(to)!));
      } else if (onStack.has(to)) low.set(v, Math.min(low.get(v)!, index.get(to)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || (graph.get(v) ?? []).some((e) => e.to === v)) groups.push(group);
    }
  };
  for (const f of graph.keys()) if (!index.has(f)) strong(f);
  return groups.map((group) => cyclePath(graph, new Set(group)));
}

/** A path round a strongly connected group: from its first file (by name), the shortest way back to it. */
function cyclePath(graph: Map<string, ImportEdge[]>, group: Set<string>): string {
  const start = [...group].sort()[0]!;
  const reachedFrom = new Map<string, { from: string; typeOnly: boolean }>();
  const queue = [start];
  for (let i = 0; i < queue.length && !reachedFrom.has(start); i++) {
    for (const e of graph.get(queue[i]!) ?? []) {
      if (!group.has(e.to) || reachedFrom.has(e.to)) continue;
      reachedFrom.set(e.to, { from: queue[i]!, typeOnly: e.typeOnly });
      queue.push(e.to);
    }
  }
  const steps: string[] = [];
  let at = start;
  do {
    const step = reachedFrom.get(at)!;
    steps.unshift(`${step.typeOnly ? '→ (type) ' : '→ '}${at}`);
    at = step.from;
  } while (at !== start);
  return [start, ...steps].join(' ');
}
