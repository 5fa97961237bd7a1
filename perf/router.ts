// perf/router: TTFT added over a direct connection and CPU per relayed SSE message, for tailgate
// and for nginx (least_conn, random two least_conn) and HAProxy (leastconn), measured side by
// side in one run against the same simulated fleet; then a stall scenario through each.
//
//   node --import tsx perf/router.ts [--streams 256] [--requests 1024] [--no-install] [--skip-stall]
//
// Installs nginx and haproxy from Debian (apt-get) when they are missing, unless --no-install.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runBench } from '../src/bench/index.js';
import { isMetricBlock } from '../src/stats/index.js';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const args = process.argv.slice(2);
const flag = (name: string, def: number): number => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const STREAMS = flag('--streams', 256);
const REQUESTS = flag('--requests', 4 * STREAMS);
const OUTPUT_TOKENS = 64;
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
  if ((!nginx || !haproxy) && !args.includes('--no-install')) {
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

function tailgate(policy: string): Target {
  return {
    name: `tailgate ${policy}`,
    async start(backends) {
      const p = await startLines(process.execPath, ['--import', 'tsx', CLI, 'route', '--port', '0', '--policy', policy, '--max-inflight-per-worker', '100000', ...backends.flatMap((b) => ['--backend', b])], 'ready');
      const { url } = JSON.parse(p.lines[0]!) as { url: string };
      return { url, pid: p.child.pid ?? null, stop: () => stop(p.child) };
    },
  };
}

function nginx(bin: string, balance: string): Target {
  return {
    name: `nginx ${balance}`,
    async start(backends) {
      const port = await freePort();
      const conf = join(dir, `nginx-${balance.replace(/\s/g, '-')}.conf`);
      writeFileSync(conf, `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
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
  const fleet = await startLines(process.execPath, ['--import', 'tsx', CLI, 'fleet', '--workers', String(WORKERS), '--port', '0', '--profile', 'small', '--max-num-seqs', String(Math.max(64, Math.ceil(STREAMS / WORKERS) * 2))], 'ready');
  const backends = fleet.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { url: string }).url);
  const targets: Target[] = [tailgate('p2c'), tailgate('adaptive')];
  if (bins.nginx) targets.push(nginx(bins.nginx, 'least_conn'), nginx(bins.nginx, 'random two least_conn'));
  if (bins.haproxy) targets.push(haproxy(bins.haproxy));
  const rows: Row[] = [];
  try {
    await bench(backends, STREAMS); // warm the fleet
    const direct = await bench(backends, REQUESTS);
    rows.push({ name: 'direct', ...direct, cpuS: 0, sysS: 0 });
    for (const t of targets) {
      let p: Awaited<ReturnType<Target['start']>>;
      try {
        p = await t.start(backends);
      } catch (e) {
        console.error(`${t.name}: could not start (${e instanceof Error ? e.message : String(e)}); skipped`);
        continue;
      }
      try {
        await bench(p.url, STREAMS); // warm the proxy (JIT, connection pools) before measuring
        const cpu0 = p.pid ? cpuSeconds(p.pid) : { total: 0, sys: 0 };
        const b = await bench(p.url, REQUESTS);
        const cpu1 = p.pid ? cpuSeconds(p.pid) : { total: 0, sys: 0 };
        const row: Row = { name: t.name, ...b, cpuS: cpu1.total - cpu0.total, sysS: cpu1.sys - cpu0.sys };
        if (!args.includes('--skip-stall')) {
          const t0 = performance.now();
          await addStall(backends[0]!);
          row.stallTtftP99 = (await bench(p.url, 2 * STREAMS)).ttftP99;
          // let the stall window (2 s .. 6 s after it was added) pass before the next target
          await new Promise((r) => setTimeout(r, Math.max(0, 6500 - (performance.now() - t0))));
        }
        rows.push(row);
        console.error(JSON.stringify(row));
      } finally {
        await p.stop();
      }
    }
    if (!args.includes('--skip-stall')) {
      await addStall(backends[0]!);
      rows[0]!.stallTtftP99 = (await bench(backends, 2 * STREAMS)).ttftP99;
    }
  } finally {
    await stop(fleet.child);
  }
  const d = rows[0]!;
  const nginxCpu = rows.find((r) => r.name === 'nginx least_conn');
  const perMsgUs = (r: Row) => (r.messages > 0 ? (r.cpuS / r.messages) * 1e6 : 0);
  const sysPerMsgUs = (r: Row) => (r.messages > 0 ? (r.sysS / r.messages) * 1e6 : 0);
  console.log(`\nperf/router: ${WORKERS} fleet workers (profile small), ${STREAMS} streams closed loop, ${REQUESTS} requests x ${OUTPUT_TOKENS} tokens, one run\n`);
  console.log('| target | TTFT p50 ms | +p50 over direct | TTFT p99 ms | +p99 over direct | CPU s / 1M messages | of which kernel | x nginx least_conn | errors | stall TTFT p99 ms |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const cpu = r.name === 'direct' ? '-' : (perMsgUs(r)).toFixed(1);
    const sys = r.name === 'direct' ? '-' : (sysPerMsgUs(r)).toFixed(1);
    const ratio = r.name === 'direct' || !nginxCpu ? '-' : (perMsgUs(r) / perMsgUs(nginxCpu)).toFixed(2);
    const plus = (x: number) => (r.name === 'direct' ? '-' : `${x >= 0 ? '+' : ''}${x.toFixed(1)}`);
    console.log(`| ${r.name} | ${r.ttftP50.toFixed(1)} | ${plus(r.ttftP50 - d.ttftP50)} | ${r.ttftP99.toFixed(1)} | ${plus(r.ttftP99 - d.ttftP99)} | ${cpu} | ${sys} | ${ratio} | ${r.errors} | ${r.stallTtftP99?.toFixed(0) ?? '-'} |`);
  }
  if (!bins.nginx || !bins.haproxy) console.log('\n(nginx or haproxy not available: their rows are missing; run without --no-install as root to install them)');
}

await main();
