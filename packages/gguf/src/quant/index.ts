// One entry point over the encoders/decoders, keyed by ggml type, for code that handles
// whatever type a tensor plan picked.

import { GgmlType, ggmlType } from '../types.js';
import { decodeF16, decodeF32, encodeF16, encodeF32 } from './f16.js';
import { decodeMXFP4, encodeMXFP4 } from './mxfp4.js';
import { decodeQ4_K, encodeQ4_K } from './q4_k.js';
import { decodeQ5_0, encodeQ5_0 } from './q5_0.js';
import { decodeQ6_K, encodeQ6_K } from './q6_k.js';
import { decodeQ8_0, encodeQ8_0 } from './q8_0.js';

type Encoder = (x: ArrayLike<number>, out?: Uint8Array, offset?: number) => Uint8Array;
type Decoder = (bytes: Uint8Array, n: number, offset?: number) => Float32Array;

const CODECS = new Map<GgmlType, { encode: Encoder; decode: Decoder }>([
  [GgmlType.F32, {
    encode: (x, out, offset = 0) => place(encodeF32(x), out, offset),
    decode: (b, n, offset = 0) => decodeF32(b.subarray(offset), n),
  }],
  [GgmlType.F16, {
    encode: (x, out, offset = 0) => place(encodeF16(x), out, offset),
    decode: (b, n, offset = 0) => decodeF16(b.subarray(offset), n),
  }],
  [GgmlType.Q8_0, { encode: encodeQ8_0, decode: decodeQ8_0 }],
  [GgmlType.Q5_0, { encode: encodeQ5_0, decode: decodeQ5_0 }],
  [GgmlType.Q4_K, { encode: encodeQ4_K, decode: decodeQ4_K }],
  [GgmlType.Q6_K, { encode: encodeQ6_K, decode: decodeQ6_K }],
  [GgmlType.MXFP4, { encode: encodeMXFP4, decode: decodeMXFP4 }],
]);

function place(bytes: Uint8Array, out: Uint8Array | undefined, offset: number): Uint8Array {
  if (!out) return bytes;
  out.set(bytes, offset);
  return out;
}

/** Types this package can encode and decode. */
export function codecTypes(): GgmlType[] {
  return [...CODECS.keys()];
}

function codec(type: GgmlType): { encode: Encoder; decode: Decoder } {
  const c = CODECS.get(type);
  if (!c) throw new Error(`no encoder for ggml type ${ggmlType(type).name}`);
  return c;
}

/** Encode values (a whole number of blocks) as `type`; writes into out at offset when given. */
export function encode(type: GgmlType, x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  return codec(type).encode(x, out, offset);
}

/** Decode n values of `type` starting at offset. */
export function decode(type: GgmlType, bytes: Uint8Array, n: number, offset = 0): Float32Array {
  return codec(type).decode(bytes, n, offset);
}
