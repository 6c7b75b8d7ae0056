// MXFP4 (OCP microscaling FP4), ggml layout: blocks of 32 weights = one E8M0 shared exponent e
// + 16 bytes of packed E2M1 codes; weight j sits in the low nibble of byte j and weight j+16 in
// the high nibble. x = kvalues[code] · 2^(e−128), where ggml's kvalues are twice the E2M1 value
// (so the scale is 0.5·2^(e−127), GGML_E8M0_TO_FP32_HALF). Encoder and decoder follow
// quantize_row_mxfp4_ref / dequantize_row_mxfp4.

export const QK_MXFP4 = 32;
export const MXFP4_BLOCK_BYTES = 1 + QK_MXFP4 / 2;

/** kvalues_mxfp4 (ggml-common.h): 2 × the E2M1 value of each 4-bit code. */
export const MXFP4_VALUES: readonly number[] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

function checkLen(n: number): void {
  if (n % QK_MXFP4 !== 0) throw new Error(`MXFP4 needs a multiple of ${QK_MXFP4} values, got ${n}`);
}

/** GGML_E8M0_TO_FP32_HALF: 0.5 · 2^(e − 127). */
export function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

function bestIndex(x: number, d: number): number {
  let best = 0;
  let bestErr = Math.abs(MXFP4_VALUES[0]! * d - x);
  for (let i = 1; i < 16; i++) {
    const err = Math.abs(MXFP4_VALUES[i]! * d - x);
    if (err < bestErr) {
      best = i;
      bestErr = err;
    }
  }
  return best;
}

export function encodeMXFP4(x: ArrayLike<number>, out?: Uint8Array, offset = 0): Uint8Array {
  checkLen(x.length);
  const nb = x.length / QK_MXFP4;
  const dst = out ?? new Uint8Array(nb * MXFP4_BLOCK_BYTES);
  for (let i = 0; i < nb; i++) {
    let amax = 0;
    for (let j = 0; j < QK_MXFP4; j++) amax = Math.max(amax, Math.abs(x[i * QK_MXFP4 + j]!));
    const e = amax > 0 ? Math.max(0, Math.min(255, Math.floor(Math.log2(amax)) - 2 + 127)) : 0;
    const d = e8m0Half(e);
    const o = offset + i * MXFP4_BLOCK_BYTES;
    dst[o] = e;
    for (let j = 0; j < QK_MXFP4 / 2; j++) {
      const x0 = bestIndex(x[i * QK_MXFP4 + j]!, d);
      const x1 = bestIndex(x[i * QK_MXFP4 + QK_MXFP4 / 2 + j]!, d);
      dst[o + 1 + j] = x0 | (x1 << 4);
    }
  }
  return dst;
}

export function decodeMXFP4(bytes: Uint8Array, n: number, offset = 0): Float32Array {
  checkLen(n);
  const y = new Float32Array(n);
  for (let i = 0; i < n / QK_MXFP4; i++) {
    const o = offset + i * MXFP4_BLOCK_BYTES;
    const d = e8m0Half(bytes[o]!);
    for (let j = 0; j < QK_MXFP4 / 2; j++) {
      const q = bytes[o + 1 + j]!;
      y[i * QK_MXFP4 + j] = MXFP4_VALUES[q & 0x0f]! * d;
      y[i * QK_MXFP4 + j + QK_MXFP4 / 2] = MXFP4_VALUES[q >>> 4]! * d;
    }
  }
  return y;
}
