import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import { TailgateError, type Clock } from '../core/index.js';
import { parseFault, type ActiveFaults, type Engine, type FaultSpec } from '../engine/index.js';

/** A GPU-side slowdown on one worker: the engine runs `factor` times slower while its GPU stays busy at lowered clocks. */
export interface GpuThrottleSpec {
  worker: number;
  atMs: number;
  forMs: number;
  /** Steps take this many times longer; the SM clock reads base / factor. @default 2.5 */
  factor: number;
}

/** Figures of the simulated GPU (an H100 SXM running vLLM), as dcgm-exporter prints them. */
export const SIMULATED_GPU = {
  modelName: 'NVIDIA H100 80GB HBM3',
  smClockMhz: 1980,
  memClockMhz: 2619,
  idlePowerW: 120,
  maxPowerW: 700,
  /** HW slowdown + HW thermal slowdown, what a throttled GPU reports. */
  throttleReasons: 0x8 | 0x40,
  /** Utilisation is averaged over this window, as NVML does over its sample period. */
  utilWindowMs: 500,
} as const;

const THROTTLE_DEFAULT_FACTOR = 2.5;

/**
 * Reads `worker=1,kind=throttle,at=5s,for=10s[,factor=2.5]`; null when the text is another kind
 * (those go to the engine's `parseFault`).
 *
 * @example parseThrottle('worker=1,kind=throttle,for=10s') // { worker: 1, atMs: 0, forMs: 10000, factor: 2.5 }
 * @throws TailgateError CONFIG_INVALID naming the bad part
 */
export function parseThrottle(text: string): GpuThrottleSpec | null {
  if (!/(^|,)\s*kind\s*=\s*throttle\s*(,|$)/.test(text)) return null;
  const asSlow = text.replace(/kind\s*=\s*throttle/, 'kind=slow');
  let f: FaultSpec;
  try {
    f = parseFault(asSlow);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', (e as Error).message.replace(/kind=slow/g, 'kind=throttle'));
  }
  const factor = /(^|,)\s*factor\s*=/.test(text) ? f.factor! : THROTTLE_DEFAULT_FACTOR;
  return { worker: f.worker, atMs: f.atMs, forMs: f.forMs, factor };
}

/** What the exporter reads from each simulated worker. */
export interface GpuWorkerSource {
  index: number;
  /** `host:port`, printed as the `pod` label. */
  id: string;
  engine: Engine;
}

export interface GpuMetricsOptions {
  port: number;
  host: string;
  workers: readonly GpuWorkerSource[];
  clock: Clock;
  /** Clock time from which throttle `atMs` counts. */
  originMs: number;
  throttles: readonly GpuThrottleSpec[];
  /** The worker's active faults (a `slow` fault is host-side: the GPU waits on the host). */
  faults: (worker: number) => ActiveFaults;
}

/** The fleet's dcgm-exporter look-alike. */
export interface GpuMetricsServer {
  /** `http://host:port/metrics` */
  readonly url: string;
  /** The page as it would be served now. */
  render(): string;
  close(): Promise<void>;
}

interface BusySample {
  tMs: number;
  busyMs: number;
}

function uuidFor(i: number): string {
  const hex = (n: number, len: number): string => (n >>> 0).toString(16).padStart(len, '0').slice(-len);
  const a = Math.imul(i + 1, 0x9e3779b1);
  return `GPU-${hex(a, 8)}-${hex(a >>> 16, 4)}-4${hex(i, 3)}-8${hex(a >>> 4, 3)}-${hex(Math.imul(i + 7, 0x85ebca6b), 8)}${hex(i, 4)}`;
}

/**
 * Serves `/metrics` in dcgm-exporter's Kubernetes-mode layout for the fleet: one GPU per worker
 * (`gpu` = worker index, `pod` = worker id), utilisation and power following the engine's busy
 * fraction over the last 500 ms (`engine.stats().busyMsTotal`), steady clocks. A `slow` fault is
 * host-side (the GPU waits: utilisation / factor); a throttle keeps the GPU busy at base / factor
 * clocks with throttle reasons set. The sampler timer and the server are unref()ed.
 *
 * @example const g = await startGpuMetrics({ port: 0, host: '127.0.0.1', workers, clock, originMs, throttles: [], faults });
 */
