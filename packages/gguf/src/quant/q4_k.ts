// Q4_K: super-blocks of 256 weights = f16 d, f16 dmin, 12 bytes of packed 6-bit (scale, min)
// pairs for 8 sub-blocks of 32, then 128 bytes of 4-bit quants; x = d·sc·q − dmin·m.
// Layout from block_q4_K (ggml-common.h); the decoder mirrors dequantize_row_q4_K exactly.
// The encoder keeps the reference's packing and scale quantization but picks each sub-block's
// scale/min from its plain min/max (quantize_row_q4_K_ref searches for a better fit): correct,
// not optimal.

import { f16ToF32, f32ToF16, nearestInt } from './f16.js';

export const QK_K = 256;
export const Q4_K_BLOCK_BYTES = 2 + 2 + 12 + QK_K / 2;

function checkLen(n: number): void {
  if (n % QK_K !== 0) throw new Error(`Q4_K needs a multiple of ${QK_K} values, got ${n}`);
}

/** Unpack the 6-bit scale and min of sub-block j (get_scale_min_k4). */
export function q4kScaleMin(scales: Uint8Array, base: number, j: number): [number, number] {
  if (j < 4) return [scales[base + j]! & 63, scales[base + j + 4]! & 63];
  const d = (scales[base + j + 4]! & 0x0f) | ((scales[base + j - 4]! >>> 6) << 4);
  const m = (scales[base + j + 4]! >>> 4) | ((scales[base + j]! >>> 6) << 4);
  return [d, m];
}

/** Pack 8 (scale, min) 6-bit pairs into 12 bytes at base, as quantize_row_q4_K_ref does. */
export function q4kPackScales(dst: Uint8Array, base: number, ls: ArrayLike<number>, lm: ArrayLike<number>): void {
  for (let k = 0; k < 12; k++) dst[base + k] = 0;
  for (let j = 0; j < 8; j++) {
    const s = ls[j]!;
    const m = lm[j]!;
    if (j < 4) {
      dst[base + j] = s;
      dst[base + j + 4] = m;
    } else {
      dst[base + j + 4] = (s & 0x0f) | ((m & 0x0f) << 4);
      dst[base + j - 4]! |= (s >>> 4) << 6;
      dst[base + j]! |= (m >>> 4) << 6;
    }
  }
}

export function encodeQ4_K(x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  checkLen(x.length);
  const nb = x.length / QK_K;
  const dst = out ?? new Uint8Array(nb * Q4_K_BLOCK_BYTES);
  const scales = new Float32Array(8);
  const mins = new Float32Array(8);
  const ls = new Uint8Array(8);
  const lm = new Uint8Array(8);
  const L = new Uint8Array(QK_K);
  for (let i = 0; i < nb; i++) {
    const xb = i * QK_K;
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 8; j++) {
      let lo = 0; // the min is never positive: Q4_K stores −min ≥ 0
      let hi = -Infinity;
      for (let l = 0; l < 32; l++) {
        const v = x[xb + 32 * j + l]!;
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      scales[j] = Math.max(0, (hi - lo) / 15);
      mins[j] = -lo;
      maxScale = Math.max(maxScale, scales[j]!);
      maxMin = Math.max(maxMin, mins[j]!);
    }
    const invScale = maxScale > 0 ? 63 / maxScale : 0;
    const invMin = maxMin > 0 ? 63 / maxMin : 0;
    for (let j = 0; j < 8; j++) {
      ls[j] = Math.min(63, nearestInt(invScale * scales[j]!));
      lm[j] = Math.min(63, nearestInt(invMin * mins[j]!));
    }
    const o = offset + i * Q4_K_BLOCK_BYTES;
    const dBits = f32ToF16(maxScale / 63);
    const mBits = f32ToF16(maxMin / 63);
    dst[o] = dBits & 0xff;
    dst[o + 1] = dBits >>> 8;
    dst[o + 2] = mBits & 0xff;
    dst[o + 3] = mBits >>> 8;
    q4kPackScales(dst, o + 4, ls, lm);
    const d = f16ToF32(dBits);
    const dmin = f16ToF32(mBits);
    for (let j = 0; j < 8; j++) {
      const [sc, m] = q4kScaleMin(dst, o + 4, j);
      const dj = d * sc;
      const dm = dmin * m;
      for (let l = 0; l < 32; l++) {
        L[32 * j + l] = dj === 0 ? 0 : Math.max(0, Math.min(15, nearestInt((x[xb + 32 * j + l]! + dm) / dj)));
      }
    }
    let q = o + 16;
    for (let j = 0; j < QK_K; j += 64) {
      for (let l = 0; l < 32; l++) dst[q + l] = L[j + l]! | (L[j + l + 32]! << 4);
      q += 32;
    }
  }
  return dst;
}

export function decodeQ4_K(bytes: Uint8Array, n: number, offset = 0): Float32Array {
  checkLen(n);
  const y = new Float32Array(n);
  let yi = 0;
  for (let i = 0; i < n / QK_K; i++) {
    const o = offset + i * Q4_K_BLOCK_BYTES;
    const d = f16ToF32(bytes[o]! | (bytes[o + 1]! << 8));
    const min = f16ToF32(bytes[o + 2]! | (bytes[o + 3]! << 8));
    let q = o + 16;
    let is = 0;
    for (let j = 0; j < QK_K; j += 64) {
      const [sc1, m1] = q4kScaleMin(bytes, o + 4, is);
      const [sc2, m2] = q4kScaleMin(bytes, o + 4, is + 1);
      const d1 = d * sc1;
      const mm1 = min * m1;
      const d2 = d * sc2;
      const mm2 = min * m2;
      for (let l = 0; l < 32; l++) y[yi++] = d1 * (bytes[q + l]! & 0x0f) - mm1;
      for (let l = 0; l < 32; l++) y[yi++] = d2 * (bytes[q + l]! >>> 4) - mm2;
      q += 32;
      is += 2;
    }
  }
  return y;
}
