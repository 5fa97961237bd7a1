import type { Command } from 'commander';
import { TailgateError } from '../core/index.js';
import type { SIMULATE_DEFAULTS } from '../sim/index.js';
import { collect, intArg, writeOutputFile } from './args.js';
import { addOptionsWhenRun, rowsFor, type FlagsOf } from './option-table.js';

const row = rowsFor<unknown>();

/** Every flag of `tailgate simulate`, declared once: commander's option and its help, defaults from SIMULATE_DEFAULTS. */
export function simulateFlags(D: typeof SIMULATE_DEFAULTS, exportTrialsMax: number) {
  return {
    scenario: row({ arg: '<file>', help: 'scenario YAML file (repeatable)', parse: collect }),
    preset: row({ arg: '<name>', help: 'built-in scenario: aicr-h100, aicr-h100-stall, aicr-h100-stall-2, aicr-h100-stall-3, aicr-h100-bursty, aicr-h100-slow, aicr-h100-slow-worker, shared-prefix, prefix-pressure (compares prefix sources estimate, events, oracle under prefix, 1 and 3 replicas), noisy-neighbour, noisy-neighbour-fifo, noisy-neighbour-alone, batch-interactive (repeatable)', parse: collect }),
    policies: row<string>({ arg: '<list>', help: 'comma-separated routing policies', default: D.policies.join(',') }),
    trials: row({ arg: '<n>', help: 'seeded trials per policy and scenario', parse: intArg(1), default: D.trials }),
    seed: row({ arg: '<n>', help: 'seed of the first trial (trial t uses seed + t)', parse: intArg(0), default: D.seed }),
    profile: row<string>({ arg: '<name|file>', help: "engine profile for every scenario, replacing the scenario's: a built-in name or a profile YAML file (e.g. from tailgate calibrate)" }),
    json: row<string>({ arg: '<file>', help: 'write the results as JSON' }),
    html: row<string>({ arg: '<file>', help: 'write a self-contained HTML report' }),
    kvEventDelay: row({ arg: '<ms>', help: 'with --preset prefix-pressure: how long after an engine step its KV events reach the router', parse: intArg(0), default: D.kvEventDelayMs }),
    export: row<string>({ arg: '<dir>', help: `also write the first trials (at most ${exportTrialsMax}) of each scenario and policy as validate writes its runs, for tailgate compare` }),
    explain: row<boolean>({ help: 'per second of the first trial of each policy, where the tokens went: faults, streams stuck on stalled workers, router queue, probation, idle slots, prefill done again' }),
  };
}

/** The flags of `tailgate simulate` as commander parses them. */
export type SimulateFlags = FlagsOf<ReturnType<typeof simulateFlags>>;

/**
 * `tailgate simulate`: the same engines and policies in virtual time; a Monte Carlo of the gate
 * per policy. Exit 0 when it ran (the verdicts are data), 2 for bad input.
 */
export function registerSimulate(program: Command): void {
  const cmd = program
    .command('simulate')
    .description('what-if in virtual time: the same engines and routing policies, many seeded trials, gate fail probability per policy');
  // the defaults live in sim/, heavy to load: only for this command
  addOptionsWhenRun(program, cmd, async () => {
    const sim = await import('../sim/index.js');
    return simulateFlags(sim.SIMULATE_DEFAULTS, sim.EXPORT_TRIALS_MAX);
  });
  cmd
    .action(async (flags: SimulateFlags) => {
      const sim = await import('../sim/index.js');
      const { POLICY_NAMES } = await import('../routing/index.js');
      const policies = flags.policies.split(',').map((p) => p.trim()).filter((p) => p !== '');
      if (policies.length === 0) throw new TailgateError('CLI_USAGE', '--policies: give at least one policy');
      for (const p of policies) {
        if (!(POLICY_NAMES as readonly string[]).includes(p)) throw new TailgateError('CLI_USAGE', `--policies: unknown policy "${p}" (known: ${POLICY_NAMES.join(', ')})`);
      }
      const scenarios = [];
      for (const name of flags.preset ?? []) {
        const s = sim.PRESETS[name];
        if (!s) throw new TailgateError('CLI_USAGE', `--preset: unknown preset "${name}" (known: ${sim.PRESET_NAMES.join(', ')})`);
        scenarios.push(s);
      }
      for (const file of flags.scenario ?? []) scenarios.push(await sim.loadScenario(file));
      if (scenarios.length === 0) throw new TailgateError('CLI_USAGE', 'give --scenario FILE or --preset NAME (known presets: ' + sim.PRESET_NAMES.join(', ') + ')');
      if (flags.profile !== undefined) {
        const { resolveProfile } = await import('../calibrate/index.js');
        const engineProfile = resolveProfile(flags.profile);
        for (let i = 0; i < scenarios.length; i++) scenarios[i] = { ...scenarios[i]!, profile: engineProfile.name, engineProfile };
      }

      // A prefix-source comparison runs `prefix` once per source and replica count, not a Monte Carlo of policies.
      const compared = scenarios.filter((s) => sim.PREFIX_COMPARE_PRESETS.includes(s.name));
      if (compared.length > 0) {
        const out = compared.map((s) => sim.comparePrefixSources(s, { seed: flags.seed, kvEventDelayMs: flags.kvEventDelay }));
        process.stdout.write(out.map((r) => sim.formatPrefixCompare(r)).join('\n'));
        if (flags.json !== undefined) await writeOutputFile(flags.json, `${JSON.stringify(out.length === 1 ? out[0] : out, null, 2)}\n`);
        if (compared.length === scenarios.length) {
          process.exitCode = 0;
          return;
        }
        for (const s of compared) scenarios.splice(scenarios.indexOf(s), 1);
      }

      const tty = process.stderr.isTTY;
      const t0 = performance.now();
      const results = scenarios.map((scenario) =>
        ({
          scenario,
          result: sim.runMonteCarlo({
            scenario,
            policies: policies as (typeof POLICY_NAMES)[number][],
            trials: flags.trials,
            seed: flags.seed,
            explain: flags.explain === true,
            onTrial: tty ? (p, t) => process.stderr.write(`\r${scenario.name} ${p}: trial ${t + 1}/${flags.trials}   `) : undefined,
          }),
        }));
      if (tty) process.stderr.write('\r\x1b[K');
      const run = { scenarios: results, policies: policies as (typeof POLICY_NAMES)[number][], trials: flags.trials, seed: flags.seed, wallMs: performance.now() - t0 };
      process.stdout.write(sim.formatSimulate(run));
      if (flags.json !== undefined) await writeOutputFile(flags.json, `${JSON.stringify(sim.simulateJson(run), null, 2)}\n`);
      if (flags.html !== undefined) {
        const { renderHtmlReport } = await import('../report/index.js');
        await writeOutputFile(flags.html, renderHtmlReport(sim.simulateReportDoc(run)));
      }
      if (flags.export !== undefined) {
        for (const d of await sim.exportSimulated(flags.export, scenarios, policies as (typeof POLICY_NAMES)[number][], flags.trials, flags.seed)) process.stdout.write(`exported ${d}\n`);
      }
      process.exitCode = 0;
    });
}
