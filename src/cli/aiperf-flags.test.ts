// Conformance with `aiperf profile`: every flag of AIPerf's reference (one table, src/bench/aiperf-flags.ts)
// is accepted by `tailgate bench`; none is a usage error (exit 2). Table-driven from that one list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AIPERF_FLAGS, aiperfFlagsMarkdown } from '../bench/aiperf-flags.js';
import { resolveBenchOptions } from '../bench/index.js';
import { isTailgateError } from '../core/index.js';
import { parseBenchFlags, undeclaredAiperfFlags } from './bench.js';
import { benchInvocation } from './bench-run.js';

/** Flags that only make sense with a trace get one (AIPerf refuses them without one too). */
const NEEDS_TRACE = new Set(['--input-file', '--custom-dataset-type', '--fixed-schedule', '--no-fixed-schedule', '--fixed-schedule-auto-offset']);
/** Flags AIPerf also wants in pairs. */
const COMPANION: Record<string, string[]> = {
  '--prompt-prefix-pool-size': ['--prefix-prompt-length', '16'],
  '--prefix-prompt-pool-size': ['--prefix-prompt-length', '16'],
  '--num-prefix-prompts': ['--prefix-prompt-length', '16'],
  '--prompt-prefix-length': ['--num-prefix-prompts', '2'],
  '--prefix-prompt-length': ['--num-prefix-prompts', '2'],
};

test('every AIPerf flag and alias is accepted; none is a usage error', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tailgate-flags-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const trace = join(dir, 'trace.jsonl');
  await writeFile(trace, '{"timestamp": 0, "input_length": 8, "output_length": 2}\n');
  let checked = 0;
  const failures: string[] = [];
  for (const flag of AIPERF_FLAGS) {
    for (const name of flag.names) {
      const value = name === '--input-file' ? trace : name === '--custom-dataset-type' ? 'mooncake_trace' : flag.example;
      const argv = ['-m', 'm', name, ...(flag.arg === 'switch' ? [] : [value ?? 'x'])];
      if (NEEDS_TRACE.has(name) && name !== '--input-file') argv.push('--input-file', trace);
      argv.push(...(COMPANION[name] ?? []));
      try {
        const inv = benchInvocation(parseBenchFlags(argv));
        resolveBenchOptions(inv.options);
        const warned = inv.notes.some((n) => n.includes(`${name}:`));
        if (flag.status === 'ignored') assert.ok(warned, `${name} is ignored and must say so in one warning line`);
        if (flag.status === 'implemented') assert.ok(!warned, `${name} is implemented and must not warn`);
      } catch (e) {
        const code = isTailgateError(e) ? e.code : (e as { code?: string }).code;
        failures.push(`tailgate bench ${argv.join(' ')}: ${code}: ${(e as Error).message}`);
      }
      checked++;
    }
  }
  assert.deepEqual(failures, []);
  assert.ok(checked >= 250, `only ${checked} names checked`);
});

test('an implemented flag is declared by tailgate bench itself, never by the ignored-flag generator', () => {
  const generated = new Set(undeclaredAiperfFlags().map((g) => g.name));
  for (const flag of AIPERF_FLAGS) {
    for (const name of flag.names) if (flag.status === 'implemented' && name !== '-vv') assert.ok(!generated.has(name), `${name} is marked implemented but not declared`);
  }
});

test('each ignored flag prints exactly one line, with what AIPerf would have done', () => {
  const flags = parseBenchFlags(['-m', 'm', '--zmq-host', '10.0.0.1', '--ui', 'none', '--no-auto-plot', '--record-processors', '4']);
  const notes = benchInvocation(flags).notes;
  assert.equal(notes.length, 4);
  assert.match(notes.find((n) => n.includes('--zmq-host'))!, /^warning: --zmq-host: .*ignored.*ZMQ/);
});

test('-v, -vv, --extra-verbose and --log-level choose the log level', () => {
  const level = (argv: string[]): string => benchInvocation(parseBenchFlags(['-m', 'm', ...argv])).logLevel;
  assert.equal(level([]), 'INFO');
  assert.equal(level(['-v']), 'DEBUG');
  assert.equal(level(['-vv']), 'TRACE');
  assert.equal(level(['--extra-verbose']), 'TRACE');
  assert.equal(level(['--log-level', 'warning']), 'WARNING');
});

test('docs/bench.md carries the flag table generated from the code', async () => {
  const doc = await readFile(new URL('../../docs/bench.md', import.meta.url), 'utf8');
  assert.ok(doc.includes(aiperfFlagsMarkdown()), 'docs/bench.md is out of date: run `npx tsx scripts/aiperf-flags-doc.ts`');
});
