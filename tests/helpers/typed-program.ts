// One TypeScript program over src/, with its type checker, for the architecture tests that need types: which
// calls run a SQLite statement synchronously, and which promises are dropped without being awaited.
import { join, relative } from 'node:path';
import ts from 'typescript';
import { ROOT, sourceFiles } from './imports';

let cached: { program: ts.Program; checker: ts.TypeChecker } | null = null;

export function typedProgram(): { program: ts.Program; checker: ts.TypeChecker } {
  if (cached) return cached;
  const read = ts.readConfigFile(join(ROOT, 'tsconfig.json'), (p) => ts.sys.readFile(p));
  const cfg = ts.parseJsonConfigFileContent(read.config, ts.sys, ROOT);
  const program = ts.createProgram(
    sourceFiles('src').map((f) => join(ROOT, f)),
    cfg.options,
  );
  cached = { program, checker: program.getTypeChecker() };
  return cached;
}

/** The project's own source files of the program, with their paths relative to the project. */
export function ownFiles(): { path: string; file: ts.SourceFile }[] {
  const { program } = typedProgram();
  return program
    .getSourceFiles()
    .filter((f) => f.fileName.startsWith(join(ROOT, 'src') + '/'))
    .map((file) => ({ path: relative(ROOT, file.fileName), file }));
}

export function walk(node: ts.Node, visit: (n: ts.Node) => void): void {
  visit(node);
  ts.forEachChild(node, (c) => walk(c, visit));
}

export function lineOf(file: ts.SourceFile, node: ts.Node): number {
  return file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1;
}
