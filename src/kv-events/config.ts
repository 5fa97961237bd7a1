import { TailgateError } from '../core/index.js';

/** vLLM's `--kv-events-config` (vllm/config/kv_events.py, KVEventsConfig), field for field. */
export interface KvEventsConfig {
  /** @default false */
  enableKvCacheEvents: boolean;
  /** @default 'zmq' when events are enabled, else 'null' */
  publisher: 'null' | 'zmq';
  /** The PUB socket: bound when it has `*`, `::`, or is ipc/inproc, else connected (vLLM's rule). @default 'tcp://*:5557' */
  endpoint: string;
  /** The ROUTER socket answering replay requests. @default null (no replay) */
  replayEndpoint: string | null;
  /** Batches kept for replay. @default 10000 */
  bufferSteps: number;
  /** The PUB socket's high-water mark. @default 100000 */
  hwm: number;
  /** Batches queued for sending at most (more are dropped and counted). @default 100000 */
  maxQueueSize: number;
  /** The first frame of every message. @default '' */
  topic: string;
}

const KEYS: Record<string, keyof KvEventsConfig> = {
  enable_kv_cache_events: 'enableKvCacheEvents',
  publisher: 'publisher',
  endpoint: 'endpoint',
  replay_endpoint: 'replayEndpoint',
  buffer_steps: 'bufferSteps',
  hwm: 'hwm',
  max_queue_size: 'maxQueueSize',
  topic: 'topic',
};

function bad(msg: string): TailgateError {
  return new TailgateError('CONFIG_INVALID', `--kv-events-config: ${msg}`);
}

/**
 * Parses the JSON vLLM takes as `--kv-events-config` (snake_case keys, vLLM's defaults).
 *
 * @example
 * parseKvEventsConfig('{"enable_kv_cache_events":true,"endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5657"}');
 */
export function parseKvEventsConfig(json: string): KvEventsConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw bad(`not JSON: ${json.slice(0, 80)}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw bad('must be a JSON object');
  const c: Partial<KvEventsConfig> = {};
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const key = KEYS[k];
    if (key === undefined) throw bad(`unknown key "${k}" (known: ${Object.keys(KEYS).join(', ')})`);
    (c as Record<string, unknown>)[key] = v;
  }
  const out: KvEventsConfig = {
    enableKvCacheEvents: c.enableKvCacheEvents ?? false,
    publisher: c.publisher ?? (c.enableKvCacheEvents === true ? 'zmq' : 'null'),
    endpoint: c.endpoint ?? 'tcp://*:5557',
    replayEndpoint: c.replayEndpoint ?? null,
    bufferSteps: c.bufferSteps ?? 10_000,
    hwm: c.hwm ?? 100_000,
    maxQueueSize: c.maxQueueSize ?? 100_000,
    topic: c.topic ?? '',
  };
  if (typeof out.enableKvCacheEvents !== 'boolean') throw bad('enable_kv_cache_events must be true or false');
  if (out.publisher !== 'zmq' && out.publisher !== 'null') throw bad(`publisher must be "zmq" or "null" (got ${JSON.stringify(out.publisher)})`);
  for (const k of ['endpoint', 'topic'] as const) if (typeof out[k] !== 'string') throw bad(`${k} must be a string`);
  if (out.replayEndpoint !== null && typeof out.replayEndpoint !== 'string') throw bad('replay_endpoint must be a string or null');
  for (const k of ['bufferSteps', 'hwm', 'maxQueueSize'] as const) {
    if (!Number.isInteger(out[k]) || out[k] < 0) throw bad(`${k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`)} must be an integer >= 0`);
  }
  for (const ep of [out.endpoint, out.replayEndpoint]) if (ep !== null && !/^(tcp|ipc|inproc):\/\//.test(ep)) throw bad(`endpoint ${ep} must start with tcp://, ipc:// or inproc://`);
  return out;
}

/** Whether a config publishes anything (vLLM: events enabled and a zmq publisher). */
export function publishes(c: KvEventsConfig): boolean {
  return c.enableKvCacheEvents && c.publisher === 'zmq';
}

/**
 * The endpoint of engine `i`, as vLLM offsets one per data-parallel rank: a tcp port + i, an
 * inproc name + `_dp<i>`; unchanged for i = 0 and for a wildcard or zero port (a free one each).
 *
 * @example
 * offsetEndpoint('tcp://*:5557', 2); // 'tcp://*:5559'
 */
export function offsetEndpoint(endpoint: string, i: number): string {
  if (i === 0) return endpoint;
  if (endpoint.startsWith('inproc://')) return `${endpoint}_dp${i}`;
  const at = endpoint.lastIndexOf(':');
  const port = endpoint.slice(at + 1);
  if (!endpoint.startsWith('tcp://') || port === '*' || port === '0') return endpoint;
  const n = Number(port);
  if (!Number.isInteger(n) || n < 1 || n + i > 65535) throw bad(`endpoint ${endpoint} has no port that can be offset by ${i}`);
  return `${endpoint.slice(0, at)}:${n + i}`;
}

/** vLLM's rule for the PUB socket: bind a wildcard, `::`, ipc or inproc endpoint; connect to any other. */
export function bindsEndpoint(endpoint: string): boolean {
  return endpoint.includes('*') || endpoint.includes('::') || endpoint.startsWith('ipc://') || endpoint.startsWith('inproc://');
}