export async function startGpuMetrics(o: GpuMetricsOptions): Promise<GpuMetricsServer> {
  const node = process.env['NODE_NAME'] ?? hostname();
  const history: BusySample[][] = o.workers.map(() => []);
  const sample = (): void => {
    const now = o.clock.now();
    o.workers.forEach((w, i) => {
      const h = history[i]!;
      h.push({ tMs: now, busyMs: w.engine.stats().busyMsTotal });
      while (h.length > 2 && h[1]!.tMs <= now - SIMULATED_GPU.utilWindowMs) h.shift();
    });
  };
  sample();
  const timer = setInterval(sample, 100);
  timer.unref();

  const throttleFor = (worker: number, nowMs: number): number => {
    let f = 1;
    const t = nowMs - o.originMs;
    for (const s of o.throttles) if (s.worker === worker && t >= s.atMs && t < s.atMs + s.forMs) f = Math.max(f, s.factor);
    return f;
  };

  const render = (): string => {
    sample();
    const now = o.clock.now();
    const rows = o.workers.map((w, i) => {
      const h = history[i]!;
      const first = h[0]!;
      const last = h[h.length - 1]!;
      const span = last.tMs - first.tMs;
      const busy = span > 0 ? Math.min(1, Math.max(0, (last.busyMs - first.busyMs) / span)) : 0;
      const throttle = throttleFor(w.index, now);
      const active = o.faults(w.index);
      const hostSlow = throttle > 1 ? 1 : active.slowFactor;
      const util = Math.round((busy / hostSlow) * 100);
      const clock = Math.round(SIMULATED_GPU.smClockMhz / throttle);
      const power = SIMULATED_GPU.idlePowerW + (SIMULATED_GPU.maxPowerW - SIMULATED_GPU.idlePowerW) * (util / 100) * (0.4 + 0.6 / throttle);
      const labels = `gpu="${i}",UUID="${uuidFor(i)}",pci_bus_id="00000000:${(0x18 + i * 0x11).toString(16).toUpperCase().padStart(2, '0')}:00.0",device="nvidia${i}",modelName="${SIMULATED_GPU.modelName}",Hostname="${node}",container="vllm",namespace="tailgate-fleet",pod="${w.id}"`;
      return { labels, util, power, clock, reasons: throttle > 1 ? SIMULATED_GPU.throttleReasons : 0 };
    });
    const fam = (name: string, help: string, value: (r: (typeof rows)[number]) => string): string =>
      `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${rows.map((r) => `${name}{${r.labels}} ${value(r)}\n`).join('')}`;
    return [
      fam('DCGM_FI_DEV_SM_CLOCK', 'SM clock frequency (in MHz).', (r) => String(r.clock)),
      fam('DCGM_FI_DEV_MEM_CLOCK', 'Memory clock frequency (in MHz).', () => String(SIMULATED_GPU.memClockMhz)),
      fam('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'Current clock event reasons (bitmask).', (r) => String(r.reasons)),
      fam('DCGM_FI_DEV_POWER_USAGE', 'Power draw (in W).', (r) => r.power.toFixed(6)),
      fam('DCGM_FI_DEV_GPU_UTIL', 'GPU utilization (in %).', (r) => String(r.util)),
      fam('DCGM_FI_DEV_XID_ERRORS', 'Value of the last XID error encountered.', () => '0').replace(/namespace="/g, 'err_code="0",err_msg="No Error",namespace="'),
    ].join('');
  };

  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/metrics' || req.url?.startsWith('/metrics?') === true)) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
      res.end(render());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
    res.end('404 page not found\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new TailgateError('CONFIG_INVALID', `--gpu-metrics-port ${o.port}: ${e.code ?? e.message}`, { cause: e })));
    server.listen(o.port, o.host, () => resolve());
  });
  server.unref();
  const addr = server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : o.port;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host;
  let closing: Promise<void> | null = null;
  return {
    url: `http://${host}:${port}/metrics`,
    render,
    close() {
      closing ??= new Promise<void>((resolve) => {
        clearInterval(timer);
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
