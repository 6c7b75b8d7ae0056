// `--repack` (ggml's repacked CPU layouts, llama.cpp's own default) must run on every CPU this
// build meets: a native build never enables AMX kernels, because a VM can report AMX that it does
// not grant (a general protection fault in ggml_backend_amx_mul_mat otherwise). bmoe --repack
// equals llama-completion with repacking on, on the same file, in the same build.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLlamaTool, runLlamaCompletion } from '../src/llama-tools.js';
import { greedyLogits, lines, runCli } from './helpers.js';

const PROMPT = 'The quick brown fox';

describe('--repack', () => {
  let dir: string;
  let model: string;
  let gptOss: string; // MXFP4 experts (ggml's mxfp4 8x8 layout)

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-repack-'));
    // Q4_K experts: ggml repacks them (Q4_K -> q4_K_8x8) where the CPU has the kernels.
    model = join(dir, 'tiny-qwen3moe.gguf');
    const r = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', model], { timeoutMs: 300_000 });
    if (r.code !== 0) throw new Error(`make-model failed: ${r.stderr}`);
    gptOss = join(dir, 'tiny-gpt-oss.gguf');
    const g = await runCli(['make-model', '--preset', 'tiny-gpt-oss', '--out', gptOss], { timeoutMs: 300_000 });
    if (g.code !== 0) throw new Error(`make-model failed: ${g.stderr}`);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the native build carries no AMX kernels', () => {
    const completion = findLlamaTool('llama-completion');
    expect(completion).not.toBeNull();
    const symbols = execFileSync('nm', ['-C', completion!], { encoding: 'utf8', maxBuffer: 256 << 20 });
    expect(symbols).not.toMatch(/ggml_backend_amx_buffer_type/);
  });

  it('bmoe run --repack equals llama-completion with repacking on (its default)', async () => {
    const expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: 32, threads: 2, repack: true });
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '32', '-t', '2', '--json', '--repack']);
    expect({ code: r.code, signal: r.signal }).toEqual({ code: 0, signal: null });
    const done = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done');
    expect(expected.length).toBeGreaterThan(0);
    expect(done?.text).toBe(expected);
  });

  it.each(['tiny-qwen3moe', 'tiny-gpt-oss'])('%s streamed with --repack: tokens and logits identical to the resident repacked run, at every cache size and mode', async (preset) => {
    const file = preset === 'tiny-gpt-oss' ? gptOss : model;
    const resident = await greedyLogits(file, { repack: true }, PROMPT, 24);
    const plain = await greedyLogits(file, { repack: false }, PROMPT, 24);
    // The repacked kernels round differently from the plain ones: were the experts not really
    // computed repacked, the streamed logits below would equal `plain` instead.
    expect(plain.logits.some((l, i) => !l.equals(resident.logits[i]!))).toBe(true);
    const configs = [
      { cacheMb: 0 },
      { cacheMb: 1, forceCache: true },
      { cacheMb: 64 },
      { cacheMb: 0, overlap: true, routeAhead: true },
      { cacheMb: 0, overlap: false, routeAhead: false },
    ] as const;
    for (const stream of configs) {
      const s = await greedyLogits(file, { repack: true, stream: { moeStream: true, ...stream } }, PROMPT, 24);
      expect(s.tokens, JSON.stringify(stream)).toEqual(resident.tokens);
      expect(s.logits.every((l, i) => l.equals(resident.logits[i]!)), JSON.stringify(stream)).toBe(true);
    }
  });

  it('bmoe run --moe-stream --repack prints the same text as llama-completion with repacking on', async () => {
    const expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: 32, threads: 2, repack: true });
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '32', '-t', '2', '--json', '--repack', '--moe-stream', '--cache-mb', '0']);
    expect({ code: r.code, signal: r.signal, stderr: r.code === 0 ? '' : r.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    const done = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done');
    expect(done?.text).toBe(expected);
  });
});
