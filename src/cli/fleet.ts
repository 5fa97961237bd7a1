import type { Command } from 'commander';
import type { Tokenizer } from '../workload/index.js';
import { collect, intArg, sizeArg } from './args.js';

interface FleetFlags {
  workers: number;
  port: number;
  host: string;
  profile: string;
  model: string;
  maxNumSeqs?: number;
  maxWaiting?: number;
  tokensPerChunk: number;
  fault?: string[];
  burstyStalls?: number;
  maxBody?: number;
  gpuMetricsPort?: number;
  prefixCaching: boolean;
  apiKey?: string;
  kvEventsConfig?: string;
  tokenizer?: string;
  tokenizerRevision?: string;
}

/** `tailgate fleet`: N simulated vLLM workers on loopback, with injectable faults. */
export function registerFleet(program: Command): void {
  program
    .command('fleet')
    .description('start N simulated vLLM workers in one process (worker i on port+i), with injectable stalls and faults')
    .option('--workers <n>', 'number of workers', intArg(1), 8)
    .option('--port <port>', 'port of worker 0 (worker i gets port+i); 0 picks free ports', intArg(0), 8100)
    .option('--host <addr>', 'bind address', '127.0.0.1')
    .option('--profile <name|file>', 'engine profile: a built-in (h100-qwen3-8b, small) or a profile YAML file (e.g. from tailgate calibrate)', 'h100-qwen3-8b')
    .option('--model <name>', 'served model name', 'Qwen/Qwen3-8B')
    .option('--max-num-seqs <n>', "cap on running sequences per worker (default: the profile's)", intArg(1))
    .option('--max-waiting <n>', "waiting-queue bound per worker, beyond it 429 (default: the profile's)", intArg(0))
    .option('--tokens-per-chunk <k>', 'tokens per SSE message', intArg(1), 1)
    .option('--fault <spec>', 'fault window, repeatable: worker=2,kind=stall,at=20s,for=15s (kinds: stall, slow [factor=10], error [rate=0.5], reset, refuse, unhealthy, throttle [factor=2.5])', collect)
    .option('--bursty-stalls <seed>', 'add seeded bursty stalls (quiet/active windows, a random worker stalls in each active window)', intArg(0))
    .option('--max-body <size>', 'request body limit (e.g. 64KiB, 4MiB), beyond it 413', sizeArg)
    .option('--no-prefix-caching', "turn off vLLM's automatic prefix caching (on by default, as in vLLM V1)")
    .option('--api-key <key>', "as vLLM's --api-key: /v1/* needs Authorization: Bearer KEY, else 401 (default: $VLLM_API_KEY)")
    .option('--gpu-metrics-port <port>', "serve dcgm-exporter-style GPU telemetry (one GPU per worker, pod = worker id) on this port's /metrics; 0 picks a free port", intArg(0))
    .option('--kv-events-config <json>', 'as vLLM\'s: publish KV events over ZMQ, worker i on the endpoint\'s port + i (and its replay port + i), e.g. \'{"enable_kv_cache_events":true,"endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5657"}\'')
    .option('--tokenizer <name|path>', "count prompt tokens with the served model's tokenizer and stream single tokens of it (a tokenizer.json, its folder, or a Hugging Face repo id from the local cache or the hub, as bench finds it); default: one token per word")
    .option('--tokenizer-revision <rev>', 'branch, tag or commit of a hub --tokenizer', 'main')
    .addHelpText('after', '\nPrints one JSON line per worker, then "ready". Faults count from "ready". POST /admin/faults (loopback) adds one at run time, at= counted from then.')
    .action(async (flags: FleetFlags) => {
      const [{ startFleet, parseThrottle }, { parseFault }, { resolveProfile }, { parseKvEventsConfig }] = await Promise.all([import('../fleet/index.js'), import('../engine/index.js'), import('../calibrate/index.js'), import('../kv-events/index.js')]);
      const kvEvents = flags.kvEventsConfig !== undefined ? parseKvEventsConfig(flags.kvEventsConfig) : undefined;
      const tokenizer = flags.tokenizer !== undefined ? await fleetTokenizer(flags.tokenizer, flags.model, flags.tokenizerRevision) : undefined;
      const profile = resolveProfile(flags.profile);
      const texts = flags.fault ?? [];
      const apiKey = flags.apiKey ?? process.env['VLLM_API_KEY'];
      const throttles = texts.map((t) => parseThrottle(t)).filter((t) => t !== null);
      const faults = texts.filter((t) => parseThrottle(t) === null).map((t) => parseFault(t));
      const fleet = await startFleet({
        workers: flags.workers,
        port: flags.port,
        host: flags.host,
        profile,
        model: flags.model,
        tokensPerChunk: flags.tokensPerChunk,
        prefixCaching: flags.prefixCaching,
        faults,
        ...(flags.maxNumSeqs !== undefined && { maxNumSeqs: flags.maxNumSeqs }),
        ...(flags.maxWaiting !== undefined && { maxWaiting: flags.maxWaiting }),
        ...(flags.burstyStalls !== undefined && { burstySeed: flags.burstyStalls }),
        ...(flags.maxBody !== undefined && { maxBodyBytes: flags.maxBody }),
        ...(flags.gpuMetricsPort !== undefined && { gpuMetricsPort: flags.gpuMetricsPort }),
        ...(apiKey !== undefined && apiKey !== '' && { apiKey }),
        throttles,
        ...(kvEvents !== undefined && { kvEvents }),
        ...(tokenizer !== undefined && { tokenizer }),
      });
      let out = '';
      for (const w of fleet.workers) out += `${JSON.stringify({ worker: w.index, id: w.id, url: w.url, ...(w.kvEvents && { kvEvents: w.kvEvents }) })}\n`;
      if (fleet.gpuMetricsUrl !== null) out += `${JSON.stringify({ gpuMetrics: fleet.gpuMetricsUrl })}\n`;
      process.stdout.write(`${out}ready\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          fleet.close().then(resolve, resolve);
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      process.exitCode = 0;
    });
}

/** `--tokenizer` resolved as bench resolves it, except that a tokenizer that cannot be had is an error, not the word rule. */
async function fleetTokenizer(name: string, model: string, revision: string | undefined): Promise<Tokenizer> {
  const [{ chooseTokenizer, resolveTokenizer }, { TailgateError }] = await Promise.all([import('../workload/index.js'), import('../core/index.js')]);
  const t = await resolveTokenizer(chooseTokenizer({ tokenizer: name, model, revision }));
  if (t.fallback !== undefined) throw new TailgateError('CONFIG_INVALID', `${t.fallback}; the fleet will not stand in the word rule for a tokenizer asked for`);
  return t;
}
