import { InvalidArgumentError } from 'commander';
import { TailgateError, parseDurationMs, parseSizeBytes } from '../core/index.js';

/** Commander value parsers: a bad value becomes a one-line usage error (exit 2). */
export function intArg(min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return n;
  };
}

/** A number >= `min`. */
export function numberArg(min = 0) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number >= ${min}`);
    return n;
  };
}

/** A finite number > 0. */
export function positiveArg(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a number > 0');
  return n;
}

/** A duration (`500ms`, `30s`, `5m`), in ms. */
export function durationArg(value: string): number {
  try {
    return parseDurationMs(value);
  } catch {
    throw new InvalidArgumentError('expected a duration such as 250ms, 20s or 1m');
  }
}

/** Milliseconds as a duration flag is typed (`60s`, `10m`, `250ms`); parses back to the same. */
export function durationText(ms: number): string {
  for (const [unit, size] of [['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) if (ms > 0 && ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** Bytes as a size flag is typed (`4MiB`, `256KiB`); parses back to the same. */
export function sizeText(bytes: number): string {
  for (const [unit, size] of [['GiB', 1024 ** 3], ['MiB', 1024 ** 2], ['KiB', 1024]] as const) if (bytes > 0 && bytes % size === 0) return `${bytes / size}${unit}`;
  return String(bytes);
}

/** A size (`4MiB`, `256KiB`), in bytes. */
export function sizeArg(value: string): number {
  try {
    return parseSizeBytes(value);
  } catch {
    throw new InvalidArgumentError('expected a size such as 512KiB or 4MiB');
  }
}

/** A confidence level, strictly between 0 and 1. */
export function levelArg(value: string): number {
  const n = Number(value);
  if (!(n > 0 && n < 1)) throw new InvalidArgumentError('expected a level between 0 and 1, e.g. 0.95');
  return n;
}

/** Accumulates a repeatable option into a list. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** One of `choices`, as given. */
export function choiceArg<T extends string>(choices: readonly T[]) {
  return (value: string): T => {
    if (!(choices as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
    return value as T;
  };
}

/** Writes a file the user named (an output flag); a failure is one CONFIG_INVALID line naming it. */
export async function writeOutputFile(file: string, text: string): Promise<void> {
  const { writeFile } = await import('node:fs/promises');
  try {
    await writeFile(file, text);
  } catch (e) {
    throw new TailgateError('CONFIG_INVALID', `cannot write ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { cause: e });
  }
}
