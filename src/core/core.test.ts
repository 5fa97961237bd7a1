import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { RealClock, VirtualClock, createRng, issueText, durationSchema, parseDurationMs, parseSizeBytes, TailgateError, countTokens, promptTokenIds, tokenId } from './index.js';

const durationMs = durationSchema(z);

test('virtual clock fires timers in time order, then insertion order, and honours cancel', () => {
  const clock = new VirtualClock();
  const seen: string[] = [];
  clock.setTimer(10, () => seen.push(`b@${clock.now()}`));
  clock.setTimer(5, () => seen.push(`a@${clock.now()}`));
  clock.setTimer(10, () => seen.push(`c@${clock.now()}`));
  const t = clock.setTimer(7, () => seen.push('cancelled'));
  t.cancel();
  clock.setTimer(5, () => clock.setTimer(clock.now() + 1, () => seen.push(`nested@${clock.now()}`)));
  assert.equal(clock.pending, 4);
  clock.run();
  assert.deepEqual(seen, ['a@5', 'nested@6', 'b@10', 'c@10']);
  assert.equal(clock.pending, 0);
});

test('the real clock never fires a timer before it is due (setTimeout alone woke up to 1.8 ms early), and cancel holds across its re-arming', async (t) => {
  const clock = new RealClock();
  const early: number[] = [];
  // (Its timers are unref()ed: this one keeps the test's event loop alive.)
  const alive = setInterval(() => {}, 1000);
  t.after(() => clearInterval(alive));
  const due = Array.from({ length: 24 }, (_, k) => clock.now() + 5.3 + 1.3 * k);
  await Promise.all(due.map((atMs) => new Promise<void>((done) => clock.setTimer(atMs, () => {
    if (clock.now() < atMs) early.push(atMs - clock.now());
    done();
  }))));
  assert.deepEqual(early, [], 'no timer fired before its time');
  let fired = false;
  clock.setTimer(clock.now() + 2, () => (fired = true)).cancel();
  await new Promise((done) => setTimeout(done, 10));
  assert.equal(fired, false);
});

test('virtual clock runUntil stops at the bound and advances time', () => {
  const clock = new VirtualClock();
  let fired = 0;
  clock.setTimer(100, () => fired++);
  clock.runUntil(50);
  assert.equal(fired, 0);
  assert.equal(clock.now(), 50);
  clock.runUntil(100);
  assert.equal(fired, 1);
});

test('the same seed gives the same sequence; forks are independent but reproducible', () => {
  const a = createRng(100);
  const b = createRng(100);
  const xs = Array.from({ length: 20 }, () => a.next());
  assert.deepEqual(xs, Array.from({ length: 20 }, () => b.next()));
  assert.ok(xs.every((x) => x >= 0 && x < 1));
  assert.notDeepEqual(xs, Array.from({ length: 20 }, () => createRng(101).next()));
  const ints = Array.from({ length: 1000 }, () => a.int(1, 6));
  assert.ok(ints.every((i) => i >= 1 && i <= 6));
  assert.equal(new Set(ints).size, 6);
  assert.equal(createRng(7).fork().next(), createRng(7).fork().next());
});

test('durations and sizes parse with units and reject garbage with a stable code', () => {
  assert.equal(parseDurationMs('250ms'), 250);
  assert.equal(parseDurationMs('20s'), 20_000);
  assert.equal(parseDurationMs('1m'), 60_000);
  assert.equal(parseDurationMs('15'), 15);
  assert.equal(parseSizeBytes('64KiB'), 65_536);
  assert.equal(parseSizeBytes('4MiB'), 4 * 1024 * 1024);
  assert.throws(() => parseDurationMs('soon'), (e: unknown) => e instanceof TailgateError && e.code === 'CONFIG_INVALID');
  assert.throws(() => parseSizeBytes('12 parsecs'), TailgateError);
});

test('the shared token rule counts whitespace-separated words', () => {
  assert.equal(countTokens(''), 0);
  assert.equal(countTokens(' the fleet\nkeeps  its tail '), 5);
});

test('prompt token ids: one per counted word, equal words equal ids', () => {
  const ids = promptTokenIds(' the fleet\nkeeps  the tail ');
  assert.equal(ids.length, countTokens(' the fleet\nkeeps  the tail '));
  assert.deepEqual([...ids], ['the', 'fleet', 'keeps', 'the', 'tail'].map(tokenId));
  assert.equal(promptTokenIds('').length, 0);
});

test('durationSchema (config files): milliseconds as a number or text with a unit; anything else is one clear issue', () => {
  assert.equal(durationMs.parse(250), 250);
  assert.equal(durationMs.parse('1.5s'), 1500);
  assert.equal(durationMs.parse('10m'), 600_000);
  const bad = durationMs.safeParse('soon');
  assert.equal(bad.success, false);
  assert.deepEqual(bad.error?.issues.map((i) => i.message), ['expected a duration such as 250ms, 20s or 1m (got "soon")']);
  assert.equal(durationMs.safeParse(-1).success, false);
});

test('issueText: a config file\'s first schema issue as its error line names it (unknown key, missing field, zod\'s own message)', () => {
  const schema = z.strictObject({ workers: z.number().int().positive(), router: z.strictObject({ replicas: z.number() }).optional() });
  const first = (input: unknown) => {
    const r = schema.safeParse(input);
    assert.equal(r.success, false);
    return issueText(r.error!.issues[0]!);
  };
  assert.deepEqual(first({ workers: 2, router: { replicas: 1, replica: 2 } }), { path: ['router', 'replica'], message: 'unknown field' });
  assert.deepEqual(first({}), { path: ['workers'], message: 'missing (expected number)' });
  const other = first({ workers: -1 });
  assert.deepEqual(other.path, ['workers']);
  assert.match(other.message, /0/, 'zod\'s own message, which says the bound');
});
