// Embeddings (Model.embed): pooled and normalized as llama.cpp's own llama-embedding gives them,
// built from the same pinned source, resident and streamed alike; bad inputs are refused in one
// line. Skipped while the addon is not built (a failure under CI).
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { llamaToolPath } from '@bmoe/core-native';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild, type Model, type Pooling } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const run = promisify(execFile);

let dir: string;
let path: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-embed-'));
  path = join(dir, 'tiny-qwen3moe.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: path });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * llama-embedding's vector of each text, one run per text (given several, it decodes them in one
 * batch, whose kernels round differently from one input's). Its logger writes stdout from a thread
 * of its own, entry by entry (each number, each comma), and may drop the tail at exit (most runs
 * on a loaded machine), and once in a CI run it printed 257 numbers for 256 dimensions: it is run
 * again until a whole vector of the model's `dims` is there.
 */
async function reference(texts: string[], pooling: Pooling, dims: number): Promise<number[][]> {
  const out: number[][] = [];
  for (const text of texts) out.push(await referenceOne(text, pooling, dims));
  return out;
}

async function referenceOne(text: string, pooling: Pooling, dims: number): Promise<number[]> {
  const bin = llamaToolPath('llama-embedding');
  expect(bin, 'llama-embedding is built beside llama-completion').toBeDefined();
  const args = ['-m', path, '-p', text, '--pooling', pooling, '--embd-normalize', '2', '--embd-output-format', 'json', '-t', '2', '-c', '512', '-b', '512', '-ub', '512'];
  for (let attempt = 0; attempt < 40; attempt++) {
    const { stdout } = await run(bin!, args, { maxBuffer: 64 << 20 });
    // Only the vector is needed: its closing bracket says it is whole, whatever was cut after it.
    const m = /"embedding":\s*\[([^\]]*)\]/.exec(stdout);
    const v = m ? m[1]!.split(',').map(Number) : [];
    if (v.length === dims && v.every(Number.isFinite)) return v;
  }
  throw new Error(`llama-embedding never printed a whole vector of ${dims} numbers`);
}

function maxDiff(a: Float32Array, b: number[]): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < b.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

describe.runIf(nativeAvailable)('Model.embed (native, tiny-qwen3moe)', () => {
  let resident: Model;
  beforeAll(async () => {
    resident = await loadModel(path, { threads: 2, contextSize: 512 });
  });
  afterAll(async () => resident?.close());

  const TEXTS = ['The weather in Paris is fine', 'Once upon a time there was a sea', 'hello'];

  it.each(['mean', 'last', 'cls'] as const)("pooling '%s' equals llama-embedding's vectors (normalized)", async (pooling) => {
    const ours = await resident.embed(TEXTS, { pooling });
    const ref = await reference(TEXTS, pooling, ours.embeddings[0]!.length);
    expect(ours.embeddings).toHaveLength(TEXTS.length);
    ours.embeddings.forEach((v, i) => {
      // llama-embedding prints 7 decimals.
      expect(maxDiff(v, ref[i]!)).toBeLessThan(1e-6);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    });
    expect(ours.promptTokens).toBe(TEXTS.reduce((n, t) => n + resident.countTokens(t), 0));
  });

  it('token arrays embed as their text does; each input alone as in a batch', async () => {
    const one = await resident.embed(TEXTS[0]!, { pooling: 'mean' });
    const asTokens = await resident.embed([resident.tokenize(TEXTS[0]!)], { pooling: 'mean' });
    const batch = await resident.embed(TEXTS, { pooling: 'mean' });
    expect(asTokens.embeddings[0]).toEqual(one.embeddings[0]);
    expect(batch.embeddings[0]).toEqual(one.embeddings[0]);
  });

  it('streamed experts (cache 0) give the same vectors', async () => {
    const streamed = await loadModel(path, { threads: 2, contextSize: 512, stream: { moeStream: true, cacheMb: 0 } });
    try {
      const a = await resident.embed(TEXTS, { pooling: 'mean' });
      const b = await streamed.embed(TEXTS, { pooling: 'mean' });
      expect(b.embeddings).toEqual(a.embeddings);
    } finally {
      await streamed.close();
    }
  });

  it('refuses in one line: the model has no pooling of its own, an empty or too long input, a bad token id, a bad pooling', async () => {
    const refused = async (p: Promise<unknown>, code: string, re: RegExp): Promise<void> => {
      const err = (await p.then(() => null, (e: unknown) => e)) as { code?: string; message: string } | null;
      expect(err?.code).toBe(code);
      expect(err?.message).toMatch(re);
      expect(err?.message).not.toContain('\n');
    };
    await refused(resident.embed('hi'), 'E_OPTION', /pooling: the model's own pooling is none.*mean, cls or last/);
    await refused(resident.embed([], { pooling: 'mean' }), 'E_OPTION', /non-empty array/);
    await refused(resident.embed([[]], { pooling: 'mean' }), 'E_OPTION', /input\[0\] is empty/);
    await refused(resident.embed(['a '.repeat(600)], { pooling: 'mean' }), 'E_OPTION', /has \d+ tokens; an embedding takes at most 512/);
    await refused(resident.embed([[1, 2, 1e9]], { pooling: 'mean' }), 'E_OPTION', /input\[0\]\[2\] must be a token id/);
    await refused(resident.embed('hi', { pooling: 'max' as Pooling }), 'E_OPTION', /pooling must be/);
    // The model goes on.
    expect((await resident.embed('hi', { pooling: 'mean' })).embeddings).toHaveLength(1);
  });
});
