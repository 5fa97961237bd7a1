// Every relative link between README.md and docs/ points at a file that exists, and at a heading
// that exists when it names one: a page moved or a section renamed fails here, not in a reader's hands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, '').replace(/ /g, '-');
}

function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(anchor(m[1]!));
  }
  return out;
}

/** Relative markdown links outside code blocks and spans. */
function linksOf(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/.test(l));
}

test('README and docs/ link only to files and headings that exist', () => {
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const link of linksOf(readFileSync(join(ROOT, page), 'utf8'))) {
      const [path, hash] = link.split('#') as [string, string | undefined];
      const target = path === '' ? join(ROOT, page) : resolve(ROOT, dirname(page), path);
      if (!existsSync(target)) { broken.push(`${page}: ${link} (no such file)`); continue; }
      if (hash !== undefined && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(hash)) {
        broken.push(`${page}: ${link} (no such heading)`);
      }
    }
  }
  assert.deepEqual(broken, []);
});

test('the README is a front door and reaches every docs page', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 250, 'README.md is over ~250 lines: move reference material to docs/');
  const linked = new Set(linksOf(readme).map((l) => l.split('#')[0]));
  const unlinked = PAGES.filter((p) => p !== 'README.md' && !linked.has(p));
  assert.deepEqual(unlinked, []);
});
