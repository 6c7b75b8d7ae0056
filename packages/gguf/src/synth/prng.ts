// Counter-based randomness for synthetic models.
//
// Every random word is a pure function of (key, counter), where the key is derived from
// (seed, stream name, block index). Any block of any tensor can therefore be regenerated on its
// own, in any order, without replaying a stream: the output head is built from regenerated
// embedding rows, and a streaming test can recompute the expected bytes of any expert slice.
// The mixer is a 32-bit integer hash (a "lowbias32"-style xorshift-multiply finalizer), cheap in
// JavaScript (Math.imul) and with full avalanche, which is all synthetic weights need.

/** Avalanche a 32-bit integer. */
export function mix32(x: number): number {
  x = x | 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x21f0aaad);
  x ^= x >>> 15;
  x = Math.imul(x, 0x735a2d97);
  x ^= x >>> 15;
  return x >>> 0;
}

/** 32-bit hash of a string (FNV-1a over UTF-16 code units, then mixed). */
export function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}

/** Combine a key with another 32-bit value (order-sensitive). */
export function combine(key: number, v: number): number {
  return mix32((key ^ mix32(v + 0x9e3779b9)) + Math.imul(key, 0x85ebca6b));
}

/** Key for a named stream under a seed, e.g. streamKey(1, 'blk.3.ffn_up_exps.weight'). */
export function streamKey(seed: number, name: string): number {
  return combine(mix32(seed >>> 0) ^ 0x5bd1e995, hashString(name));
}

/** Key for block `index` of a stream. */
export function blockKey(stream: number, index: number): number {
  // Blocks past 2^32 (files over ~600 GB of Q4_K) wrap; fold the high part in as well.
  const lo = index >>> 0;
  const hi = Math.floor(index / 0x100000000);
  return combine(combine(stream, lo), hi);
}

/** The i-th random 32-bit word of a key. */
export function word(key: number, i: number): number {
  return mix32((key + Math.imul(i, 0x9e3779b9)) | 0);
}

/** Fill dst[off .. off+n) with random bytes of `key`. */
export function fillBytes(dst: Uint8Array, off: number, n: number, key: number): void {
  let i = 0;
  let w = 0;
  for (; i + 4 <= n; i += 4, w++) {
    const r = word(key, w);
    dst[off + i] = r & 0xff;
    dst[off + i + 1] = (r >>> 8) & 0xff;
    dst[off + i + 2] = (r >>> 16) & 0xff;
    dst[off + i + 3] = r >>> 24;
  }
  if (i < n) {
    let r = word(key, w);
    for (; i < n; i++, r >>>= 8) dst[off + i] = r & 0xff;
  }
}

/** Uniform in [0, 1) from the i-th word of a key. */
export function uniform(key: number, i: number): number {
  return word(key, i) / 4294967296;
}

/**
 * Approximately standard normal (mean 0, variance 1) from words 4i..4i+3 of a key: the
 * Irwin–Hall sum of four uniforms, rescaled. Only additions and multiplications, which IEEE
 * arithmetic rounds identically everywhere, so generated files do not depend on a platform's
 * Math.log / Math.cos (Box–Muller would).
 */
export function gauss(key: number, i: number): number {
  const s = word(key, 4 * i) + word(key, 4 * i + 1) + word(key, 4 * i + 2) + word(key, 4 * i + 3);
  return (s / 4294967296 - 2) * 1.7320508075688772;
}

/** Integer in [0, n) from the i-th word of a key. */
export function below(key: number, i: number, n: number): number {
  return Math.floor(uniform(key, i) * n);
}
