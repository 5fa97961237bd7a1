// perf/router: TTFT added over a direct connection and CPU per relayed SSE message, for tailgate
// and for nginx (least_conn, random two least_conn) and HAProxy (leastconn), measured side by
// side in one run against the same simulated fleet; then a stall scenario through each.
//
//   node --import tsx perf/router.ts [--streams 256] [--requests 1024] [--no-install] [--skip-stall]
//                                    [--rounds 2] [--targets tailgate,nginx] [--cpu-prof DIR] [--baseline DIR]
//                                    [--node-flags 'V8 FLAGS'] [--kv-events]
//
// --kv-events: the fleet publishes KV events over ZMQ (as vLLM's --kv-events-config), and two more
// targets run: `tailgate prefix` and `tailgate prefix +kv-events` (following every worker's events);
// the last line is the CPU per message of events on against off (the target: within 1.05x).
//
// Two rows are the floor of a Node relay (no routing, metrics or parsing): `node bare relay` with
// stream sockets, and `(handle-level)` reading into one shared buffer and writing with write(2) on
// the client's descriptor, as tailgate's relay does.
//
// Every proxy runs at once and the measured runs take turns (--rounds rounds, rotating order), so a
// change in the machine's load falls on all of them alike. --targets keeps the targets whose name contains one of the words; --cpu-prof writes a V8 CPU
// profile of each tailgate router and Node floor into DIR (for `node --cpu-prof`-style analysis). --baseline DIR adds
// `tailgate adaptive (baseline DIR)`: the router of another checkout DIR (with its node_modules), for an A/B in one run;
// it may be given more than once.
//
// Installs nginx and haproxy from Debian (apt-get) when they are missing, unless --no-install.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runBench } from '../src/bench/index.js';
import { socketFd, writeDirect } from '../src/router/direct-write.js';
import { isMetricBlock } from '../src/stats/index.js';
import { hasArg, numberArg, optionalArg, textArgs } from './args.js';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const STREAMS = numberArg('--streams', 256);
const REQUESTS = numberArg('--requests', 4 * STREAMS);
const OUTPUT_TOKENS = 64;
const ONLY = optionalArg('--targets')?.split(',').filter((w) => w !== '');
const CPU_PROF = optionalArg('--cpu-prof');
// V8 flags for every Node process measured (tailgate's routers, baselines and the Node floors), e.g. '--max-semi-space-size=32'.
const NODE_FLAGS = optionalArg('--node-flags')?.split(' ').filter((w) => w !== '') ?? [];
/** Node's own options for every measured Node process. */
const nodeArgs = [...NODE_FLAGS, ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [])];
const ROUNDS = numberArg('--rounds', 2);
const KV_EVENTS = hasArg('--kv-events');
// ZMQ ports of the fleet's KV events: worker i publishes on base + i, its replay socket on base + 100 + i.
const KV_BASE = 20_000 + Math.floor(Math.random() * 12_000);
const KV_CONFIG = JSON.stringify({ enable_kv_cache_events: true, endpoint: `tcp://*:${KV_BASE}`, replay_endpoint: `tcp://*:${KV_BASE + 100}` });
const BASELINES = textArgs('--baseline');

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? 0 : s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}
const WORKERS = 4;
const CLK_TCK = 100;

function which(cmd: string): string | null {
  const r = spawnSync('sh', ['-c', `command -v ${cmd} || ls /usr/sbin/${cmd} 2>/dev/null`], { encoding: 'utf8' });
  const p = r.stdout.trim().split('\n')[0];
  return p ? p : null;
}

