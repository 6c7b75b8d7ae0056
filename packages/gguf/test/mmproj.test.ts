// Synthetic projectors (mmproj) and test images. Without the native build: the files parse with
// the package's reader with the converter's keys and types, and are deterministic. With it:
// llama.cpp's llama-mtmd-cli loads text model + projector, encodes a generated PNG and a JPEG of
// other sizes into the expected number of image tokens, dumps the image embeddings
// (MTMD_DEBUG_EMBEDDINGS: finite, RMS ≈ the token embeddings', different per image) and
// generates text. Skipped when the binary is absent (a failure under CI, tooling/test-utils.mjs);
// LLAMA_MTMD_CLI overrides the path.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { decode as decodePng } from 'fast-png';
import jpeg from 'jpeg-js';
import { afterAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import {
  GgmlType,
  imageFormatFromPath,
  kvArray,
  kvNumber,
  kvString,
  makeModel,
  makeProjector,
  makeTestImage,
  planProjector,
  presetsWithProjector,
  readGguf,
  testImagePixels,
  type GgufFile,
  type ImageFormat,
  type ProjectorKind,
} from '../src/index.js';
import { tempDir } from './helpers.js';

const run = promisify(execFile);
const BIN = process.env.LLAMA_MTMD_CLI ?? fileURLToPath(new URL('../../core-native/build/bin/llama-mtmd-cli', import.meta.url));
const built = await requireNative(`llama.cpp's llama-mtmd-cli (${BIN})`, () => existsSync(BIN));
const tmp = tempDir('bmoe-mmproj-');
afterAll(() => tmp.cleanup());

const KINDS = [
  { kind: 'qwen3vl', preset: 'mini-qwen35moe', type: 'qwen3vl_merger', typeKey: 'clip.projector_type', align: 32, minTokens: 8, maxTokens: 4096 },
  { kind: 'gemma4', preset: 'tiny-gemma4', type: 'gemma4v', typeKey: 'clip.vision.projector_type', align: 48, minTokens: 70, maxTokens: 1120 },
] as const satisfies ReadonlyArray<{ kind: ProjectorKind; preset: string; type: string; typeKey: string; align: number; minTokens: number; maxTokens: number }>;
const SEEDS = [1, 7];
/** Two images of different sizes and formats. */
const IMAGES: ReadonlyArray<{ width: number; height: number; format: ImageFormat }> = [
  { width: 160, height: 96, format: 'png' },
  { width: 96, height: 288, format: 'jpeg' },
];

/**
 * The image tokens llama.cpp makes of a w × h image (mtmd-image.cpp, calc_size_preserved_ratio
 * for the dyn_size preprocessor): each side rounded to the merged patch size, scaled up to the
 * minimum token count or down to the maximum.
 */
function expectedTokens(k: (typeof KINDS)[number], w: number, h: number): number {
  const a = k.align;
  let wb = Math.max(a, Math.round(w / a) * a);
  let hb = Math.max(a, Math.round(h / a) * a);
  if (wb * hb > k.maxTokens * a * a) {
    const beta = Math.sqrt((w * h) / (k.maxTokens * a * a));
    wb = Math.max(a, Math.floor(w / beta / a) * a);
    hb = Math.max(a, Math.floor(h / beta / a) * a);
  } else if (wb * hb < k.minTokens * a * a) {
    const beta = Math.sqrt((k.minTokens * a * a) / (w * h));
    wb = Math.ceil((w * beta) / a) * a;
    hb = Math.ceil((h * beta) / a) * a;
  }
  return (wb / a) * (hb / a);
}

function tensorType(f: GgufFile, name: string): GgmlType | undefined {
  return f.tensors.find((t) => t.name === name)?.type;
}

describe('makeProjector', () => {
  for (const k of KINDS) {
    for (const seed of SEEDS) {
      it(`${k.kind}, seed ${seed}: the converter's keys and types, deterministic bytes`, async () => {
        const out = join(tmp.dir, `${k.kind}-${seed}.mmproj.gguf`);
        const made = await makeProjector({ preset: k.preset, seed, out });
        const f = await readGguf(out);
        expect(made.bytes).toBe(f.fileSize);
        expect(kvString(f.kv, 'general.architecture')).toBe('clip');
        expect(kvString(f.kv, 'general.type')).toBe('mmproj');
        expect(kvString(f.kv, k.typeKey)).toBe(k.type);
        expect(f.kv.get('clip.has_vision_encoder')?.value).toBe(true);
        expect(kvNumber(f.kv, 'clip.vision.projection_dim')).toBe(256); // the text preset's n_embd
        expect(kvNumber(f.kv, 'clip.vision.patch_size')).toBe(16);
        for (const key of ['image_size', 'embedding_length', 'feed_forward_length', 'block_count', 'attention.head_count']) {
          expect(kvNumber(f.kv, `clip.vision.${key}`), key).toBeGreaterThan(0);
        }
        expect(kvArray(f.kv, 'clip.vision.image_mean')).toHaveLength(3);
        expect(kvArray(f.kv, 'clip.vision.image_std')).toHaveLength(3);
        expect(kvNumber(f.kv, 'bmoe.synthetic.seed')).toBe(seed);
        // F16 weights, F32 norms and position embeddings, as an F16 mmproj has them.
        expect(tensorType(f, 'v.patch_embd.weight')).toBe(GgmlType.F16);
        expect(tensorType(f, 'v.position_embd.weight')).toBe(GgmlType.F32);
        expect(tensorType(f, 'v.blk.1.ln2.weight')).toBe(GgmlType.F32);
        if (k.kind === 'qwen3vl') {
          expect(tensorType(f, 'v.blk.0.attn_qkv.weight')).toBe(GgmlType.F16);
          expect(f.tensors.find((t) => t.name === 'mm.2.weight')?.dims).toEqual([256, 256]);
          expect(f.tensors.some((t) => t.name.startsWith('v.deepstack.'))).toBe(false);
        } else {
          expect(tensorType(f, 'v.blk.0.attn_q_norm.weight')).toBe(GgmlType.F32);
          expect(f.tensors.find((t) => t.name === 'mm.input_projection.weight')?.dims).toEqual([64, 256]);
        }
        // The plan is the file's layout; the same options write the same bytes.
        expect(planProjector({ preset: k.preset, seed }).layout.fileSize).toBe(f.fileSize);
        const again = await makeProjector({ preset: k.preset, seed, out: join(tmp.dir, `${k.kind}-${seed}-again.mmproj.gguf`) });
        expect(again.sha256).toBe(made.sha256);
      });
    }
  }

  it('different seeds write different weights', async () => {
    const a = await makeProjector({ preset: 'mini-qwen35moe', seed: 1, out: join(tmp.dir, 's1.gguf') });
    const b = await makeProjector({ preset: 'mini-qwen35moe', seed: 2, out: join(tmp.dir, 's2.gguf') });
    expect(a.bytes).toBe(b.bytes);
    expect(a.sha256).not.toBe(b.sha256);
  });

  it('refuses a preset without a projector, naming those with one, and a kind of another family', () => {
    expect(presetsWithProjector()).toEqual(expect.arrayContaining(['mini-qwen35moe', 'tiny-gemma4']));
    expect(presetsWithProjector()).not.toContain('tiny-qwen3moe');
    expect(() => planProjector({ preset: 'tiny-qwen3moe' })).toThrow(/tiny-qwen3moe .*no projector; presets with one: .*mini-qwen35moe/);
    expect(() => planProjector({ preset: 'tiny-gemma4', kind: 'qwen3vl' })).toThrow(/does not fit preset tiny-gemma4/);
    expect(() => planProjector({ preset: 'mini-qwen35moe', seed: -1 })).toThrow(/seed/);
  });
});

describe('makeTestImage', () => {
  it('PNG holds exactly the generated pixels; the same options give the same bytes', () => {
    const opts = { width: 37, height: 23, seed: 5 };
    const png = makeTestImage({ ...opts, format: 'png' });
    expect(makeTestImage({ ...opts, format: 'png' })).toEqual(png);
    const decoded = decodePng(png);
    expect([decoded.width, decoded.height, decoded.channels, decoded.depth]).toEqual([37, 23, 3, 8]);
    expect(Uint8Array.from(decoded.data)).toEqual(testImagePixels(opts));
    expect(makeTestImage({ ...opts, seed: 6, format: 'png' })).not.toEqual(png);
  });

  it('JPEG decodes to nearly the generated pixels', () => {
    const opts = { width: 64, height: 48, seed: 3 };
    const jpg = makeTestImage({ ...opts, format: 'jpeg' });
    expect([jpg[0], jpg[1]]).toEqual([0xff, 0xd8]);
    expect(makeTestImage({ ...opts, format: 'jpeg' })).toEqual(jpg);
    const d = jpeg.decode(jpg, { useTArray: true });
    const rgb = testImagePixels(opts);
    let err = 0;
    for (let p = 0; p < 64 * 48; p++) for (let c = 0; c < 3; c++) err += Math.abs(d.data[p * 4 + c]! - rgb[p * 3 + c]!);
    expect(err / rgb.length).toBeLessThan(6);
  });

  it('has structure, not noise: neighbouring pixels are mostly alike', () => {
    const rgb = testImagePixels({ width: 100, height: 80, seed: 9 });
    let near = 0;
    for (let p = 0; p + 1 < 100 * 80; p++) if (Math.abs(rgb[p * 3]! - rgb[p * 3 + 3]!) <= 8) near++;
    expect(near / (100 * 80)).toBeGreaterThan(0.8);
    expect(new Set(rgb).size).toBeGreaterThan(30);
  });

  it('checks sizes and formats; tells the format from the extension', () => {
    expect(() => testImagePixels({ width: 0, height: 4 })).toThrow(/width/);
    expect(() => testImagePixels({ width: 4, height: 8193 })).toThrow(/height/);
    expect(() => makeTestImage({ width: 4, height: 4, format: 'gif' as ImageFormat })).toThrow(/format/);
    expect(['a.png', 'b.JPG', 'c.jpeg', 'd.gif', 'png'].map(imageFormatFromPath)).toEqual(['png', 'jpeg', 'jpeg', undefined, undefined]);
  });
});

/** The image embeddings mtmd dumped: [int32 n_tokens][int32 n_embd][f32 data]. */
async function readEmbeddings(path: string): Promise<{ nTokens: number; nEmbd: number; data: Float32Array }> {
  const b = await readFile(path);
  const nTokens = b.readInt32LE(0);
  const nEmbd = b.readInt32LE(4);
  expect(b.length).toBe(8 + 4 * nTokens * nEmbd);
  return { nTokens, nEmbd, data: new Float32Array(b.buffer.slice(b.byteOffset + 8, b.byteOffset + b.length)) };
}

describe.runIf(built)('llama-mtmd-cli runs the synthetic projectors', () => {
  for (const k of KINDS) {
    for (const seed of SEEDS) {
      it(`${k.preset} + ${k.kind} projector, seed ${seed}: encodes a PNG and a JPEG and generates`, async () => {
        const model = join(tmp.dir, `${k.preset}-${seed}.gguf`);
        const mmproj = join(tmp.dir, `${k.preset}-${seed}.mmproj.gguf`);
        await makeModel({ preset: k.preset, seed, out: model });
        await makeProjector({ preset: k.preset, seed, out: mmproj });
        const firstTokens: Float32Array[] = [];
        for (const [i, img] of IMAGES.entries()) {
          const path = join(tmp.dir, `${k.kind}-${seed}-${i}.${img.format === 'png' ? 'png' : 'jpg'}`);
          await writeFile(path, makeTestImage({ ...img, seed: seed + i }));
          const dump = `${path}.embd`;
          // --jinja: the synthetic gemma4 template is not one llama.cpp's built-in formatter knows;
          // -lv 4 shows mtmd's info lines (the image batch size).
          // Its async logger may drop the tail of the answer at exit: run again until the closing blank line is there.
          let stdout = '';
          let stderr = '';
          for (let attempt = 0; attempt < 8 && !stdout.endsWith('\n\n'); attempt++) {
            ({ stdout, stderr } = await run(
              BIN,
              ['-m', model, '--mmproj', mmproj, '--image', path, '-p', 'Describe the image.', '-n', '8', '--temp', '0', '-t', '2', '--jinja', '--no-warmup', '-lv', '4'],
              { timeout: 120_000, maxBuffer: 16 << 20, env: { ...process.env, MTMD_DEBUG_EMBEDDINGS: dump } },
            ));
          }
          const n = expectedTokens(k, img.width, img.height);
          expect(stderr).toMatch(new RegExp(`decoding image batch 1/1, n_tokens_batch = ${n}\\b`));
          const e = await readEmbeddings(dump);
          expect([e.nTokens, e.nEmbd]).toEqual([n, 256]);
          expect(e.data.every(Number.isFinite)).toBe(true);
          const rms = Math.sqrt(e.data.reduce((s, x) => s + x * x, 0) / e.data.length);
          expect(rms).toBeGreaterThan(0.5);
          expect(rms).toBeLessThan(2);
          firstTokens.push(e.data.slice(0, 256));
          // Text, not a degenerate NaN-logits repeat.
          const words = stdout.split(/\s+/).filter(Boolean);
          expect(words.length).toBeGreaterThanOrEqual(6);
          expect(new Set(words).size).toBeGreaterThanOrEqual(4);
        }
        // The embeddings depend on the image.
        const [a, b] = firstTokens as [Float32Array, Float32Array];
        const diff = Math.sqrt(a.reduce((s, x, i) => s + (x - b[i]!) ** 2, 0) / a.length);
        expect(diff).toBeGreaterThan(0.1);
      });
    }
  }
});
