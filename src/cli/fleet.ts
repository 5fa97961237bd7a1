import type { Command } from 'commander';
import type { Tokenizer } from '../workload/index.js';
import type { FLEET_DEFAULTS, FleetOptions } from '../fleet/index.js';
import { collect, intArg, sizeArg } from './args.js';
import { addOptionsWhenRun, libraryOptions, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<FleetOptions>();

/** Every flag of `tailgate fleet`, declared once: commander's option, its help and default (from FLEET_DEFAULTS), and the fleet option it sets. */
export function fleetFlags(D: typeof FLEET_DEFAULTS) {
  return {
    workers: row({ arg: '<n>', help: 'number of workers', parse: intArg(1), default: D.workers, lib: 'workers' }),
    port: row({ arg: '<port>', help: 'port of worker 0 (worker i gets port+i); 0 picks free ports', parse: intArg(0), default: D.port, lib: 'port' }),
    host: row<string>({ arg: '<addr>', help: 'bind address', default: D.host, lib: 'host' }),
    profile: row<string>({ arg: '<name|file>', help: 'engine profile: a built-in (h100-qwen3-8b, small) or a profile YAML file (e.g. from tailgate calibrate)', default: D.profile }),
    model: row<string>({ arg: '<name>', help: 'served model name', default: D.model, lib: 'model' }),
    maxNumSeqs: row({ arg: '<n>', help: 'cap on running sequences per worker', parse: intArg(1), lib: 'maxNumSeqs', defaultNote: "the profile's" }),
    maxWaiting: row({ arg: '<n>', help: 'waiting-queue bound per worker, beyond it 429', parse: intArg(0), lib: 'maxWaiting', defaultNote: "the profile's" }),
    tokensPerChunk: row({ arg: '<k>', help: 'tokens per SSE message', parse: intArg(1), default: D.tokensPerChunk, lib: 'tokensPerChunk' }),
    fault: row({ arg: '<spec>', help: 'fault window, repeatable: worker=2,kind=stall,at=20s,for=15s (kinds: stall, slow [factor=10], error [rate=0.5], reset, refuse, unhealthy, throttle [factor=2.5])', parse: collect }),
    burstyStalls: row({ arg: '<seed>', help: 'add seeded bursty stalls (quiet/active windows, a random worker stalls in each active window)', parse: intArg(0), lib: 'burstySeed' }),
    maxBody: row({ arg: '<size>', help: 'request body limit (e.g. 64KiB, 4MiB), beyond it 413', parse: sizeArg, default: D.maxBodyBytes, lib: 'maxBodyBytes' }),
    prefixCaching: row<boolean>({ negate: true, help: "turn off vLLM's automatic prefix caching (on by default, as in vLLM V1)", lib: 'prefixCaching' }),
    apiKey: row<string>({ arg: '<key>', help: "as vLLM's --api-key: /v1/* needs Authorization: Bearer KEY, else 401", defaultNote: '$VLLM_API_KEY' }),
    gpuMetricsPort: row({ arg: '<port>', help: "serve dcgm-exporter-style GPU telemetry (one GPU per worker, pod = worker id) on this port's /metrics; 0 picks a free port", parse: intArg(0), lib: 'gpuMetricsPort' }),
    kvEventsConfig: row<string>({ arg: '<json>', help: 'as vLLM\'s: publish KV events over ZMQ, worker i on the endpoint\'s port + i (and its replay port + i), e.g. \'{"enable_kv_cache_events":true,"endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5657"}\'' }),
    tokenizer: row<string>({ arg: '<name|path>', help: "count prompt tokens with the served model's tokenizer and stream single tokens of it (a tokenizer.json, its folder, or a Hugging Face repo id from the local cache or the hub, as bench finds it)", defaultNote: 'one token per word' }),
    tokenizerRevision: row<string>({ arg: '<rev>', help: 'branch, tag or commit of a hub --tokenizer', default: D.tokenizerRevision }),
  };
}

/** The flags of `tailgate fleet` as commander parses them. */
export type FleetFlags = FlagsOf<ReturnType<typeof fleetFlags>>;

/** `tailgate fleet`: N simulated vLLM workers on loopback, with injectable faults. */
export function registerFleet(program: Command): void {
  const cmd = program
    .command('fleet')
    .description('start N simulated vLLM workers in one process (worker i on port+i), with injectable stalls and faults');
  // the table's defaults live in fleet/, which loads the engine: only for this command
  addOptionsWhenRun(program, cmd, async () => fleetFlags((await import('../fleet/index.js')).FLEET_DEFAULTS));
  cmd
    .addHelpText('after', '\nPrints one JSON line per worker, then "ready". Faults count from "ready". POST /admin/faults (loopback) adds one at run time, at= counted from then.')
    .action(async (flags: FleetFlags) => {
      const [fleetLib, { parseFault }, { resolveProfile }, { parseKvEventsConfig }] = await Promise.all([import('../fleet/index.js'), import('../engine/index.js'), import('../calibrate/index.js'), import('../kv-events/index.js')]);
      const { startFleet, parseThrottle } = fleetLib;
      const kvEvents = flags.kvEventsConfig !== undefined ? parseKvEventsConfig(flags.kvEventsConfig) : undefined;
      const tokenizer = flags.tokenizer !== undefined ? await fleetTokenizer(flags.tokenizer, flags.model, flags.tokenizerRevision) : undefined;
      const profile = resolveProfile(flags.profile);
      const texts = flags.fault ?? [];
      const apiKey = flags.apiKey ?? process.env['VLLM_API_KEY'];
      const throttles = texts.map((t) => parseThrottle(t)).filter((t) => t !== null);
      const faults = texts.filter((t) => parseThrottle(t) === null).map((t) => parseFault(t));
      const fleet = await startFleet({
        ...libraryOptions<FleetOptions>(fleetFlags(fleetLib.FLEET_DEFAULTS), flags),
        profile,
        faults,
        throttles,
        ...(apiKey !== undefined && apiKey !== '' && { apiKey }),
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
  const [{ chooseTokenizer, loadChatTemplate, resolveTokenizer }, { TailgateError }] = await Promise.all([import('../workload/index.js'), import('../core/index.js')]);
  const t = await resolveTokenizer(chooseTokenizer({ tokenizer: name, model, revision }));
  if (t.fallback !== undefined) throw new TailgateError('CONFIG_INVALID', `${t.fallback}; the fleet will not stand in the word rule for a tokenizer asked for`);
  // vLLM counts a chat prompt as the model's chat template renders it, when the tokenizer has one.
  const template = await loadChatTemplate(t);
  return template === null ? t : { ...t, chatTemplate: template };
}
