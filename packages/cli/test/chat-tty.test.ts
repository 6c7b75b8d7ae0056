// `bmoe chat` as a person uses it: the built CLI in a real pseudo-terminal (tmux), messages typed
// with Enter, Ctrl-C and Ctrl-D sent as keys, the screen read back. The replies must be the ones
// the engine's session.chat() gives for the same conversation (greedy), turn after turn.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, nativeBuild } from '@bmoe/engine';
import { parseGenerationLine } from '@bmoe/engine/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { asShown, atPrompt, replyAfter, replyStarted, TmuxChat } from './chat-tmux.js';
import { runCli } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const FIRST = 'Tell me about the river';
const SECOND = 'And the birds?';
const N = 16;

/** The numbers /stats printed after its `n`-th use: the generation: line and the context line. */
function stats(screen: string, n: number): { tokens: number; reused: number; stop: string } | undefined {
  const block = replyAfter(screen, '/stats', n);
  if (block === undefined) return undefined;
  const gen = block.split('\n').map(parseGenerationLine).find((g) => g !== null);
  const ctx = /context: \d+ prompt tokens, (\d+) reused from the KV cache; .* stop: (\w+)/.exec(block);
  if (!gen || !ctx) throw new Error(`/stats printed no generation: or context: line:\n${block}`);
  return { tokens: gen.tokens, reused: Number(ctx[1]), stop: ctx[2] ?? '' };
}

describe.runIf(nativeAvailable)('bmoe chat in a terminal (tmux)', () => {
  let dir: string;
  let model: string;
  const chats: TmuxChat[] = [];
  /** session.chat() through the engine: the first turn, the second turn after it, the second message alone. */
  const expected = { first: '', second: '', secondAlone: '' };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-tty-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    const made = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', model], { timeoutMs: 300_000 });
    if (made.code !== 0) throw new Error(`make-model failed: ${made.stderr}`);
    const m = await loadModel(model, { threads: 2 });
    try {
      const s = m.createSession();
      expected.first = (await s.chat(FIRST, { maxTokens: N }).result).text;
      expected.second = (await s.chat(SECOND, { maxTokens: N }).result).text;
      expected.secondAlone = (await m.createSession().chat(SECOND, { maxTokens: N }).result).text;
    } finally {
      await m.close();
    }
  });

  afterAll(async () => {
    await Promise.all(chats.map((c) => c.kill()));
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function start(args: string[]): Promise<TmuxChat> {
    const chat = await TmuxChat.start(['chat', model, '-t', '2', ...args]);
    chats.push(chat);
    await chat.waitFor('the first prompt (>>>)', atPrompt);
    return chat;
  }

  it('answers as session.chat does, keeps the conversation (KV prefix reused), /stats, /reset, Ctrl-D exits 0', async () => {
    for (const text of Object.values(expected)) expect(text.trim(), 'the fixture answers with text').not.toBe('');
    const chat = await start(['-n', String(N)]);
    await chat.line(FIRST);
    expect(await chat.waitFor('the first reply and the next prompt', (s) => replyAfter(s, FIRST))).toBe(asShown(expected.first));

    await chat.line(SECOND);
    const second = await chat.waitFor('the second reply and the next prompt', (s) => replyAfter(s, SECOND));
    expect(second).toBe(asShown(expected.second));
    // The conversation reached the model: alone, the same message gets another reply.
    expect(second).not.toBe(asShown(expected.secondAlone));

    await chat.line('/stats');
    const s = await chat.waitFor('the /stats lines', (screen) => stats(screen, 0));
    expect(s.tokens).toBe(N);
    expect(s.reused).toBeGreaterThan(0);
    expect(s.stop).toBe('length');

    await chat.line('/reset');
    await chat.waitFor('/reset to answer', (screen) => screen.includes('(conversation forgotten)') && atPrompt(screen));
    await chat.line(SECOND);
    expect(await chat.waitFor('the reply after /reset', (screen) => replyAfter(screen, SECOND, 1))).toBe(asShown(expected.secondAlone));

    await chat.keys('C-d');
    expect(await chat.waitForExit()).toBe(0);
  });

  it('Ctrl-C stops a long reply (and drops what was typed meanwhile) and the chat goes on; Ctrl-C twice at the prompt leaves with status 0', async () => {
    const cap = 16000;
    const chat = await start(['-n', String(cap), '-c', '16384']);
    await chat.line(FIRST);
    await chat.waitFor('the long reply to start streaming', (s) => replyStarted(s, FIRST));
    await chat.keys('C-c');
    await chat.waitFor('[stopped] and the prompt after Ctrl-C', (s) => replyAfter(s, FIRST) !== undefined && s.includes('\n[stopped]\n'));

    await chat.line('/stats');
    const first = await chat.waitFor('/stats after the stopped reply', (s) => stats(s, 0));
    expect(first.stop).toBe('abort');
    expect(first.tokens).toBeGreaterThan(0);
    expect(first.tokens).toBeLessThan(cap);

    // The session goes on: the next message gets a reply that continues the conversation.
    await chat.line(SECOND);
    await chat.waitFor('the next reply to start streaming', (s) => replyStarted(s, SECOND));
    // Keys typed while a reply streams neither show in it nor survive a Ctrl-C.
    await chat.keys('-l', 'typed ahead');
    await chat.keys('C-c');
    await chat.waitFor('an empty prompt after the second Ctrl-C', (s) => replyAfter(s, SECOND) !== undefined && atPrompt(s));
    expect(await chat.screen()).not.toContain('typed ahead');
    await chat.line('/stats');
    const second = await chat.waitFor('/stats after the second reply', (s) => stats(s, 1));
    expect(second.stop).toBe('abort');
    expect(second.reused).toBeGreaterThan(0);

    await chat.keys('C-c');
    await chat.waitFor('the hint after one Ctrl-C at the prompt', (s) => s.includes('(Ctrl-C again, Ctrl-D or /exit to leave)') && atPrompt(s));
    expect(await chat.exitStatus()).toBeNull();
    await chat.keys('C-c');
    expect(await chat.waitForExit()).toBe(0);
  });
});
