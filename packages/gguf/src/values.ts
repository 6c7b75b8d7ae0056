// GGUF metadata values as JavaScript sees them, plus small constructors so callers building a
// file do not have to spell out type tags. 64-bit integers stay bigints: token ids and counts
// fit in numbers, but a file may legally carry any u64 and we must round-trip it exactly.

import { GgufValueType } from './types.js';

/** Scalar value types whose JavaScript value is a number. */
export type GgufNumberType =
  | GgufValueType.UINT8
  | GgufValueType.INT8
  | GgufValueType.UINT16
  | GgufValueType.INT16
  | GgufValueType.UINT32
  | GgufValueType.INT32
  | GgufValueType.FLOAT32
  | GgufValueType.FLOAT64;

/** Scalar value types whose JavaScript value is a bigint. */
export type GgufBigIntType = GgufValueType.UINT64 | GgufValueType.INT64;

/** One metadata value: a tagged scalar, or a tagged array of scalars (GGUF has no nested arrays
 * that llama.cpp accepts, so neither do we). */
export type GgufValue =
  | { readonly type: GgufNumberType; readonly value: number }
  | { readonly type: GgufBigIntType; readonly value: bigint }
  | { readonly type: GgufValueType.BOOL; readonly value: boolean }
  | { readonly type: GgufValueType.STRING; readonly value: string }
  | { readonly type: GgufValueType.ARRAY; readonly itemType: GgufNumberType; readonly value: readonly number[] }
  | { readonly type: GgufValueType.ARRAY; readonly itemType: GgufBigIntType; readonly value: readonly bigint[] }
  | { readonly type: GgufValueType.ARRAY; readonly itemType: GgufValueType.BOOL; readonly value: readonly boolean[] }
  | { readonly type: GgufValueType.ARRAY; readonly itemType: GgufValueType.STRING; readonly value: readonly string[] };

/** Constructors for metadata values, e.g. `gv.u32(48)`, `gv.strs(tokens)`. */
export const gv = {
  u8: (value: number): GgufValue => ({ type: GgufValueType.UINT8, value }),
  i8: (value: number): GgufValue => ({ type: GgufValueType.INT8, value }),
  u16: (value: number): GgufValue => ({ type: GgufValueType.UINT16, value }),
  i16: (value: number): GgufValue => ({ type: GgufValueType.INT16, value }),
  u32: (value: number): GgufValue => ({ type: GgufValueType.UINT32, value }),
  i32: (value: number): GgufValue => ({ type: GgufValueType.INT32, value }),
  f32: (value: number): GgufValue => ({ type: GgufValueType.FLOAT32, value }),
  f64: (value: number): GgufValue => ({ type: GgufValueType.FLOAT64, value }),
  u64: (value: bigint): GgufValue => ({ type: GgufValueType.UINT64, value }),
  i64: (value: bigint): GgufValue => ({ type: GgufValueType.INT64, value }),
  bool: (value: boolean): GgufValue => ({ type: GgufValueType.BOOL, value }),
  str: (value: string): GgufValue => ({ type: GgufValueType.STRING, value }),
  strs: (value: readonly string[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.STRING, value }),
  i32s: (value: readonly number[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.INT32, value }),
  u32s: (value: readonly number[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.UINT32, value }),
  f32s: (value: readonly number[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.FLOAT32, value }),
  bools: (value: readonly boolean[]): GgufValue => ({ type: GgufValueType.ARRAY, itemType: GgufValueType.BOOL, value }),
} as const;

/** The value of a numeric scalar KV (number or bigint types), as a number; undefined otherwise. */
export function kvNumber(kv: ReadonlyMap<string, GgufValue>, key: string): number | undefined {
  const v = kv.get(key);
  if (!v || v.type === GgufValueType.ARRAY) return undefined;
  if (typeof v.value === 'number') return v.value;
  if (typeof v.value === 'bigint') return Number(v.value);
  return undefined;
}

/** The value of a string KV; undefined when absent or not a string. */
export function kvString(kv: ReadonlyMap<string, GgufValue>, key: string): string | undefined {
  const v = kv.get(key);
  return v && v.type === GgufValueType.STRING ? v.value : undefined;
}

/** The items of an array KV; undefined when absent or not an array. */
export function kvArray(
  kv: ReadonlyMap<string, GgufValue>,
  key: string,
): readonly (number | bigint | boolean | string)[] | undefined {
  const v = kv.get(key);
  return v && v.type === GgufValueType.ARRAY ? v.value : undefined;
}