function ensureInstalled(): { nginx: string | null; haproxy: string | null } {
  let nginx = which('nginx');
  let haproxy = which('haproxy');
  if ((!nginx || !haproxy) && !hasArg('--no-install')) {
    console.error('installing nginx and haproxy from Debian (apt-get) ...');
    spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
    spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'nginx', 'haproxy'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    nginx = which('nginx');
    haproxy = which('haproxy');
  }
  return { nginx, haproxy };
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** CPU seconds (user + kernel, and kernel alone) of a process and its live children. */
function cpuSeconds(pid: number): { total: number; sys: number } {
  let ticks = 0;
  let sysTicks = 0;
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${d}/stat`, 'utf8');
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(f[1]);
    if (Number(d) === pid || ppid === pid) {
      ticks += Number(f[11]) + Number(f[12]);
      sysTicks += Number(f[12]);
    }
  }
  return { total: ticks / CLK_TCK, sys: sysTicks / CLK_TCK };
}

function startLines(cmd: string, argv: string[], readyLine: string | null): Promise<{ child: ChildProcess; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: string[] = [];
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) => reject(new Error(`${cmd} exited ${code}: ${err}`)));
    if (readyLine === null) resolve({ child, lines });
    createInterface({ input: child.stdout! }).on('line', (l) => {
      lines.push(l);
      if (l === readyLine) resolve({ child, lines });
    });
  });
}

async function waitHttp(url: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(url);
      await r.text();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`${url} never answered`);
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
    setTimeout(() => child.kill('SIGKILL'), 5000).unref();
  });
}

interface Target {
  name: string;
  start(backends: string[]): Promise<{ url: string; pid: number | null; stop(): Promise<void> }>;
}

const dir = mkdtempSync(join(tmpdir(), 'tailgate-perf-'));

function tailgate(policy: string, checkout?: string, extra: readonly string[] = []): Target {
  return {
    name: (checkout === undefined ? `tailgate ${policy}` : `tailgate ${policy} (baseline ${checkout})`) + (extra.includes('--kv-events-config') ? ' +kv-events' : ''),
    async start(backends) {
      const cli = checkout === undefined ? CLI : join(checkout, 'src/cli/main.ts');
      // An older checkout's router may predate --drain-delay (it then stops at once on SIGTERM anyway).
      const drain = checkout === undefined ? ['--drain-delay', '0s'] : [];
      const p = await startLines(process.execPath, [...nodeArgs, '--import', 'tsx', cli, 'route', '--port', '0', ...drain, '--policy', policy, '--max-inflight-per-worker', '100000', ...extra, ...backends.flatMap((b) => ['--backend', b])], 'ready');
      const { url } = JSON.parse(p.lines[0]!) as { url: string };
      return { url, pid: p.child.pid ?? null, stop: () => stop(p.child) };
    },
  };
}

/**
 * The floor of a Node relay: round-robin, keep-alive upstream sockets, chunk frames forwarded as
 * they came, nothing else (no routing state, metrics or parsing). Runs as this script with
 * `--bare-relay URL...`. `handles`: the lower floor of what Node costs per message, the way the
 * router relays: upstream reads into one shared buffer (`onread`) and client writes with one
 * write(2) on the socket's descriptor (`--bare-relay-fd`).
 */
function bareRelay(handles: boolean): Target {
  return {
    name: handles ? 'node bare relay (handle-level)' : 'node bare relay',
    async start(backends) {
      const p = await startLines(process.execPath, [...nodeArgs, '--import', 'tsx', fileURLToPath(import.meta.url), handles ? '--bare-relay-fd' : '--bare-relay', ...backends], 'ready');
      const { url } = JSON.parse(p.lines[0]!) as { url: string };
      return { url, pid: p.child.pid ?? null, stop: () => stop(p.child) };
    },
  };
}

/** An upstream connection of the bare relay, the response it reads now, and what ends it if the connection closes. */
interface BareConn {
  s: Socket;
  onData: ((d: Buffer, len: number) => void) | null;
  onClose: (() => void) | null;
}

function runBareRelay(urls: string[], handles: boolean): void {
  const ups = urls.map((u) => new URL(u));
  const idle: BareConn[][] = ups.map(() => []);
  const readBuf = Buffer.allocUnsafe(64 * 1024);
  const open = (i: number): BareConn => {
    const u = ups[i]!;
    const c: BareConn = { s: undefined as unknown as Socket, onData: null, onClose: null };
    const opts = { host: u.hostname, port: Number(u.port), noDelay: true };
    if (handles) c.s = connect({ ...opts, onread: { buffer: readBuf, callback: (n: number) => (c.onData?.(readBuf, n), true) } });
    else c.s = connect(opts).on('data', (d: Buffer) => c.onData?.(d, d.length));
    c.s.on('error', () => undefined);
    // a worker may close an idle keep-alive connection (between rounds): it leaves the pool, a response on it fails
    c.s.on('close', () => {
      const k = idle[i]!.indexOf(c);
      if (k >= 0) idle[i]!.splice(k, 1);
      c.onClose?.();
    });
    return c;
  };
  /** Writes `d[from, to)` to the client: one write(2) on its descriptor when nothing is queued (handle-level), else the stream. */
  const send = (out: Socket, d: Buffer, from: number, to: number): boolean => {
    if (handles && out.writableLength === 0) {
      const fd = socketFd(out);
      const n = fd >= 0 ? writeDirect(fd, d, from, to) : 0;
      if (n === to - from) return true;
      from += n;
    }
    // the shared read buffer is reused by the next read: the stream gets a copy
    return out.write(handles ? Buffer.from(d.subarray(from, to)) : d.subarray(from, to));
  };
  let next = 0;
  const server = createHttpServer({ noDelay: true, keepAliveTimeout: 65_000, requestTimeout: 0 }, (req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts);
      const i = next++ % ups.length;
      const u = ups[i]!;
      const conn = idle[i]!.pop() ?? open(i);
      const s = conn.s;
      conn.onClose = () => res.destroy();
      let head: Buffer | null = Buffer.alloc(0);
      let size = 0;
      let rem = 0;
      let state = 0; // 0 chunk header, 1 data, 2 data CRLF
      conn.onData = (d: Buffer, len: number): void => {
        let off = 0;
        if (head) {
          head = Buffer.concat([head, d.subarray(0, len)]);
          len = head.length;
          const e = head.indexOf('\r\n\r\n');
          if (e < 0) return;
          d = head;
          off = e + 4;
          head = null;
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.flushHeaders();
        }
        for (let p = off; p < len; ) {
          if (state === 1) {
            const k = Math.min(rem, len - p);
            p += k;
            rem -= k;
            if (rem === 0) state = 2;
          } else if (state === 2) {
            if (d[p++] === 10) state = 0;
          } else {
            const c = d[p++]!;
            if (c === 10) {
              if (size === 0) {
                // the terminal chunk: forward what came before it, end the response, keep the socket
                let z = p - 1;
                while (z > off && d[z - 1] !== 10) z--;
                if (z > off) send(res.socket!, d, off, z);
                res.end();
                conn.onData = null;
                conn.onClose = null;
                idle[i]!.push(conn);
                return;
              }
              state = 1;
              rem = size;
              size = 0;
            } else if (c !== 13) size = size * 16 + (c <= 57 ? c - 48 : (c | 32) - 87);
          }
        }
        if (!send(res.socket!, d, off, len)) {
          s.pause();
          res.socket!.once('drain', () => s.resume());
        }
      };
      s.write(Buffer.concat([Buffer.from(`POST ${req.url} HTTP/1.1\r\nhost: ${u.host}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`), body]));
    });
  });
  // exit on SIGTERM rather than be killed by it, so a --cpu-prof profile gets written
  process.once('SIGTERM', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => {
    console.log(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
    console.log('ready');
  });
}

function nginx(bin: string, balance: string): Target {
  return {
    name: `nginx ${balance}`,
    async start(backends) {
      const port = await freePort();
      const conf = join(dir, `nginx-${balance.replace(/\s/g, '-')}.conf`);
      writeFileSync(conf, `worker_processes 1;
daemon off;
pid ${conf}.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 16384; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream fleet {
    ${balance};
${backends.map((b) => `    server ${b.replace(/^https?:\/\//, '')};`).join('\n')}
    keepalive 4096;
  }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://fleet;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
`);
      const p = await startLines(bin, ['-c', conf, '-p', dir], null);
      const url = `http://127.0.0.1:${port}`;
      await waitHttp(`${url}/health`);
      return { url, pid: p.child.pid ?? null, stop: () => stop(p.child) };
    },
  };
}

