// Greedy identity with llama.cpp's own llama-completion (built from the same pinned source; both
// repack weights by default, and --no-repack = -nr) on the tiny fixture of every architecture
// (Q4_K experts: repacked on x86 and arm64): resident, streamed (no cache serial, the defaults —
// overlap and route-ahead auto — and a cache plus overlap and route-ahead), and with a top-k
// override on both sides.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findLlamaTool, runLlamaCompletion } from '../src/llama-tools.js';
import { lines, runCli } from './helpers.js';

const PROMPT = 'Once upon a time the mother looked at the birds';
const N = '40';
const llamaCompletion = findLlamaTool('llama-completion');

const ARCHS = [
  { preset: 'tiny-qwen3moe', arch: 'qwen3moe' },
  { preset: 'tiny-gpt-oss', arch: 'gpt-oss' },
  { preset: 'tiny-gemma4', arch: 'gemma4' },
];

async function bmoeText(model: string, extra: string[]): Promise<string | undefined> {
  const r = await runCli(['run', model, '-p', PROMPT, '-n', N, '-t', '2', '--json', ...extra], { timeoutMs: 300_000 });
  expect(r.stderr.includes('bmoe: error') ? r.stderr : '').toBe('');
  expect(r.code).toBe(0);
  return lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done')?.text;
}

describe.each(ARCHS)('$preset: bmoe equals llama-completion, both with their defaults (repacking on)', ({ preset, arch }) => {
  let dir: string;
  let model: string;
  let expected: string;
  let topK: number;

  beforeAll(async () => {
    expect(llamaCompletion, 'llama-completion is built with the native addon').toBeTruthy();
    dir = await mkdtemp(join(tmpdir(), `bmoe-identity-${preset}-`));
    model = join(dir, `${preset}.gguf`);
    const made = await runCli(['make-model', '--preset', preset, '--out', model], { timeoutMs: 300_000 });
    expect(made.code).toBe(0);
    const info = await runCli(['info', model, '--json']);
    topK = (JSON.parse(info.stdout) as { expertsUsed: number }).expertsUsed;
    expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: Number(N), threads: 2 });
    expect(expected.length).toBeGreaterThan(20);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('resident', async () => {
    expect(await bmoeText(model, [])).toBe(expected);
  });

  it('--no-repack (resident and streamed) equals llama-completion -nr', async () => {
    const plain = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: Number(N), threads: 2, repack: false });
    expect(await bmoeText(model, ['--no-repack'])).toBe(plain);
    expect(await bmoeText(model, ['--nr', '--moe-stream', '--cache-mb', '0'])).toBe(plain);
  });

  it('streamed, no cache, 4 lanes, serial, no route-ahead', async () => {
    expect(await bmoeText(model, ['--moe-stream', '--cache-mb', '0', '--io-threads', '4', '--no-overlap', '--no-route-ahead'])).toBe(expected);
  });

  it('streamed with the defaults (overlap auto, route-ahead auto), no cache', async () => {
    expect(await bmoeText(model, ['--moe-stream', '--cache-mb', '0'])).toBe(expected);
  });

  it('streamed with a cache, overlap, route-ahead and prefetch', async () => {
    expect(await bmoeText(model, ['--moe-stream', '--cache-mb', '8', '--force-cache', '--overlap', '--route-ahead', '--prefetch', '2'])).toBe(expected);
  });

  it('--n-expert-used K−1 streamed equals llama-completion with the same override, and changes the text', async () => {
    const k = String(topK - 1);
    const overridden = await runLlamaCompletion({
      model,
      prompt: PROMPT,
      nPredict: Number(N),
      threads: 2,
      extraArgs: ['--override-kv', `${arch}.expert_used_count=int:${k}`],
    });
    expect(overridden).not.toBe(expected);
    expect(await bmoeText(model, ['--n-expert-used', k, '--moe-stream', '--cache-mb', '0'])).toBe(overridden);
  });
});
