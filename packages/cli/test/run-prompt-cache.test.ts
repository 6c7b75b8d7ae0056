// `bmoe run MODEL -p PROMPT --prompt-cache FILE`, as llama-completion's --prompt-cache: the first
// run saves the prompt's and the generated tokens' KV state to FILE; the next one loads it and
// evaluates only what the prompt does not share with it — the same text (greedy), fewer prompt
// tokens evaluated. A FILE of another model is one error line naming it, exit 1, FILE untouched.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeBuild } from '@bmoe/engine';
import { parseGenerationLine } from '@bmoe/engine/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { lines, runCli } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const PROMPT = 'The quick brown fox jumps over the lazy dog and';
const ARGS = ['-n', '16', '-t', '2'];
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The `bmoe: prompt cache: R of P prompt tokens reused; saved FILE (N tokens, X MiB)` line: R, P, N. */
function cacheLine(stderr: string, file: string): { reused: number; prompt: number; saved: number } | null {
  const m = new RegExp(`^bmoe: prompt cache: (\\d+) of (\\d+) prompt tokens reused; saved ${esc(file)} \\((\\d+) tokens?, \\d+\\.\\d\\d MiB\\)$`, 'm').exec(stderr);
  return m ? { reused: Number(m[1]), prompt: Number(m[2]), saved: Number(m[3]) } : null;
}

describe.runIf(nativeAvailable)('bmoe run --prompt-cache', () => {
  let dir: string;
  let model: string;
  let other: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-prompt-cache-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    other = join(dir, 'tiny-qwen3moe-seed2.gguf');
    for (const [out, seed] of [[model, '1'], [other, '2']] as const) {
      const made = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--seed', seed, '--out', out], { timeoutMs: 300_000 });
      if (made.code !== 0) throw new Error(`make-model failed: ${made.stderr}`);
    }
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the second run with the same prompt reuses the saved prompt and prints the same text', async () => {
    const file = join(dir, 'same.cache');
    const plain = await runCli(['run', model, '-p', PROMPT, ...ARGS]);
    expect(plain.code).toBe(0);

    const first = await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', file]);
    expect(first.stderr).not.toMatch(/error/);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(plain.stdout);
    expect(first.stderr).toContain(`bmoe: prompt cache: ${file} not there yet, saved after the run\n`);
    const one = cacheLine(first.stderr, file);
    expect(one).not.toBeNull();
    expect(one!.reused).toBe(0);
    const gen1 = lines(first.stderr).map(parseGenerationLine).find((g) => g !== null)!;
    // The prompt is saved, not the generated tokens: decoded one at a time, their KV entries are
    // not what a prompt holding them computes (batch-invariant prompts), so none is ever reused.
    expect(gen1.tokens).toBeGreaterThan(1);
    expect(one!.saved).toBe(one!.prompt);
    expect((await stat(file)).size).toBeGreaterThan(0);

    const second = await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', file]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(first.stdout);
    expect(second.stderr).toContain(`bmoe: prompt cache: loaded ${file} (${one!.saved} tokens)\n`);
    const two = cacheLine(second.stderr, file);
    expect(two).not.toBeNull();
    expect(two!.prompt).toBe(one!.prompt);
    // All of the prompt but its last two tokens comes from the file: they are evaluated again, for
    // the logits, as a batch of several tokens (the batch-invariant kernels a cold prompt takes).
    expect(two!.reused).toBe(one!.prompt - 2);
    const gen2 = lines(second.stderr).map(parseGenerationLine).find((g) => g !== null)!;
    expect(gen2.promptTokens).toBe(2);
    expect(gen1.promptTokens).toBe(one!.prompt);

    // --json: the done event says the same (promptTokensReused, and the text).
    const json = await runCli(['run', model, '-p', PROMPT, ...ARGS, '--json', '--prompt-cache', file]);
    expect(json.code).toBe(0);
    const done = JSON.parse(lines(json.stdout).at(-1)!) as { type: string; promptTokensReused: number; text: string };
    expect(done.type).toBe('done');
    expect(done.promptTokensReused).toBe(one!.prompt - 2);
    expect(done.text.trim()).toBe(first.stdout.trim());
  });

  it('a longer prompt reuses the prefix it shares with the saved one', async () => {
    const file = join(dir, 'prefix.cache');
    const first = await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', file]);
    expect(first.code).toBe(0);
    const one = cacheLine(first.stderr, file)!;
    const longer = `${PROMPT} then sleeps`;
    const plain = await runCli(['run', model, '-p', longer, ...ARGS]);
    const second = await runCli(['run', model, '-p', longer, ...ARGS, '--prompt-cache', file]);
    expect(second.code).toBe(0);
    expect(second.stdout).toBe(plain.stdout);
    const two = cacheLine(second.stderr, file)!;
    expect(two.prompt).toBeGreaterThan(one.prompt);
    expect(two.reused).toBeGreaterThanOrEqual(one.prompt - 1);
    expect(two.reused).toBeLessThan(two.prompt);
  });

  it("another model's cache file: one error line naming it, exit 1, nothing generated, the file untouched", async () => {
    const file = join(dir, 'foreign.cache');
    expect((await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', file])).code).toBe(0);
    const before = await readFile(file);
    const r = await runCli(['run', other, '-p', PROMPT, ...ARGS, '--prompt-cache', file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const errors = lines(r.stderr).filter((l) => /error/i.test(l));
    expect(errors).toEqual([`bmoe: error: ${file}: the state was saved with another model (tiny-qwen3moe.gguf), not tiny-qwen3moe-seed2.gguf`]);
    expect(r.stderr).not.toMatch(/^generation:/m);
    expect((await readFile(file)).equals(before)).toBe(true);
  });

  it('another context size is refused the same way; a cache that cannot be created is refused before loading', async () => {
    const file = join(dir, 'ctx.cache');
    expect((await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', file])).code).toBe(0);
    const r = await runCli(['run', model, '-p', PROMPT, ...ARGS, '-c', '512', '--prompt-cache', file]);
    expect(r.code).toBe(1);
    expect(lines(r.stderr).at(-1)).toBe(`bmoe: error: ${file}: the state was saved with contextSize 4096; this session has 512`);

    const missing = join(dir, 'no-such-dir', 'x.cache');
    const m = await runCli(['run', model, '-p', PROMPT, ...ARGS, '--prompt-cache', missing]);
    expect(m.code).toBe(1);
    expect(m.stdout).toBe('');
    expect(lines(m.stderr).at(-1)).toBe(`bmoe: error: ${missing}: cannot write the prompt cache there (no directory ${join(dir, 'no-such-dir')})`);
  });
});
