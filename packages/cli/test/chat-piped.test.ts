// `bmoe chat` with its input piped (`printf 'hi\n' | bmoe chat MODEL`): each line answered in turn,
// plain text on stdout (no colours, no status line, no escapes at all, even where colours are
// forced), commands work, the end of the input ends the chat with status 0.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, nativeBuild } from '@bmoe/engine';
import { parseGenerationLine } from '@bmoe/engine/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { runCli, type CliResult } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

/** Runs `bmoe chat ARGS` with `input` on its stdin (a pipe); killed after 60 s. */
// FORCE_COLOR and CI make picocolors want colours: stdout being a pipe must still win.
const chatPiped = (args: readonly string[], input: string): Promise<CliResult> => runCli(['chat', ...args], { input, timeoutMs: 60_000, env: { FORCE_COLOR: '1', CI: 'true' } });

/** A reply as plain output prints it: leading blanks dropped, one newline at the end. */
const printed = (text: string): string => `${text.replace(/^\s+/, '').replace(/\n$/, '')}\n`;

describe.runIf(nativeAvailable)('bmoe chat with piped input', () => {
  let dir: string;
  let model: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-piped-'));
    model = join(dir, 'tiny-gpt-oss.gguf');
    const made = await runCli(['make-model', '--preset', 'tiny-gpt-oss', '--out', model], { timeoutMs: 300_000 });
    if (made.code !== 0) throw new Error(`make-model failed: ${made.stderr}`);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("printf 'hi\\n' | bmoe chat MODEL -n 8: the reply session.chat gives, plain, and exit 0 at the end of the input", async () => {
    const m = await loadModel(model, { threads: 2 });
    const expected = await m
      .createSession()
      .chat('hi', { maxTokens: 8 })
      .result.finally(() => m.close());
    expect(expected.text.trim()).not.toBe('');

    const r = await chatPiped([model, '-n', '8', '-t', '2'], 'hi\n');
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\x1b');
    expect(r.stdout).toBe(printed(expected.text));
  });

  it('--no-think reaches the template (the reply session.chat gives with think off, not the one with it on)', async () => {
    const m = await loadModel(model, { threads: 2 });
    const [off, on] = await (async () => {
      try {
        return [(await m.createSession().chat('hi', { maxTokens: 8, think: false }).result).text, (await m.createSession().chat('hi', { maxTokens: 8 }).result).text];
      } finally {
        await m.close();
      }
    })();
    expect(off).not.toBe(on);
    const r = await chatPiped([model, '-n', '8', '-t', '2', '--no-think'], 'hi\n');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(printed(off));
  });

  it('answers line after line in one conversation; /stats, /reset and /exit work; nothing after /exit is read', async () => {
    const m = await loadModel(model, { threads: 2 });
    const s = m.createSession();
    const one = (await s.chat('hi', { maxTokens: 8 }).result).text;
    const two = (await s.chat('how are you', { maxTokens: 8 }).result).text;
    const fresh = (await m.createSession().chat('how are you', { maxTokens: 8 }).result).text;
    await m.close();

    const r = await chatPiped([model, '-n', '8', '-t', '2'], 'hi\n\nhow are you\n/stats\n/reset\nhow are you\n/exit\nnever sent\n');
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('\x1b');
    const out = r.stdout.split('\n');
    const stats = out.findIndex((l) => l.startsWith('generation:'));
    expect(stats).toBeGreaterThan(0);
    expect(out.slice(0, stats).join('\n') + '\n').toBe(printed(one) + printed(two));
    expect(parseGenerationLine(out[stats] ?? '')?.tokens).toBe(8);
    expect(out[stats + 1]).toMatch(/^context: \d+ prompt tokens, [1-9]\d* reused from the KV cache; \d+ of 4096 in use; stop: length$/);
    expect(out[stats + 2]).toBe('(conversation forgotten)');
    expect(out.slice(stats + 3).join('\n')).toBe(printed(fresh));
  });
});
