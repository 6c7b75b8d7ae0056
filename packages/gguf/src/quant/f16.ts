// IEEE half precision, as ggml stores scales (ggml_half) and F16 tensors. Conversion from f32
// rounds to nearest-even like the F16C instruction ggml uses on x86, so encoders here produce the
// same scale bits ggml's reference quantizers would.

const f32Buf = new Float32Array(1);
const u32Buf = new Uint32Array(f32Buf.buffer);

/** f32 → f16 bits, round to nearest even, overflow to ±inf, NaN preserved. */
export function f32ToF16(value: number): number {
  f32Buf[0] = value;
  const x = u32Buf[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): m = mant24 >> (14 - e), rounded to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let half = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (up to inf).
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++;
  return sign | half;
}

const F16_TABLE = (() => {
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >>> 10) & 0x1f;
    const mant = h & 0x3ff;
    let v: number;
    if (exp === 0) v = mant * 2 ** -24;
    else if (exp === 0x1f) v = mant === 0 ? Infinity : NaN;
    else v = (1 + mant / 1024) * 2 ** (exp - 15);
    t[h] = sign * v;
  }
  return t;
})();

/** f16 bits → f32 value. */
export function f16ToF32(h: number): number {
  return F16_TABLE[h & 0xffff]!;
}

/** Round a value through f16 (what ggml gets back after storing a scale). */
export function roundF16(value: number): number {
  return f16ToF32(f32ToF16(value));
}

/** Encode f32 values as an F16 tensor's bytes (little-endian). */
export function encodeF16(x: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(x.length * 2);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < x.length; i++) dv.setUint16(i * 2, f32ToF16(x[i]!), true);
  return out;
}

export function decodeF16(bytes: Uint8Array, n = bytes.length / 2): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = f16ToF32(dv.getUint16(i * 2, true));
  return out;
}

/** Encode f32 values as an F32 tensor's bytes (little-endian). */
export function encodeF32(x: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(x.length * 4);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < x.length; i++) dv.setFloat32(i * 4, x[i]!, true);
  return out;
}

export function decodeF32(bytes: Uint8Array, n = bytes.length / 4): Float32Array {
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = dv.getFloat32(i * 4, true);
  return out;
}

/** ggml's nearest_int: float32 round-half-to-even via the 1.5·2^23 trick. */
export function nearestInt(x: number): number {
  return Math.fround(Math.fround(x) + 12582912) - 12582912;
}

/** C roundf: halves away from zero. */
export function roundf(x: number): number {
  return x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
}
