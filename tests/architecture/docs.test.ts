// engine: once
// The README is what a newcomer reads first: it stays short, and the reference lives in docs/. Every relative
// link of the README, the changelog and the docs pages reaches a file that exists and, for a `#anchor` into a
// markdown page, a heading of that page; the README's tables stay narrow enough to read without scrolling.
import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

const ROOT = join(import.meta.dir, '../..');

const README_MAX_LINES = 300;
const README_MAX_TABLE_ROW = 200;

const pages = ['README.md', 'CHANGELOG.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The page with its fenced code blocks blanked (their lines kept, empty): brackets and hashes there are code. */
const prose = (text: string) => text.replace(/^```[\s\S]*?^```/gm, (block) => block.replace(/[^\n]/g, ''));

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens; repeats get -1, -2, … */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, title] of prose(text).matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = title!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every inline link target of a page's prose, with its line number. */
function linksOf(text: string): { target: string; line: number }[] {
  const out: { target: string; line: number }[] = [];
  const lines = prose(text).split('\n');
  lines.forEach((l, i) => {
    for (const m of l.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push({ target: m[1]!, line: i + 1 });
  });
  return out;
}

describe('the README and the docs pages', () => {
  test(`the README is at most ${README_MAX_LINES} lines`, () => {
    const lines = read('README.md').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  test(`no row of a README table is longer than ${README_MAX_TABLE_ROW} characters`, () => {
    const long = prose(read('README.md'))
      .split('\n')
      .filter((l) => l.startsWith('|') && [...l].length > README_MAX_TABLE_ROW)
      .map((l) => `${[...l].length}: ${l.slice(0, 80)}…`);
    expect(long).toEqual([]);
  });

  test('every relative link reaches a file, and every #anchor into a markdown page a heading of it', () => {
    const broken: string[] = [];
    for (const path of pages) {
      for (const { target, line } of linksOf(read(path))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:: not ours to check here
        const [file, anchor] = target.split('#', 2) as [string, string | undefined];
        const resolved = file === '' ? join(ROOT, path) : join(ROOT, dirname(path), decodeURI(file));
        const where = `${path}:${line} → ${target}`;
        if (!resolved.startsWith(ROOT) || !existsSync(resolved)) {
          broken.push(`${where} (no file ${relative(ROOT, resolved)})`);
          continue;
        }
        if (anchor === undefined || !resolved.endsWith('.md') || statSync(resolved).isDirectory()) continue;
        if (!anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) broken.push(`${where} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });

  test('the README links every page of docs/', () => {
    const linked = new Set(linksOf(read('README.md')).map((l) => l.target.split('#')[0]));
    const unlinked = pages.filter((p) => p.startsWith('docs/') && !linked.has(p));
    expect(unlinked).toEqual([]);
  });
});
