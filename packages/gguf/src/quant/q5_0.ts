// Q5_0: blocks of 32 weights = f16 scale d + 32-bit high bits + 16 bytes of low nibbles;
// x = d·(q − 16), q in 0..31. Needed because llama-quantize falls back from Q4_K to Q5_0 for
// rows that are not a multiple of 256 (Gemma 4's 704-wide expert down projections).
// Encoder follows quantize_row_q5_0_ref, decoder dequantize_row_q5_0.

import { f16ToF32, f32ToF16 } from './f16.js';

export const QK5_0 = 32;
export const Q5_0_BLOCK_BYTES = 2 + 4 + QK5_0 / 2;

function checkLen(n: number): void {
  if (n % QK5_0 !== 0) throw new Error(`Q5_0 needs a multiple of ${QK5_0} values, got ${n}`);
}

export function encodeQ5_0(x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  checkLen(x.length);
  const nb = x.length / QK5_0;
  const dst = out ?? new Uint8Array(nb * Q5_0_BLOCK_BYTES);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < QK5_0; j++) {
      const v = x[i * QK5_0 + j]!;
      if (amax < Math.abs(v)) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = Math.fround(max / -16);
    const id = d !== 0 ? Math.fround(1 / d) : 0;
    const o = offset + i * Q5_0_BLOCK_BYTES;
    const h = f32ToF16(d);
    dst[o] = h & 0xff;
    dst[o + 1] = h >>> 8;
    let qh = 0;
    for (let j = 0; j < QK5_0 / 2; j++) {
      // (int8_t)(v + 16.5f) truncates toward zero, then MIN(31, ...) as uint8.
      const xi0 = Math.min(31, Math.trunc(Math.fround(x[i * QK5_0 + j]! * id) + 16.5) & 0xff);
      const xi1 = Math.min(31, Math.trunc(Math.fround(x[i * QK5_0 + QK5_0 / 2 + j]! * id) + 16.5) & 0xff);
      dst[o + 6 + j] = (xi0 & 0x0f) | ((xi1 & 0x0f) << 4);
      qh |= ((xi0 & 0x10) >>> 4) << j;
      qh |= ((xi1 & 0x10) >>> 4) << (j + 16);
    }
    qh >>>= 0;
    dst[o + 2] = qh & 0xff;
    dst[o + 3] = (qh >>> 8) & 0xff;
    dst[o + 4] = (qh >>> 16) & 0xff;
    dst[o + 5] = (qh >>> 24) & 0xff;
  }
  return dst;
}

export function decodeQ5_0(bytes: Uint8Array, n: number, offset = 0): Float32Array {
  checkLen(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK5_0; i++) {
    const o = offset + i * Q5_0_BLOCK_BYTES;
    const d = f16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
    const qh = (bytes[o + 2]! | (bytes[o + 3]! << 8) | (bytes[o + 4]! << 16) | (bytes[o + 5]! << 24)) >>> 0;
    for (let j = 0; j < QK5_0 / 2; j++) {
      const xh0 = ((qh >>> j) << 4) & 0x10;
      const xh1 = (qh >>> (j + 12)) & 0x10;
      const q = bytes[o + 6 + j]!;
      y[i * QK5_0 + j] = (((q & 0x0f) | xh0) - 16) * d;
      y[i * QK5_0 + j + QK5_0 / 2] = (((q >>> 4) | xh1) - 16) * d;
    }
  }
  return y;
}
