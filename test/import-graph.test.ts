// The source tree has no import circles: every relative import (static, type-only or dynamic) between
// files under src/ is followed, and a cycle fails the test with its path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..');
const IMPORT = /(?:\bfrom\s+|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...sources(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1]!.replace(/\.js$/, '.ts')));
}

function findCycle(graph: Map<string, string[]>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    state.set(node, 'open');
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === 'open') return [...path.slice(path.indexOf(next)), next];
      if (state.get(next) === undefined && graph.has(next)) {
        const found = visit(next);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of graph.keys()) {
    if (state.get(node) !== undefined) continue;
    const found = visit(node);
    if (found) return found;
  }
  return null;
}

test('no import circle under src/', () => {
  const files = sources(join(ROOT, 'src'));
  assert.ok(files.length > 50, `found only ${files.length} source files`);
  const graph = new Map(files.map((f) => [f, importsOf(f)]));
  for (const [file, deps] of graph) {
    for (const dep of deps) assert.ok(graph.has(dep), `${relative(ROOT, file)} imports ${relative(ROOT, dep)}, which is not a source file`);
  }
  const cycle = findCycle(graph);
  assert.equal(cycle, null, `import circle: ${(cycle ?? []).map((f) => relative(ROOT, f)).join(' -> ')}`);
});

test('the cycle finder reports a circle it is given', () => {
  const cycle = findCycle(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]));
  assert.deepEqual(cycle, ['a', 'b', 'c', 'a']);
});
