// Q8_0: blocks of 32 weights = f16 scale d + 32 int8 quants; x = d·q.
// Encoder follows quantize_row_q8_0_ref, decoder dequantize_row_q8_0 (ggml-quants.c).

import { f16ToF32, f32ToF16, roundf } from './f16.js';

export const QK8_0 = 32;
export const Q8_0_BLOCK_BYTES = 2 + QK8_0;

function checkLen(n: number): void {
  if (n % QK8_0 !== 0) throw new Error(`Q8_0 needs a multiple of ${QK8_0} values, got ${n}`);
}

/** Encode x (length a multiple of 32) into out at offset; returns out. */
export function encodeQ8_0(x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  checkLen(x.length);
  const nb = x.length / QK8_0;
  const dst = out ?? new Uint8Array(nb * Q8_0_BLOCK_BYTES);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    for (let j = 0; j < QK8_0; j++) amax = Math.max(amax, Math.abs(x[i * QK8_0 + j]!));
    const d = Math.fround(amax / 127);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const o = offset + i * Q8_0_BLOCK_BYTES;
    const h = f32ToF16(d);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
    for (let j = 0; j < QK8_0; j++) dst[o + 2 + j] = roundf(Math.fround(x[i * QK8_0 + j]! * id)) & 0xff;
  }
  return dst;
}

/** Decode n values from Q8_0 bytes. */
export function decodeQ8_0(bytes: Uint8Array, n: number, offset = 0): Float32Array {
  checkLen(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK8_0; i++) {
    const o = offset + i * Q8_0_BLOCK_BYTES;
    const d = f16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
    for (let j = 0; j < QK8_0; j++) y[i * QK8_0 + j] = ((bytes[o + 2 + j]! << 24) >> 24) * d;
  }
  return y;
}
