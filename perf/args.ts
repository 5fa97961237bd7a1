// The command line of a perf script, once: `--name value` pairs and bare switches. A value that is
// missing or not a number ends the script with one line (exit 2) rather than a run on NaN.

import { relative } from 'node:path';

const argv = process.argv.slice(2);

function fail(message: string): never {
  process.stderr.write(`${relative(process.cwd(), process.argv[1] ?? 'perf')}: ${message}\n`);
  process.exit(2);
}

/**
 * The value after the flag `name`, or undefined when it is absent.
 *
 * @example optionalArg('--cpu-prof') // 'out.cpuprofile' for `... --cpu-prof out.cpuprofile`
 */
export function optionalArg(name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i < 0) return undefined;
  const v = argv[i + 1];
  return v === undefined ? fail(`${name} needs a value`) : v;
}

/** The value after the flag `name`, or `fallback` when it is absent. */
export function textArg(name: string, fallback: string): string {
  return optionalArg(name) ?? fallback;
}

/** Every value given after a repeatable flag, in order (`--baseline A --baseline B` -> ['A', 'B']). */
export function textArgs(name: string): string[] {
  return argv.flatMap((a, i) => (a === name ? [argv[i + 1] ?? fail(`${name} needs a value`)] : []));
}

/**
 * The comma-separated values after the flag `name` (or in `fallback`), each one of `allowed`.
 *
 * @example listArg('--clients', 'floor,socket', ['plain', 'floor', 'socket']) // ['floor', 'socket']
 */
export function listArg<T extends string>(name: string, fallback: string, allowed: readonly T[]): T[] {
  const values = textArg(name, fallback).split(',');
  for (const v of values) if (!allowed.includes(v as T)) fail(`${name}: unknown value ${v} (one of ${allowed.join(', ')})`);
  return values as T[];
}

/**
 * The number after the flag `name`, or `fallback` when it is absent.
 *
 * @example numberArg('--rounds', 3) // 5 for `... --rounds 5`
 */
export function numberArg(name: string, fallback: number): number {
  const v = optionalArg(name);
  if (v === undefined) return fallback;
  const n = Number(v);
  return Number.isFinite(n) ? n : fail(`${name} ${v}: expected a number`);
}

/** Whether the switch `name` was given. */
export function hasArg(name: string): boolean {
  return argv.includes(name);
}
