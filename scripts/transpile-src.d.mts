/** Transpiles src/ (its *.test.ts aside) to `out` laid out like dist/; throws one line naming the first errors. */
export function transpileSrc(out: string): Promise<void>;
/** The folder name's start of a run's transpiled tree at the repo root (`.test-build-<pid>`). */
export const TEST_BUILD_PREFIX: string;
