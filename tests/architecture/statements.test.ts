// engine: once
// Every module's SQL lives in its stores: `store.sqlite.ts` and `store.pg.ts` (or `<name>-store.sqlite.ts`)
// beside the module's `store.ts` interface of asynchronous functions. Services, jobs and routes call stores
// only, so that a second engine is a second implementation of the same interfaces. A synchronous statement
// call is a call of a Drizzle query's or a bun:sqlite statement's run/get/all/values, or of the connection's
// query, prepare, exec or transaction, found through the type checker (whatever the receiver is named).
// platform/ runs the transactions and the connection itself. Listed below, with their counts, are the files
// not yet moved: the count of a listed file may only go down, and a file not listed has none.
//
// Second check, on the same program: a promise is never dropped. A call whose result is a promise is awaited,
// returned, chained, or marked `void` where running on without it is meant (a job started in the background);
// a store call left unawaited inside a transaction would commit without its write, or fail outside it.
import { expect, test } from 'bun:test';
import ts from 'typescript';
import { lineOf, ownFiles, typedProgram, walk } from '../helpers/typed-program';

const STORE_FILE = /(^|\/|-)store\.(sqlite|pg)\.ts$/;
const STATEMENT_METHODS = new Set(['run', 'get', 'all', 'values', 'exec', 'query', 'prepare', 'transaction']);
const FROM_SQL_LIBRARY = /node_modules\/(drizzle-orm|bun-types)\//;

/** Files that still hold synchronous statement calls outside a store, and how many. */
const NOT_YET_MOVED: Record<string, number> = {
};

function statementCalls(): Record<string, number> {
  const { checker } = typedProgram();
  const found: Record<string, number> = {};
  for (const { path, file } of ownFiles()) {
    if (path.startsWith('src/platform/') || STORE_FILE.test(path)) continue;
    walk(file, (n) => {
      if (!ts.isCallExpression(n) || !ts.isPropertyAccessExpression(n.expression)) return;
      if (!STATEMENT_METHODS.has(n.expression.name.text)) return;
      const decl = checker.getSymbolAtLocation(n.expression.name)?.declarations?.[0];
      const from = decl?.getSourceFile().fileName ?? '';
      if (!FROM_SQL_LIBRARY.test(from)) return;
      if (from.includes('bun-types/') && !/sqlite\.d\.ts$/.test(from)) return;
      found[path] = (found[path] ?? 0) + 1;
    });
  }
  return found;
}

test('no synchronous statement call outside the stores and platform/, but in the files listed', () => {
  const found = statementCalls();
  const grown = Object.entries(found).filter(([f, n]) => n > (NOT_YET_MOVED[f] ?? 0));
  expect(grown.map(([f, n]) => `${f}: ${n} (allowed ${NOT_YET_MOVED[f] ?? 0})`)).toEqual([]);
  // The list shrinks with the code: a file moved to its store leaves it.
  const stale = Object.entries(NOT_YET_MOVED).filter(([f, n]) => (found[f] ?? 0) < n);
  expect(stale.map(([f, n]) => `${f}: ${found[f] ?? 0} (listed ${n})`)).toEqual([]);
}, 120_000);

function isPromise(checker: ts.TypeChecker, type: ts.Type): boolean {
  if (type.isUnion()) return type.types.some((t) => isPromise(checker, t));
  const sym = type.getSymbol();
  return sym?.getName() === 'Promise' || (!!checker.getPropertyOfType(type, 'then') && sym?.getName() !== 'Elysia');
}

/** `p.catch(…)`, `p.then(ok, failed)`, and a `.finally(…)` after either: the rejection is handled. */
function handled(e: ts.Expression): boolean {
  if (!ts.isCallExpression(e) || !ts.isPropertyAccessExpression(e.expression)) return false;
  const name = e.expression.name.text;
  if (name === 'catch') return true;
  if (name === 'then') return e.arguments.length >= 2;
  if (name === 'finally') return handled(e.expression.expression);
  return false;
}

test('no promise is dropped: each is awaited, returned, chained or marked void', () => {
  const { checker } = typedProgram();
  const dropped: string[] = [];
  for (const { path, file } of ownFiles()) {
    walk(file, (n) => {
      if (!ts.isExpressionStatement(n)) return;
      let e = n.expression;
      while (ts.isParenthesizedExpression(e)) e = e.expression;
      if (!ts.isCallExpression(e) && !ts.isNewExpression(e)) return;
      if (handled(e)) return;
      if (isPromise(checker, checker.getTypeAtLocation(e))) dropped.push(`${path}:${lineOf(file, n)} ${n.getText(file).slice(0, 80)}`);
    });
  }
  expect(dropped).toEqual([]);
}, 120_000);
