import { seedGates } from '../gate/index.js';
import type { Scenario, SimTenant } from './scenario.js';

/** The seed's setup (docs/reference.md#the-seed): 8 H100 workers, AIPerf at concurrency 2048, 128/128, its gates. */
const AICR_H100: Scenario = {
  name: 'aicr-h100',
  description: '8 x h100-qwen3-8b behind one router, closed loop at 2048 streams, 16384 requests after 2048 warm-up, 128 in / 128 out (the seed setup, healthy)',
  workers: 8,
  profile: 'h100-qwen3-8b',
  model: 'Qwen/Qwen3-8B',
  load: { kind: 'closed', concurrency: 2048 },
  requestCount: 16_384,
  warmupRequestCount: 2048,
  inputTokens: { mean: 128, stddev: 0 },
  outputTokens: { mean: 128, stddev: 0 },
  datasetEntries: 100,
  datasetSeed: 100,
  datasetSampling: 'shuffle',
  router: { replicas: 1, replicaPick: 'round-robin' },
  faults: [],
  bursty: null,
  gates: seedGates({ gpus: 8 }),
};

/**
 * Two small workers behind a router that holds all but 4 requests each, an open loop at 80
 * requests/s (about 1.7x what they serve at 32 in / 8 out): where flow control decides who waits.
 */
const OVERLOADED_SMALL: Scenario = {
  name: 'batch-interactive',
  description: '',
  workers: 2,
  profile: 'small',
  model: 'Qwen/Qwen3-8B',
  load: { kind: 'rate', ratePerS: 80, mode: 'poisson' },
  requestCount: 2400,
  warmupRequestCount: 0,
  inputTokens: { mean: 32, stddev: 0 },
  outputTokens: { mean: 8, stddev: 0 },
  datasetEntries: 100,
  datasetSeed: 100,
  datasetSampling: 'shuffle',
  router: { replicas: 1, replicaPick: 'round-robin', maxInflightPerWorker: 4, flows: true },
  faults: [],
  bursty: null,
  gates: [],
};

/**
 * One small worker behind a router that holds all but 4 requests, with flow control: a noisy
 * tenant runs 20 streams of 32 in / 32 out, 10x its weighted share of the 4 slots (2), and an
 * interactive tenant sends one request at a time of 2000 in / 16 out. `test/router-flows.test.ts`
 * and `perf/agreement.ts --flows` run the same live.
 */
const NOISY_TENANTS: SimTenant[] = [
  { name: 'noisy', share: 1, weight: 1, priority: 'standard', load: { kind: 'closed', concurrency: 20 } },
  { name: 'interactive', share: 1, weight: 1, priority: 'standard', load: { kind: 'closed', concurrency: 1 }, inputTokens: { mean: 2000, stddev: 0 }, outputTokens: { mean: 16, stddev: 0 } },
];
const NOISY_NEIGHBOUR: Scenario = {
  name: 'noisy-neighbour',
  description: '1 small worker, a router cap of 4 with flow control: a noisy tenant runs 20 streams of 32 in / 32 out (10x its weighted share of the slots), an interactive one sends one request at a time of 2000 in / 16 out',
  workers: 1,
  profile: 'small',
  model: 'Qwen/Qwen3-8B',
  load: { kind: 'tenants' },
  requestCount: 640,
  warmupRequestCount: 40,
  inputTokens: { mean: 32, stddev: 0 },
  outputTokens: { mean: 32, stddev: 0 },
  datasetEntries: 100,
  datasetSeed: 100,
  datasetSampling: 'shuffle',
  router: { replicas: 1, replicaPick: 'round-robin', maxInflightPerWorker: 4, flows: true },
  faults: [],
  bursty: null,
  gates: [],
  tenants: NOISY_TENANTS,
};

/**
 * Built-in scenarios by name. Warm-up ends near t = 2 s and a healthy profiling window lasts
 * about 16 s, so the stall (t = 6 s for 15 s) sits in the middle of the measured window.
 */
