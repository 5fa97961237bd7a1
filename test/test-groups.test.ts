// scripts/test-groups.mjs names files by hand: each name must still exist, and each unit test under
// src/ that goes live must be named there, or scripts/test.mjs runs it beside the pure files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ALONE, PURE_TEST, REAL_TIME_SRC } from '../scripts/test-groups.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/**
 * What in a test file starts a server, a socket or a timer, or reads the real clock: node's calls,
 * the library's servers, and test/'s helpers and doubles that do.
 */
const SERVER_OR_CLOCK = [
  String.raw`\b(?:createServer|createConnection|setTimeout|setInterval|fetch)\(`, String.raw`\.listen\(`,
  String.raw`\bperformance\.now\(`, String.raw`\bDate\.now\(`, String.raw`\bhrtime\b`,
  String.raw`\b(?:startFleet|startRouter|startGpuMetrics)\(`,
  String.raw`\b(?:startCli|listenOnLoopback|startFakeKubeApi|startFakeUpstream|startHub|startRecordingProxy|startScheduleFake|runKneeSweep|runPolicy|runScaleOut)\(`,
];
/** A subprocess run to its end: live for a unit test under src/; test/'s pure files may run one (a CLI on virtual time). */
const SUBPROCESS = String.raw`\b(?:spawn|spawnSync|runCli|spawnCli)\(`;
const LIVE = new RegExp([...SERVER_OR_CLOCK, SUBPROCESS].join('|'));

function testFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.test.ts'))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)).split(sep).join('/'));
}

test('every file scripts/test-groups.mjs names exists', () => {
  for (const set of [REAL_TIME_SRC, PURE_TEST, ALONE]) for (const f of set) assert.ok(existsSync(join(ROOT, f)), `${f} named in scripts/test-groups.mjs does not exist`);
});

test('every unit test under src/ that starts a server, a socket, a subprocess or a timer is in REAL_TIME_SRC, and only those', () => {
  const live = testFiles('src').filter((f) => LIVE.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.ok(live.length >= REAL_TIME_SRC.size, `${live.length} live files found under src/`);
  assert.deepEqual(live.filter((f) => !REAL_TIME_SRC.has(f)), [], 'unit tests that go live: add them to REAL_TIME_SRC in scripts/test-groups.mjs');
  assert.deepEqual([...REAL_TIME_SRC].filter((f) => !live.includes(f)), [], 'REAL_TIME_SRC (scripts/test-groups.mjs) names files that no longer go live: take them out');
});

test('no file in PURE_TEST starts a server, a socket or a timer, or reads the real clock', () => {
  const serverOrClock = new RegExp(SERVER_OR_CLOCK.join('|'));
  assert.ok(PURE_TEST.size > 0);
  const live = [...PURE_TEST].filter((f) => serverOrClock.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.deepEqual(live, [], 'PURE_TEST (scripts/test-groups.mjs) names files that go live: take them out');
});
