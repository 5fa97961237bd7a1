// The CPU of bench's fast lane per SSE event with no sockets, by the number of streams in flight:
// `Call#onResponseBytesNow` (what `Conn#readNow` hands each steady token event) fed one vLLM-shaped
// event at a time, round-robin over the streams as the reads come, against the raw-socket floor's
// read handler on the same bytes (counting "\n\n"). Each stream first takes its role and first
// content events on the general path, which learns the event's template, as in a run. In isolation
// nothing else runs between two reads of a stream, so what grows with the streams is the lane's own
// per-stream state falling out of the caches; in a real run the kernel and Node's read path sit in
// between as well (perf/bench.ts measures that).
// Run: node --import tsx perf/bench-lane.ts [--streams 1,256,2048] [--events 126] [--rounds 15]
import { callOnce } from '../src/bench/request-call.js';
import type { BytesHandler } from '../src/bench/socket-pool.js';
import { defaultTokenizer } from '../src/workload/index.js';
import { percentile } from '../src/stats/index.js';
import { numberArg, textArg } from './args.js';
import { floorReader } from './bench-clients.js';

const STREAMS = textArg('--streams', '1,256,2048').split(',').map(Number);
const EVENTS = numberArg('--events', 126);
const ROUNDS = numberArg('--rounds', 15);

const FRAME = '"object":"chat.completion.chunk","created":1789542731,"model":"Qwen/Qwen3-8B"';
const event = (delta: string, finish = 'null'): string =>
  `data: {"id":"chatcmpl-9f3b6a2c1d7e4085",${FRAME},"choices":[{"index":0,"delta":${delta},"logprobs":null,"finish_reason":${finish},"token_ids":null}]}\n\n`;
const FIRST = Buffer.from(event('{"role":"assistant","content":""}') + event('{"content":"The"}') + event('{"content":" capital"}'));
const STEADY = Buffer.from(event('{"content":" word"}'));
const LAST = Buffer.from(`${event('{"content":""}', '"stop"')}data: [DONE]\n\n`);

const controller = { abort(): void {}, pause(): void {}, resume(): void {} } as never;

/** Events a round measures at least (few streams repeat their calls), so the CPU clock's granularity does not count. */
const MIN_EVENTS = 250_000;

/** ns of CPU per event of the lane over `streams` calls in flight. */
async function laneRound(streams: number): Promise<number> {
  const reps = Math.ceil(MIN_EVENTS / (EVENTS * streams));
  let us = 0;
  for (let k = 0; k < reps; k++) us += await laneCalls(streams);
  return (us * 1000) / (reps * EVENTS * streams);
}

/** us of CPU the lane took for one call on each of `streams` streams. */
async function laneCalls(streams: number): Promise<number> {
  const handlers: BytesHandler[] = [];
  const dispatcher = { dispatch: (_o: unknown, h: unknown): boolean => handlers.push(h as BytesHandler) > 0 };
  const calls = Array.from({ length: streams }, (_, i) =>
    callOnce(dispatcher, { path: '/v1/chat/completions', body: '{}', headers: {}, streaming: true, inputTokens: 128 }, {
      id: `r${i}`, phase: 'profiling', now: () => performance.now(), tokenizer: defaultTokenizer, workerHeader: 'x-worker', timeoutMs: 600_000,
    }));
  for (const h of handlers) {
    h.onRequestStart?.(controller, {});
    h.onResponseStart?.(controller, 200, { 'content-type': 'text/event-stream' }, '');
    h.onResponseBytes(FIRST, 0, FIRST.length, performance.now());
  }
  let taken = 0;
  const c0 = process.cpuUsage();
  for (let e = 0; e < EVENTS; e++) for (const h of handlers) taken += h.onResponseBytesNow(STEADY, 0, STEADY.length, performance.now()) === STEADY.length ? 1 : 0;
  const c = process.cpuUsage(c0);
  for (const h of handlers) {
    h.onResponseBytes(LAST, 0, LAST.length, performance.now());
    h.onResponseEnd?.(controller, {});
  }
  const results = await Promise.all(calls);
  if (taken !== EVENTS * streams || results.some((r) => r.record.chunkMs.length !== EVENTS + 2)) throw new Error(`the fast lane took ${taken} of ${EVENTS * streams} events`);
  return c.user + c.system;
}

/** ns of CPU per event of the floor's read handler over the same bytes, `streams` of them in flight. */
function floorRound(streams: number): number {
  const counter = { messages: 0 };
  const readers = Array.from({ length: streams }, () => floorReader(STEADY, counter));
  const events = Math.ceil(MIN_EVENTS / (EVENTS * streams)) * EVENTS;
  const c0 = process.cpuUsage();
  for (let e = 0; e < events; e++) for (const read of readers) read(STEADY.length);
  const c = process.cpuUsage(c0);
  if (counter.messages !== events * streams) throw new Error(`the floor counted ${counter.messages}`);
  return ((c.user + c.system) * 1000) / (events * streams);
}

const median = (xs: number[]): number => percentile(Float64Array.from(xs).sort(), 50);

console.log(`CPU per steady SSE event (${STEADY.length} bytes), no sockets: median of ${ROUNDS} rounds of at least ${MIN_EVENTS} events, ${EVENTS} per call`);
console.log('| streams | bench fast lane ns | floor count ns | lane / floor |');
console.log('|---:|---:|---:|---:|');
for (const streams of STREAMS) {
  // Warm both, so each is compiled before it is measured.
  await laneRound(streams);
  floorRound(streams);
  const lane: number[] = [];
  const floor: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    lane.push(await laneRound(streams));
    floor.push(floorRound(streams));
  }
  console.log(`| ${streams} | ${median(lane).toFixed(0)} | ${median(floor).toFixed(0)} | ${(median(lane) / median(floor)).toFixed(2)} |`);
}
