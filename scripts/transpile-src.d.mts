/** Transpiles src/ (its *.test.ts aside) to `out` laid out like dist/; throws one line naming the first errors. */
export function transpileSrc(out: string): Promise<void>;
