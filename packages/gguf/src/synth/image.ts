// Deterministic test images for multimodal runs: the same options give the same bytes, so tests
// never download a picture. The pixels have structure a vision tower can tell apart — a smooth
// gradient between four corner colours, solid blocks, one checkered block — rather than noise.
// Encoders are pure JavaScript (fast-png over fflate, jpeg-js): no platform zlib whose output
// could differ between machines.

import { encode as encodePng } from 'fast-png';
import jpeg from 'jpeg-js';
import { below, streamKey, word } from './prng.js';

export type ImageFormat = 'png' | 'jpeg';

export interface TestImageOptions {
  /** Pixels, 1..8192. */
  readonly width: number;
  /** Pixels, 1..8192. */
  readonly height: number;
  /** Pattern seed; default 1. */
  readonly seed?: number;
}

export interface MakeTestImageOptions extends TestImageOptions {
  readonly format: ImageFormat;
}

/** JPEG quality (of 100): high, so the blocks keep their colours. */
const JPEG_QUALITY = 90;
const MAX_SIDE = 8192;

/** The format a file name asks for: .png, .jpg or .jpeg (any case); undefined otherwise. */
export function imageFormatFromPath(path: string): ImageFormat | undefined {
  const ext = /\.([^./\\]+)$/.exec(path)?.[1]?.toLowerCase();
  if (ext === 'png') return 'png';
  if (ext === 'jpg' || ext === 'jpeg') return 'jpeg';
  return undefined;
}

function check(o: TestImageOptions): number {
  for (const [k, v] of [['width', o.width], ['height', o.height]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > MAX_SIDE) throw new RangeError(`${k} must be an integer in 1..${MAX_SIDE}, got ${v}`);
  }
  const seed = o.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be an integer in 0..2^32-1, got ${seed}`);
  return seed;
}

/** A random colour: three bytes from words i..i+2 of a key. */
function colour(key: number, i: number): [number, number, number] {
  return [word(key, i) & 255, word(key, i + 1) & 255, word(key, i + 2) & 255];
}

/** The image's pixels: RGB, row-major, 3 bytes per pixel. */
export function testImagePixels(opts: TestImageOptions): Uint8Array {
  const seed = check(opts);
  const { width: w, height: h } = opts;
  const key = streamKey(seed, 'test-image');
  const px = new Uint8Array(w * h * 3);
  // Gradient: bilinear between the four corners' colours.
  const corners = [colour(key, 0), colour(key, 3), colour(key, 6), colour(key, 9)];
  for (let y = 0; y < h; y++) {
    const fy = h > 1 ? y / (h - 1) : 0;
    for (let x = 0; x < w; x++) {
      const fx = w > 1 ? x / (w - 1) : 0;
      for (let c = 0; c < 3; c++) {
        const top = corners[0]![c]! * (1 - fx) + corners[1]![c]! * fx;
        const bottom = corners[2]![c]! * (1 - fx) + corners[3]![c]! * fx;
        px[(y * w + x) * 3 + c] = Math.round(top * (1 - fy) + bottom * fy);
      }
    }
  }
  // 3..6 blocks of 10–50 % of each side; the first is a checkerboard of two colours.
  const nBlocks = 3 + below(key, 12, 4);
  for (let b = 0; b < nBlocks; b++) {
    const k = 16 + 16 * b;
    const bw = Math.max(1, Math.round(w * (0.1 + 0.4 * (word(key, k) / 4294967296))));
    const bh = Math.max(1, Math.round(h * (0.1 + 0.4 * (word(key, k + 1) / 4294967296))));
    const x0 = below(key, k + 2, w - bw + 1);
    const y0 = below(key, k + 3, h - bh + 1);
    const a = colour(key, k + 4);
    const z = colour(key, k + 7);
    const cell = Math.max(2, Math.round(Math.min(bw, bh) / 4));
    for (let y = y0; y < y0 + bh; y++) {
      for (let x = x0; x < x0 + bw; x++) {
        const fill = b === 0 && (Math.floor((x - x0) / cell) + Math.floor((y - y0) / cell)) % 2 === 1 ? z : a;
        px.set(fill, (y * w + x) * 3);
      }
    }
  }
  return px;
}

/** A deterministic test image encoded as PNG (8-bit RGB) or JPEG (baseline, quality 90). */
export function makeTestImage(opts: MakeTestImageOptions): Uint8Array {
  if (opts.format !== 'png' && opts.format !== 'jpeg') {
    throw new RangeError(`format must be 'png' or 'jpeg', got ${JSON.stringify(opts.format)}`);
  }
  const rgb = testImagePixels(opts);
  const { width, height } = opts;
  if (opts.format === 'png') return encodePng({ width, height, data: rgb, depth: 8, channels: 3 });
  // jpeg-js takes RGBA.
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
    rgba[j] = rgb[i]!;
    rgba[j + 1] = rgb[i + 1]!;
    rgba[j + 2] = rgb[i + 2]!;
    rgba[j + 3] = 255;
  }
  const out = jpeg.encode({ data: rgba, width, height }, JPEG_QUALITY).data;
  return new Uint8Array(out); // a plain copy, not a Buffer
}