function haproxy(bin: string): Target {
  return {
    name: 'haproxy leastconn',
    async start(backends) {
      const port = await freePort();
      const conf = join(dir, 'haproxy.cfg');
      writeFileSync(conf, `global
  nbthread 1
  maxconn 8000
defaults
  mode http
  timeout connect 5s
  timeout client 600s
  timeout server 600s
  option http-no-delay
frontend fe
  bind 127.0.0.1:${port}
  default_backend be
backend be
  balance leastconn
${backends.map((b, i) => `  server w${i} ${b.replace(/^https?:\/\//, '')} maxconn 4000`).join('\n')}
`);
      const p = await startLines(bin, ['-f', conf, '-db'], null);
      const url = `http://127.0.0.1:${port}`;
      await waitHttp(`${url}/health`);
      return { url, pid: p.child.pid ?? null, stop: () => stop(p.child) };
    },
  };
}

interface Row {
  name: string;
  ttftP50: number;
  ttftP99: number;
  latencyP99: number;
  messages: number;
  cpuS: number;
  sysS: number;
  errors: number;
  stallTtftP99?: number;
}

async function bench(url: string | string[], requestCount: number): Promise<{ ttftP50: number; ttftP99: number; latencyP99: number; messages: number; errors: number }> {
  const r = await runBench({
    url, model: 'Qwen/Qwen3-8B', streaming: true, concurrency: STREAMS, requestCount, warmupRequestCount: STREAMS,
    inputTokensMean: 64, outputTokensMean: OUTPUT_TOKENS, randomSeed: 100, probe: false,
  });
  const ttft = r.summary.metrics['time_to_first_token'];
  const lat = r.summary.metrics['request_latency'];
  if (!isMetricBlock(ttft) || !isMetricBlock(lat)) throw new Error('no TTFT measured');
  // every content message, plus the role chunk and [DONE] of each stream
  const messages = r.records.reduce((n, x) => n + x.chunkMs.length + 2, 0);
  return { ttftP50: ttft.p50, ttftP99: ttft.p99, latencyP99: lat.p99, messages, errors: r.summary.errorCount };
}

async function addStall(workerUrl: string): Promise<void> {
  const r = await fetch(`${workerUrl}/admin/faults`, { method: 'POST', body: 'worker=0,kind=stall,at=2s,for=4s' });
  if (!r.ok) throw new Error(`cannot add fault: ${await r.text()}`);
}

async function main(): Promise<void> {
  const bins = ensureInstalled();
  const fleet = await startLines(process.execPath, ['--import', 'tsx', CLI, 'fleet', '--workers', String(WORKERS), '--port', '0', '--profile', 'small', '--max-num-seqs', String(Math.max(64, Math.ceil(STREAMS / WORKERS) * 2)), ...(KV_EVENTS ? ['--kv-events-config', KV_CONFIG] : [])], 'ready');
  const backends = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url);
  const targets: Target[] = [tailgate('p2c'), tailgate('adaptive'), ...BASELINES.map((b) => tailgate('adaptive', b)), bareRelay(false), bareRelay(true)];
  if (KV_EVENTS) targets.push(tailgate('prefix'), tailgate('prefix', undefined, ['--kv-events-config', KV_CONFIG]));
  if (bins.nginx) targets.push(nginx(bins.nginx, 'least_conn'), nginx(bins.nginx, 'random two least_conn'));
  if (bins.haproxy) targets.push(haproxy(bins.haproxy));
  if (ONLY) targets.splice(0, targets.length, ...targets.filter((t) => ONLY.some((w) => t.name.includes(w))));
  const rows: Row[] = [];
  // Each target's figures by round (CPU per message, TTFT p50 and p99, latency p99).
  const samples = new Map<Row, { p50: number[]; p99: number[]; lat: number[]; usPerMsg: number[] }>();
  const running: { t: Target; p: Awaited<ReturnType<Target['start']>>; row: Row }[] = [];
  try {
    await bench(backends, STREAMS); // warm the fleet
    for (const t of targets) {
      try {
        const p = await t.start(backends);
        running.push({ t, p, row: { name: t.name, ttftP50: 0, ttftP99: 0, latencyP99: 0, messages: 0, cpuS: 0, sysS: 0, errors: 0 } });
        // warm the proxy before measuring: connection pools, and a Node proxy's JIT (still compiling after STREAMS requests)
        await bench(p.url, REQUESTS);
      } catch (e) {
        console.error(`${t.name}: could not start (${e instanceof Error ? e.message : String(e)}); skipped`);
      }
    }
    // Every proxy runs all along; the measured runs take turns, round after round in a rotating
    // order, so a change in the machine's load falls on every target alike.
    const direct: Row = { name: 'direct', ttftP50: 0, ttftP99: 0, latencyP99: 0, messages: 0, cpuS: 0, sysS: 0, errors: 0 };
    const measure = async (row: Row, url: string | string[], pid: number | null): Promise<void> => {
      const cpu0 = pid ? cpuSeconds(pid) : { total: 0, sys: 0 };
      const b = await bench(url, REQUESTS);
      const cpu1 = pid ? cpuSeconds(pid) : { total: 0, sys: 0 };
      row.cpuS += cpu1.total - cpu0.total;
      row.sysS += cpu1.sys - cpu0.sys;
      row.messages += b.messages;
      row.errors += b.errors;
      const s = samples.get(row) ?? { p50: [], p99: [], lat: [], usPerMsg: [] };
      samples.set(row, s);
      if (pid) s.usPerMsg.push(((cpu1.total - cpu0.total) / b.messages) * 1e6);
      s.p50.push(b.ttftP50);
      s.p99.push(b.ttftP99);
      s.lat.push(b.latencyP99);
    };
    const order = [{ row: direct, url: backends as string | string[], pid: null as number | null }, ...running.map((x) => ({ row: x.row, url: x.p.url as string | string[], pid: x.p.pid }))];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < order.length; i++) {
        const o = order[(i + round) % order.length]!;
        await measure(o.row, o.url, o.pid);
      }
    }
    for (const [row, s] of samples) {
      row.ttftP50 = median(s.p50);
      row.ttftP99 = median(s.p99);
      row.latencyP99 = median(s.lat);
    }
    rows.push(direct, ...running.map((x) => x.row));
    for (const r of rows) console.error(JSON.stringify(r));
    if (!hasArg('--skip-stall')) {
      for (const { p, row } of running) {
        const t0 = performance.now();
        await addStall(backends[0]!);
        row.stallTtftP99 = (await bench(p.url, 2 * STREAMS)).ttftP99;
        // let the stall window (2 s .. 6 s after it was added) pass before the next target
        await new Promise((r) => setTimeout(r, Math.max(0, 6500 - (performance.now() - t0))));
      }
      await addStall(backends[0]!);
      direct.stallTtftP99 = (await bench(backends, 2 * STREAMS)).ttftP99;
    }
  } finally {
    for (const { p } of running) await p.stop();
    await stop(fleet.child);
  }
  const d = rows[0]!;
  const nginxCpu = rows.find((r) => r.name === 'nginx least_conn');
  // What any Node relay pays per message here: the lower floor the tailgate rows are held against too.
  const floorCpu = rows.find((r) => r.name === 'node bare relay (handle-level)');
  const perMsgUs = (r: Row) => (r.messages > 0 ? (r.cpuS / r.messages) * 1e6 : 0);
  const sysPerMsgUs = (r: Row) => (r.messages > 0 ? (r.sysS / r.messages) * 1e6 : 0);
  console.log(`\nperf/router: ${WORKERS} fleet workers (profile small), ${STREAMS} streams closed loop, ${REQUESTS} requests x ${OUTPUT_TOKENS} tokens, ${ROUNDS} rounds in turn (CPU summed, TTFT the median of rounds)\n`);
  console.log('| target | TTFT p50 ms | +p50 over direct | TTFT p99 ms | +p99 over direct | CPU s / 1M messages | of which kernel | x nginx least_conn | x Node floor | errors | stall TTFT p99 ms |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const cpu = r.name === 'direct' ? '-' : (perMsgUs(r)).toFixed(1);
    const sys = r.name === 'direct' ? '-' : (sysPerMsgUs(r)).toFixed(1);
    const ratioTo = (base: Row | undefined): string => (r.name === 'direct' || !base ? '-' : (perMsgUs(r) / perMsgUs(base)).toFixed(2));
    const plus = (x: number) => (r.name === 'direct' ? '-' : `${x >= 0 ? '+' : ''}${x.toFixed(1)}`);
    console.log(`| ${r.name} | ${r.ttftP50.toFixed(1)} | ${plus(r.ttftP50 - d.ttftP50)} | ${r.ttftP99.toFixed(1)} | ${plus(r.ttftP99 - d.ttftP99)} | ${cpu} | ${sys} | ${ratioTo(nginxCpu)} | ${ratioTo(floorCpu)} | ${r.errors} | ${r.stallTtftP99?.toFixed(0) ?? '-'} |`);
  }
  // Each round's own figure, and its ratio to the floor's in the same round: how far the load moved them.
  const floorRounds = floorCpu ? samples.get(floorCpu)?.usPerMsg : undefined;
  for (const r of rows) {
    const us = samples.get(r)?.usPerMsg;
    if (!us || us.length === 0) continue;
    const vsFloor = floorRounds && r !== floorCpu ? `; x floor ${us.map((x, i) => (x / floorRounds[i]!).toFixed(2)).join(', ')}` : '';
    console.log(`per round, ${r.name}: us/message ${us.map((x) => x.toFixed(1)).join(', ')}${vsFloor}`);
  }
  // Added TTFT p99 per round (each round's p99 less direct's in the same round): the spread the
  // load gives nginx's, against which tailgate's median is judged.
  const directP99 = samples.get(d)?.p99 ?? [];
  const added = (r: Row): number[] => (samples.get(r)?.p99 ?? []).map((x, i) => x - directP99[i]!);
  const nginxAdded = nginxCpu ? added(nginxCpu) : [];
  for (const r of rows) {
    if (r === d || !samples.has(r)) continue;
    const a = added(r);
    const within = nginxAdded.length > 0 && r !== nginxCpu ? `; median ${median(a).toFixed(1)}, ${median(a) <= Math.max(...nginxAdded) ? 'within' : 'above'} nginx least_conn's ${Math.min(...nginxAdded).toFixed(1)}..${Math.max(...nginxAdded).toFixed(1)}` : '';
    console.log(`per round, ${r.name}: +TTFT p99 over direct ms ${a.map((x) => x.toFixed(1)).join(', ')}${within}`);
  }
  const kvOff = rows.find((r) => r.name === 'tailgate prefix');
  const kvOn = rows.find((r) => r.name === 'tailgate prefix +kv-events');
  if (kvOff && kvOn) {
    const off = samples.get(kvOff)?.usPerMsg ?? [];
    const on = samples.get(kvOn)?.usPerMsg ?? [];
    console.log(`\nKV events on / off, CPU per relayed message (tailgate prefix): ${(perMsgUs(kvOn) / perMsgUs(kvOff)).toFixed(3)}x overall; per round ${on.map((x, i) => (x / off[i]!).toFixed(3)).join(', ')} (target: within 1.05x)`);
  }
  if (!bins.nginx || !bins.haproxy) console.log('\n(nginx or haproxy not available: their rows are missing; run without --no-install as root to install them)');
}

// A Node floor's child process: `--bare-relay[-fd] URL...`.
const args = process.argv.slice(2);
if (args[0] === '--bare-relay' || args[0] === '--bare-relay-fd') runBareRelay(args.slice(1), args[0] === '--bare-relay-fd');
else await main();
