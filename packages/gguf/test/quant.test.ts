import { describe, expect, it } from 'vitest';
import {
  GgmlType,
  decode,
  decodeMXFP4,
  decodeQ4_K,
  decodeQ6_K,
  encode,
  f16ToF32,
  f32ToF16,
  MXFP4_VALUES,
} from '../src/index.js';
import { nearestInt } from '../src/quant/f16.js';
import { q4kPackScales, q4kScaleMin } from '../src/quant/q4_k.js';
import { randomBlockWriter } from '../src/synth/fill.js';
import { blockKey, gauss, streamKey } from '../src/synth/prng.js';
import { ggmlType } from '../src/types.js';

function gaussianVector(n: number, seed: number, scale = 1): Float32Array {
  const key = streamKey(seed, 'quant-test');
  return Float32Array.from({ length: n }, (_, i) => scale * gauss(key, i));
}

function rms(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i]! * x[i]!;
  return Math.sqrt(s / x.length);
}

function rmsError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += (a[i]! - b[i]!) ** 2;
  return Math.sqrt(s / a.length);
}

describe('f16', () => {
  it('converts known values with round-to-nearest-even', () => {
    expect(f32ToF16(1)).toBe(0x3c00);
    expect(f32ToF16(-2)).toBe(0xc000);
    expect(f32ToF16(65504)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // rounds up to +inf
    expect(f32ToF16(2 ** -14)).toBe(0x0400); // smallest normal
    expect(f32ToF16(2 ** -24)).toBe(0x0001); // smallest subnormal
    expect(f32ToF16(2 ** -26)).toBe(0x0000); // below half the smallest subnormal
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie → even
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie → even (up)
    expect(f32ToF16(Number.NaN) & 0x7c00).toBe(0x7c00);
  });

  it('round-trips every finite half value exactly', () => {
    for (let h = 0; h < 65536; h++) {
      if ((h & 0x7c00) === 0x7c00) continue; // inf / NaN
      expect(f32ToF16(f16ToF32(h))).toBe(h);
    }
  });

  it('nearestInt rounds halves to even like ggml', () => {
    expect(nearestInt(2.5)).toBe(2);
    expect(nearestInt(3.5)).toBe(4);
    expect(nearestInt(-2.5)).toBe(-2);
    expect(nearestInt(-0.6)).toBe(-1);
  });
});

describe('codec round trips', () => {
  // Bounds on RMS error relative to the RMS of gaussian input, comfortably above what each
  // format achieves (measured: Q8_0 ≈ 0.004, Q6_K ≈ 0.02, Q5_0 ≈ 0.05, Q4_K ≈ 0.09, MXFP4 ≈ 0.15).
  const cases: [GgmlType, number][] = [
    [GgmlType.F32, 0],
    [GgmlType.F16, 0.001],
    [GgmlType.Q8_0, 0.008],
    [GgmlType.Q6_K, 0.04],
    [GgmlType.Q5_0, 0.07],
    [GgmlType.Q4_K, 0.12],
    [GgmlType.MXFP4, 0.2],
  ];
  for (const [type, bound] of cases) {
    it(`${ggmlType(type).name}: decode(encode(x)) ≈ x`, () => {
      for (const scale of [1, 0.01, 37]) {
        const x = gaussianVector(4096, 7, scale);
        const bytes = encode(type, x);
        expect(bytes.length).toBe((x.length / ggmlType(type).blockSize) * ggmlType(type).typeSize);
        const y = decode(type, bytes, x.length);
        expect(rmsError(x, y) / rms(x)).toBeLessThanOrEqual(bound + 1e-7);
      }
    });
  }

  it('encoders write at an offset inside a larger buffer', () => {
    const x = gaussianVector(512, 3);
    const alone = encode(GgmlType.Q4_K, x);
    const big = new Uint8Array(alone.length + 100).fill(0xaa);
    encode(GgmlType.Q4_K, x, big, 50);
    expect(big.subarray(50, 50 + alone.length)).toEqual(alone);
    expect(big[49]).toBe(0xaa);
    expect(big[50 + alone.length]).toBe(0xaa);
  });

  it('keeps all-zero blocks exactly zero', () => {
    for (const type of [GgmlType.Q8_0, GgmlType.Q5_0, GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.MXFP4]) {
      const y = decode(type, encode(type, new Float32Array(256)), 256);
      expect(Array.from(y).every((v) => v === 0)).toBe(true);
    }
  });

  it('rejects lengths that are not whole blocks', () => {
    expect(() => encode(GgmlType.Q4_K, new Float32Array(128))).toThrow(/multiple of 256/);
    expect(() => encode(GgmlType.Q8_0, new Float32Array(31))).toThrow(/multiple of 32/);
  });
});

describe('block layouts (ggml-common.h / ggml-quants.c)', () => {
  it('Q4_K 6-bit scale/min packing inverts get_scale_min_k4 for every value and slot', () => {
    const buf = new Uint8Array(12);
    for (let v = 0; v < 64; v++) {
      for (let j = 0; j < 8; j++) {
        const ls = Array.from({ length: 8 }, (_, k) => (k === j ? v : (k * 7 + 3) % 64));
        const lm = Array.from({ length: 8 }, (_, k) => (k === j ? 63 - v : (k * 11 + 5) % 64));
        q4kPackScales(buf, 0, ls, lm);
        for (let k = 0; k < 8; k++) expect(q4kScaleMin(buf, 0, k)).toEqual([ls[k], lm[k]]);
      }
    }
  });

  it('Q4_K: element order and scale application match dequantize_row_q4_K', () => {
    const block = new Uint8Array(144);
    const d = 0.5;
    const dmin = 0.25;
    block.set([f32ToF16(d) & 0xff, f32ToF16(d) >> 8, f32ToF16(dmin) & 0xff, f32ToF16(dmin) >> 8], 0);
    const ls = [1, 2, 3, 4, 5, 6, 7, 63];
    const lm = [0, 1, 2, 3, 4, 5, 6, 60];
    q4kPackScales(block, 4, ls, lm);
    for (let i = 0; i < 128; i++) block[16 + i] = (i % 16) | ((15 - (i % 16)) << 4);
    const y = decodeQ4_K(block, 256);
    for (let g = 0; g < 4; g++) {
      for (let l = 0; l < 32; l++) {
        const q = block[16 + 32 * g + l]!;
        expect(y[64 * g + l]).toBeCloseTo(d * ls[2 * g]! * (q & 15) - dmin * lm[2 * g]!, 5);
        expect(y[64 * g + 32 + l]).toBeCloseTo(d * ls[2 * g + 1]! * (q >> 4) - dmin * lm[2 * g + 1]!, 5);
      }
    }
  });

  it('Q6_K: ql/qh/scales packing matches dequantize_row_q6_K', () => {
    const block = new Uint8Array(210);
    const L = Array.from({ length: 256 }, (_, i) => (i * 37 + 11) % 64);
    // Pack as quantize_row_q6_K_ref does.
    for (let half = 0; half < 2; half++) {
      const ql = 64 * half;
      const qh = 128 + 32 * half;
      const j = 128 * half;
      for (let l = 0; l < 32; l++) {
        const [q1, q2, q3, q4] = [L[j + l]!, L[j + l + 32]!, L[j + l + 64]!, L[j + l + 96]!];
        block[ql + l] = (q1 & 15) | ((q3 & 15) << 4);
        block[ql + l + 32] = (q2 & 15) | ((q4 & 15) << 4);
        block[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
    const scales = Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? i + 1 : -(i + 1)));
    scales.forEach((s, i) => (block[192 + i] = s & 0xff));
    block[208] = f32ToF16(0.125) & 0xff;
    block[209] = f32ToF16(0.125) >> 8;
    const y = decodeQ6_K(block, 256);
    for (let i = 0; i < 256; i++) expect(y[i]).toBeCloseTo(0.125 * scales[Math.floor(i / 16)]! * (L[i]! - 32), 5);
  });

  it('MXFP4: E8M0 scale and nibble placement match dequantize_row_mxfp4', () => {
    const block = new Uint8Array(17);
    block[0] = 130; // 2^(130-128) = 4
    for (let j = 0; j < 16; j++) block[1 + j] = j | ((15 - j) << 4);
    const y = decodeMXFP4(block, 32);
    for (let j = 0; j < 16; j++) {
      expect(y[j]).toBe(MXFP4_VALUES[j]! * 4);
      expect(y[j + 16]).toBe(MXFP4_VALUES[15 - j]! * 4);
    }
  });
});

describe('random quantized blocks', () => {
  for (const type of [GgmlType.Q4_K, GgmlType.Q6_K, GgmlType.Q8_0, GgmlType.Q5_0, GgmlType.MXFP4]) {
    it(`${ggmlType(type).name} blocks have the requested std and ≈ zero mean`, () => {
      for (const std of [0.02, 0.7, 3]) {
        const info = ggmlType(type);
        const nBlocks = Math.ceil(65536 / info.blockSize);
        const bytes = new Uint8Array(nBlocks * info.typeSize);
        const write = randomBlockWriter(type, std);
        const stream = streamKey(1, `std-${type}-${std}`);
        for (let b = 0; b < nBlocks; b++) write(bytes, b * info.typeSize, blockKey(stream, b));
        const y = decode(type, bytes, nBlocks * info.blockSize);
        let mean = 0;
        for (const v of y) mean += v;
        mean /= y.length;
        expect(Math.abs(rms(y) - std) / std).toBeLessThan(0.05);
        expect(Math.abs(mean) / std).toBeLessThan(0.05);
      }
    });
  }
});