export const PRESETS: Readonly<Record<string, Scenario>> = Object.freeze({
  'aicr-h100': AICR_H100,
  'aicr-h100-stall': {
    ...AICR_H100,
    name: 'aicr-h100-stall',
    description: 'the seed setup with worker 3 stalled from t=6s for 15s, in the middle of the measured window (the single-worker backup)',
    faults: [{ worker: 3, kind: 'stall', atMs: 6000, forMs: 15_000 }],
  },
  'aicr-h100-stall-2': {
    ...AICR_H100,
    name: 'aicr-h100-stall-2',
    description: 'the seed setup with two workers stalled at overlapping times: worker 3 from t=6s for 15s, worker 5 from t=10s for 10s',
    faults: [{ worker: 3, kind: 'stall', atMs: 6000, forMs: 15_000 }, { worker: 5, kind: 'stall', atMs: 10_000, forMs: 10_000 }],
  },
  'aicr-h100-stall-3': {
    ...AICR_H100,
    name: 'aicr-h100-stall-3',
    description: 'the seed setup with three workers stalled at overlapping times: worker 3 from t=6s for 15s, worker 6 from t=8s for 6s, worker 5 from t=10s for 10s',
    faults: [{ worker: 3, kind: 'stall', atMs: 6000, forMs: 15_000 }, { worker: 6, kind: 'stall', atMs: 8000, forMs: 6000 }, { worker: 5, kind: 'stall', atMs: 10_000, forMs: 10_000 }],
  },
  'aicr-h100-bursty': {
    ...AICR_H100,
    name: 'aicr-h100-bursty',
    description: 'the seed setup under the seeded bursty process, re-drawn per trial: quiet windows (mean 12s) alternate with active ones (mean 10s) in which one random worker stalls (mean 8s); round-robin fails about 1 run in 3, as in the seed\'s active windows',
    bursty: { quietMs: 12_000, activeMs: 10_000, meanStallMs: 8000 },
  },
  'aicr-h100-slow': {
    ...AICR_H100,
    name: 'aicr-h100-slow',
    description: 'the seed setup with every worker 1.6x slower for the whole run (broad degradation: nothing to route around)',
    faults: Array.from({ length: 8 }, (_, worker) => ({ worker, kind: 'slow' as const, atMs: 0, forMs: 3_600_000, factor: 1.6 })),
  },
  'aicr-h100-slow-worker': {
    ...AICR_H100,
    name: 'aicr-h100-slow-worker',
    description: 'the seed setup with worker 3 ten times slower for the whole run (one degraded GPU: route around it without dropping it)',
    faults: [{ worker: 3, kind: 'slow', atMs: 0, forMs: 3_600_000, factor: 10 }],
  },
  'shared-prefix': {
    ...AICR_H100,
    name: 'shared-prefix',
    description: '8 x h100-qwen3-8b, 512 streams, 8192 requests after 1024 warm-up: 16 groups, each behind its own 2000-token system prompt, then 128 distinct tokens per request (4096 entries) and 128 out; what prefix caching and affinity routing are for',
    load: { kind: 'closed', concurrency: 512 },
    requestCount: 8192,
    warmupRequestCount: 1024,
    datasetEntries: 4096,
    workload: { kind: 'shared-prefix', groups: 16, prefixTokens: 2000, prefixRole: 'system', userContextTokens: 0 },
    gates: [],
  },
  'prefix-pressure': {
    ...AICR_H100,
    name: 'prefix-pressure',
    description: "8 x small workers (2048 KV blocks each), 128 streams, 3000 requests after 512 warm-up: 64 groups behind 2000-token prompts (8000 blocks, ~4x one worker's cache), 64 in / 32 out; `simulate --preset prefix-pressure` compares prefix sources estimate, events, oracle",
    profile: 'small',
    load: { kind: 'closed', concurrency: 128 },
    requestCount: 3000,
    warmupRequestCount: 512,
    inputTokens: { mean: 64, stddev: 0 },
    outputTokens: { mean: 32, stddev: 0 },
    datasetEntries: 1024,
    workload: { kind: 'shared-prefix', groups: 64, prefixTokens: 2000, prefixRole: 'system', userContextTokens: 0 },
    gates: [],
  },
  'noisy-neighbour': NOISY_NEIGHBOUR,
  'noisy-neighbour-fifo': {
    ...NOISY_NEIGHBOUR,
    name: 'noisy-neighbour-fifo',
    description: 'noisy-neighbour without flow control: one FIFO queue for both tenants',
    router: { ...NOISY_NEIGHBOUR.router, flows: false },
  },
  'noisy-neighbour-alone': {
    ...NOISY_NEIGHBOUR,
    name: 'noisy-neighbour-alone',
    description: 'noisy-neighbour\'s interactive tenant alone: its TTFT without the noisy one',
    requestCount: 200,
    warmupRequestCount: 0,
    tenants: NOISY_TENANTS.slice(1),
  },
  'long-and-short-prompts': {
    ...OVERLOADED_SMALL,
    name: 'long-and-short-prompts',
    description: '4 small workers, 8 requests/s (poisson): one request in five a 6000-token prompt (16 out), the others 100 in / 64 out; what token-aware load (least-tokens) is for',
    workers: 4,
    load: { kind: 'rate', ratePerS: 8, mode: 'poisson' },
    requestCount: 600,
    inputTokens: { mean: 100, stddev: 0 },
    outputTokens: { mean: 64, stddev: 0 },
    router: { replicas: 1, replicaPick: 'round-robin' },
    tenants: [
      { name: 'long', share: 1, weight: 1, priority: 'standard', inputTokens: { mean: 6000, stddev: 0 }, outputTokens: { mean: 16, stddev: 0 } },
      { name: 'short', share: 4, weight: 1, priority: 'standard', inputTokens: { mean: 100, stddev: 0 }, outputTokens: { mean: 64, stddev: 0 } },
    ],
  },
  'batch-interactive': {
    ...OVERLOADED_SMALL,
    description: '2 small workers, 80 requests/s (1.7x capacity): 80% sheddable batch, 20% critical interactive, a router queue of 256 with flow control: batch waits and is shed when the queue is full or its wait would pass 5 s, interactive goes first',
    router: { ...OVERLOADED_SMALL.router, maxQueue: 256, sheddableMaxWaitMs: 5000 },
    tenants: [{ name: 'batch', share: 0.8, weight: 1, priority: 'sheddable' }, { name: 'interactive', share: 0.2, weight: 1, priority: 'critical' }],
  },
});

/** Names of the built-in scenarios. */
export const PRESET_NAMES: readonly string[] = Object.keys(PRESETS);
