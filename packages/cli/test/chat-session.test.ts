// `bmoe chat MODEL --session FILE` with piped input: the conversation saved to FILE on leaving,
// resumed from it the next time (its history, its system message and its KV cache: the next turn
// answers as the same conversation would, reusing what the file holds), `/save [PATH]` at any
// time; a file that cannot be resumed (another model's, damaged, cut short) is one error line
// naming it, exit 1, before the first message, and the file is left untouched.
import { copyFile, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, nativeBuild } from '@bmoe/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { lines, runCli, type CliResult } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

/** Runs `bmoe chat ARGS` with `input` on its stdin (a pipe); killed after 60 s. */
const chatPiped = (args: readonly string[], input: string): Promise<CliResult> => runCli(['chat', ...args], { input, timeoutMs: 60_000, env: {} });

/** A reply as plain output prints it: leading blanks dropped, one newline at the end. */
const printed = (text: string): string => `${text.replace(/^\s+/, '').replace(/\n$/, '')}\n`;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** The token count of the `saved FILE (N tokens, X MiB)` line about `file` in `text`, or null. */
function savedTokens(text: string, file: string): number | null {
  const m = new RegExp(`saved ${esc(file)} \\((\\d+) tokens?, \\d+\\.\\d\\d MiB\\)`).exec(text);
  return m ? Number(m[1]) : null;
}
/** `resumed FILE: M messages, N tokens cached` about `file` in `text`: [M, N], or null. */
function resumed(text: string, file: string): [number, number] | null {
  const m = new RegExp(`^bmoe chat: resumed ${esc(file)}: (\\d+) messages?, (\\d+) tokens? cached$`, 'm').exec(text);
  return m ? [Number(m[1]), Number(m[2])] : null;
}
const ARGS = ['-n', '8', '-t', '2'];
const SYSTEM = 'Answer briefly.';

describe.runIf(nativeAvailable)('bmoe chat --session', () => {
  let dir: string;
  let model: string;
  let other: string;
  /** Written by the first test: the conversation 'hi' → reply, saved by --session on leaving. */
  let file: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-session-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    other = join(dir, 'tiny-qwen3moe-seed2.gguf');
    file = join(dir, 'chat.session');
    for (const [out, seed] of [[model, '1'], [other, '2']] as const) {
      const made = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--seed', seed, '--out', out], { timeoutMs: 300_000 });
      if (made.code !== 0) throw new Error(`make-model failed: ${made.stderr}`);
    }
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('saves on leaving; the next chat resumes it (history, system message, KV cache); /save PATH writes another file', async () => {
    // The reference: one engine session as bmoe chat opens it (turn preparation on), two turns,
    // with the system message; save() waits for each turn's preparation and says what it holds.
    const m = await loadModel(model, { threads: 2 });
    const { one, two, afterOne, afterTwo } = await (async () => {
      try {
        const s = m.createSession({ system: SYSTEM, prepareTurns: true });
        const one = await s.chat('hi', { maxTokens: 8 }).result;
        const afterOne = (await s.save(join(dir, 'ref-1.session'))).tokens;
        const two = await s.chat('and then?', { maxTokens: 8 }).result;
        const afterTwo = (await s.save(join(dir, 'ref-2.session'))).tokens;
        return { one, two, afterOne, afterTwo };
      } finally {
        await m.close();
      }
    })();
    // The prepared turn holds the first answer: the second turn evaluates only its new message.
    expect(afterOne).toBeGreaterThan(one.promptTokens);
    expect(two.promptTokensReused).toBe(afterOne);

    // First chat: a new file, saved at the end of the input.
    const first = await chatPiped([model, ...ARGS, '--system', SYSTEM, '--session', file], 'hi\n');
    expect(first.stderr).not.toMatch(/error/);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(printed(one.text));
    expect(resumed(first.stderr, file)).toBeNull();
    const saved = savedTokens(first.stderr, file);
    expect(saved).toBe(afterOne);

    // Second chat, no --system: the saved conversation goes on, its second turn as the engine's,
    // and the prompt's prefix the file holds is not evaluated again.
    const copy = join(dir, 'copy.session');
    const second = await chatPiped([model, ...ARGS, '--session', file], `/stats\nand then?\n/stats\n/save ${copy}\n`);
    expect(second.stderr).not.toMatch(/error/);
    expect(second.code).toBe(0);
    expect(resumed(second.stderr, file)).toEqual([2, saved]);
    const out = second.stdout.split('\n');
    expect(out[0]).toBe('no reply yet');
    expect(out[1] + '\n').toBe(printed(two.text));
    const context = out.find((l) => l.startsWith('context:'));
    expect(context).toBe(
      `context: ${two.promptTokens} prompt tokens, ${two.promptTokensReused} reused from the KV cache; ${two.promptTokens + two.generatedTokens} of 4096 in use; stop: length`,
    );
    const copied = savedTokens(second.stdout, copy);
    expect(copied).toBe(afterTwo);
    // On leaving, --session's file was saved again, with the second turn.
    expect(savedTokens(second.stderr, file)).toBe(copied);

    // Both files hold the two-turn conversation.
    for (const f of [file, copy]) {
      const again = await chatPiped([model, ...ARGS, '--session', f], '');
      expect(again.code).toBe(0);
      expect(resumed(again.stderr, f)).toEqual([4, copied]);
    }
  });

  it('/save without a path or --session: a one-line usage message, and the chat goes on', async () => {
    const r = await chatPiped([model, ...ARGS], '/save\nhi\n');
    expect(r.code).toBe(0);
    const out = lines(r.stdout);
    expect(out[0]).toBe('usage: /save PATH (or start the chat with --session FILE)');
    expect(out.length).toBeGreaterThan(1);
    expect(r.stderr).not.toMatch(/saved|error/);
  });

  it('a file that cannot be resumed: one error line naming it, exit 1, nothing answered, the file untouched', async () => {
    const good = await readFile(file);
    const damaged = Buffer.from(good);
    damaged[damaged.length >> 1]! ^= 0xff;
    const cases: Array<[string, (f: string) => Promise<void>, string, RegExp]> = [
      ['another model', (f) => copyFile(file, f), other, /another model/],
      ['damaged', (f) => writeFile(f, damaged), model, /damaged/],
      ['cut short', async (f) => (await copyFile(file, f), await truncate(f, good.length - 100)), model, /cut short/],
      ['not a session file', (f) => writeFile(f, 'hello\n'), model, /not a/],
    ];
    for (const [what, make, modelFile, why] of cases) {
      const f = join(dir, `${what.replace(/ /g, '-')}.session`);
      await make(f);
      const before = await readFile(f);
      const r = await chatPiped([modelFile, ...ARGS, '--session', f], 'hi\n');
      expect(r.code, what).toBe(1);
      expect(r.stdout, what).toBe('');
      const errors = lines(r.stderr).filter((l) => /error/i.test(l));
      expect(errors, what).toHaveLength(1);
      expect(errors[0], what).toMatch(new RegExp(`^bmoe: error: ${esc(f)}: `));
      expect(errors[0], what).toMatch(why);
      expect(r.stderr, what).not.toMatch(/^bmoe chat: (saved|resumed)/m);
      expect((await readFile(f)).equals(before), `${what}: the file changed`).toBe(true);
    }
  });

  it('a --session file that cannot be created is refused before the chat starts', async () => {
    const f = join(dir, 'no-such-dir', 'chat.session');
    const r = await chatPiped([model, ...ARGS, '--session', f], 'hi\n');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr).at(-1)).toBe(`bmoe: error: ${f}: cannot write the session there (no directory ${join(dir, 'no-such-dir')})`);
  });
});
