// Q6_K: super-blocks of 256 weights = 128 bytes of low nibbles (ql), 64 bytes of 2-bit highs
// (qh), 16 int8 scales (one per 16 weights), f16 d; x = d·scale·(q − 32), q in 0..63.
// Layout from block_q6_K; the decoder mirrors dequantize_row_q6_K, the encoder
// quantize_row_q6_K_ref with a single-pass per-16 scale (the reference refines it).

import { f16ToF32, f32ToF16, nearestInt } from './f16.js';

export const QK_K = 256;
export const Q6_K_BLOCK_BYTES = QK_K / 2 + QK_K / 4 + QK_K / 16 + 2;
const GROUP_MAX_EPS = 1e-15;

function checkLen(n: number): void {
  if (n % QK_K !== 0) throw new Error(`Q6_K needs a multiple of ${QK_K} values, got ${n}`);
}

export function encodeQ6_K(x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  checkLen(x.length);
  const nb = x.length / QK_K;
  const dst = out ?? new Uint8Array(nb * Q6_K_BLOCK_BYTES);
  const scales = new Float32Array(16);
  const L = new Uint8Array(QK_K);
  for (let i = 0; i < nb; i++) {
    const xb = i * QK_K;
    const o = offset + i * Q6_K_BLOCK_BYTES;
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      // make_qx_quants(16, 32, ...) with rmse_type 0: scale = max / −32, where max is the
      // value of largest magnitude, so it lands on the code −32 that has no positive twin.
      let amax = 0;
      let max = 0;
      for (let l = 0; l < 16; l++) {
        const v = x[xb + 16 * ib + l]!;
        if (Math.abs(v) > amax) {
          amax = Math.abs(v);
          max = v;
        }
      }
      const scale = amax < GROUP_MAX_EPS ? 0 : max / -32;
      scales[ib] = scale;
      if (Math.abs(scale) > maxAbsScale) {
        maxAbsScale = Math.abs(scale);
        maxScale = scale;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      dst.fill(0, o, o + Q6_K_BLOCK_BYTES);
      continue;
    }
    const iscale = -128 / maxScale;
    const dBits = f32ToF16(1 / iscale);
    const d = f16ToF32(dBits);
    const sc = new Int8Array(16);
    for (let ib = 0; ib < 16; ib++) sc[ib] = Math.min(127, nearestInt(iscale * scales[ib]!));
    for (let j = 0; j < 16; j++) {
      const dj = d * sc[j]!;
      for (let l = 0; l < 16; l++) {
        const q = dj === 0 ? 0 : Math.max(-32, Math.min(31, nearestInt(x[xb + 16 * j + l]! / dj)));
        L[16 * j + l] = q + 32;
      }
    }
    let ql = o;
    let qh = o + QK_K / 2;
    dst.fill(0, o, o + QK_K / 2 + QK_K / 4);
    for (let j = 0; j < QK_K; j += 128) {
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l]!;
        const q2 = L[j + l + 32]!;
        const q3 = L[j + l + 64]!;
        const q4 = L[j + l + 96]!;
        dst[ql + l] = (q1 & 0x0f) | ((q3 & 0x0f) << 4);
        dst[ql + l + 32] = (q2 & 0x0f) | ((q4 & 0x0f) << 4);
        dst[qh + l] = (q1 >>> 4) | ((q2 >>> 4) << 2) | ((q3 >>> 4) << 4) | ((q4 >>> 4) << 6);
      }
      ql += 64;
      qh += 32;
    }
    for (let ib = 0; ib < 16; ib++) dst[o + 192 + ib] = sc[ib]! & 0xff;
    dst[o + 208] = dBits & 0xff;
    dst[o + 209] = dBits >>> 8;
  }
  return dst;
}

export function decodeQ6_K(bytes: Uint8Array, n: number, offset = 0): Float32Array {
  checkLen(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_K; i++) {
    const o = offset + i * Q6_K_BLOCK_BYTES;
    const d = f16ToF32(bytes[o + 208]! | (bytes[o + 209]! << 8));
    let ql = o;
    let qh = o + 128;
    let sc = o + 192;
    let yb = i * QK_K;
    for (let n128 = 0; n128 < QK_K; n128 += 128) {
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = bytes[qh + l]!;
        const q1 = ((bytes[ql + l]! & 0x0f) | (((h >>> 0) & 3) << 4)) - 32;
        const q2 = ((bytes[ql + l + 32]! & 0x0f) | (((h >>> 2) & 3) << 4)) - 32;
        const q3 = ((bytes[ql + l]! >>> 4) | (((h >>> 4) & 3) << 4)) - 32;
        const q4 = ((bytes[ql + l + 32]! >>> 4) | (((h >>> 6) & 3) << 4)) - 32;
        y[yb + l] = d * ((bytes[sc + is]! << 24) >> 24) * q1;
        y[yb + l + 32] = d * ((bytes[sc + is + 2]! << 24) >> 24) * q2;
        y[yb + l + 64] = d * ((bytes[sc + is + 4]! << 24) >> 24) * q3;
        y[yb + l + 96] = d * ((bytes[sc + is + 6]! << 24) >> 24) * q4;
      }
      yb += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
  return y;
}
