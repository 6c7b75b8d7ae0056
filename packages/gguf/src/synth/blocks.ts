// Random quantized blocks for the bulk of a synthetic model's tensors.
//
// Random weights. Bulk tensors are random quantized blocks generated directly — random quant
// bits under a fixed scale chosen for the tensor's target standard deviation — which is ~50×
// faster than quantizing random floats and gives llama.cpp exactly the same kind of data.
// Block b of tensor T is a pure function of (seed, T's name, b) (prng.ts), so any block can be
// regenerated alone.

import { f16ToF32, f32ToF16 } from '../quant/f16.js';
import { q4kPackScales } from '../quant/q4_k.js';
import { GgmlType, ggmlType } from '../types.js';
import { word } from './prng.js';

/** Writes one random block at dst[off..] from the block's PRNG key. */
export type BlockWriter = (dst: Uint8Array, off: number, key: number) => void;

function fp16Bytes(dst: Uint8Array, off: number, bits: number): void {
  dst[off] = bits & 0xff;
  dst[off + 1] = bits >>> 8;
}

function randomFill(dst: Uint8Array, off: number, n: number, key: number, firstWord = 0): void {
  let w = firstWord;
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const r = word(key, w++);
    dst[off + i] = r;
    dst[off + i + 1] = r >>> 8;
    dst[off + i + 2] = r >>> 16;
    dst[off + i + 3] = r >>> 24;
  }
  if (i < n) {
    let r = word(key, w);
    for (; i < n; i++, r >>>= 8) dst[off + i] = r;
  }
}

/**
 * A random sign for a block's f16 scale: codes q − 32 (Q6_K), q − 16 (Q5_0) and int8 (Q8_0)
 * have mean −½, which a per-block sign flip cancels.
 */
function signBit(key: number): number {
  return word(key, 63) & 0x8000;
}

/**
 * A writer of one random block of `type` whose values have mean ≈ 0 and the given standard
 * deviation. Scales are fixed per tensor; the quant bits are uniform random:
 * - Q4_K: all 8 sub-scales and sub-mins 32, dmin = 7.5·d, so x = 32·d·(q − 7.5), std 147.5·d
 *   (design.md's "fixed d with dmin = 7.5·d centres the weights")
 * - Q6_K: all 16 scales 16, x = 16·d·(q − 32), std 295.5·d (d's sign random per block)
 * - Q8_0: x = d·q for a random int8, std 73.9·d (d's sign random per block)
 * - Q5_0: x = d·(q − 16), std 9.23·d (d's sign random per block)
 * - MXFP4: random E2M1 codes, std 5.85·2^(e−128), blocks mixed between two adjacent e
 */
export function randomBlockWriter(type: GgmlType, std: number): BlockWriter {
  switch (type) {
    case GgmlType.Q4_K: {
      const d = f32ToF16(std / 147.5);
      const dmin = f32ToF16(f16ToF32(d) * 7.5);
      const scales = new Uint8Array(12);
      q4kPackScales(scales, 0, [32, 32, 32, 32, 32, 32, 32, 32], [32, 32, 32, 32, 32, 32, 32, 32]);
      return (dst, off, key) => {
        fp16Bytes(dst, off, d);
        fp16Bytes(dst, off + 2, dmin);
        dst.set(scales, off + 4);
        randomFill(dst, off + 16, 128, key);
      };
    }
    case GgmlType.Q6_K: {
      const d = f32ToF16(std / (16 * 18.47));
      return (dst, off, key) => {
        randomFill(dst, off, 192, key);
        dst.fill(16, off + 192, off + 208);
        fp16Bytes(dst, off + 208, d | signBit(key));
      };
    }
    case GgmlType.Q8_0: {
      const d = f32ToF16(std / 73.9);
      return (dst, off, key) => {
        fp16Bytes(dst, off, d | signBit(key));
        randomFill(dst, off + 2, 32, key);
      };
    }
    case GgmlType.Q5_0: {
      const d = f32ToF16(std / 9.23);
      return (dst, off, key) => {
        fp16Bytes(dst, off, d | signBit(key));
        randomFill(dst, off + 2, 20, key);
      };
    }
    case GgmlType.MXFP4: {
      // The shared scale is a power of two, so mix blocks at 2^e0 and 2^(e0+1) in the
      // proportion that gives the target variance on average (otherwise the std could only
      // move in steps of 2×).
      const l = Math.log2(std / 5.85);
      const e0 = Math.max(1, Math.min(253, 128 + Math.floor(l)));
      const p = Math.min(1, Math.max(0, (4 ** (l - Math.floor(l)) - 1) / 3));
      return (dst, off, key) => {
        dst[off] = word(key, 8) / 4294967296 < p ? e0 + 1 : e0;
        randomFill(dst, off + 1, 16, key);
      };
    }
    default:
      throw new Error(`no random block writer for ${ggmlType(type).name}`);
  }
}
