/** A field of a typed-array row: a 32-bit integer or a 64-bit float. */
export type RowField = 'i32' | 'f64';

/** Where each field of a row sits, and how long a row is, in both views of one buffer. */
export interface RowLayout<K extends string> {
  /** Each field's index in the row: in Int32 slots for an `i32` field, in Float64 slots for an `f64` one. */
  readonly at: { readonly [P in K]: number };
  /** A row's length in Int32 slots. */
  readonly i32Stride: number;
  /** A row's length in Float64 slots. */
  readonly f64Stride: number;
  /** A row's length in bytes (a multiple of 8, so every row's Float64 fields are aligned). */
  readonly bytes: number;
}

/**
 * Lays out a row of one buffer seen as both Int32Array and Float64Array: the fields in the order
 * given (an object literal's order), each `f64` on the next 8-byte boundary (a 4-byte gap before it
 * if needed), the row padded to a multiple of 8 bytes. Adding a field is one line of `fields`.
 *
 * @example
 * const row = rowLayout({ STATE: 'i32', COUNT: 'i32', LAST_MS: 'f64' });
 * row.at.LAST_MS; // 1 (bytes 8-15: Float64 slot 1)
 * row.i32Stride;  // 4
 */
export function rowLayout<const F extends Record<string, RowField>>(fields: F): RowLayout<Extract<keyof F, string>> {
  const at: Record<string, number> = {};
  let bytes = 0;
  for (const [name, type] of Object.entries(fields)) {
    if (type === 'f64') {
      bytes = (bytes + 7) & ~7;
      at[name] = bytes / 8;
      bytes += 8;
    } else {
      at[name] = bytes / 4;
      bytes += 4;
    }
  }
  bytes = (bytes + 7) & ~7;
  return { at: at as { readonly [P in Extract<keyof F, string>]: number }, i32Stride: bytes / 4, f64Stride: bytes / 8, bytes };
}
