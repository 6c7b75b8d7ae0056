// `bmoe chat` with images, its input piped (and once in a terminal, tmux): `/image PATH` attaches
// an image to the next message and a path dropped into a line (quoted or backslash-escaped as
// terminals paste it, or a file URL) is attached and taken out of the text; the replies are the ones the engine's session.chat gives for
// those messages (images first, then the text). A missing file, a file that is not an image and a
// model without a projector are one line each and the chat goes on; /stats counts the images'
// cells as prompt tokens; --session with an image saves and resumes it, or says in one line that
// it cannot, leaving no file behind.
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, nativeBuild, type ChatMessage } from '@bmoe/engine';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { asShown, atPrompt, TmuxChat } from './chat-tmux.js';
import { lines, runCli, type CliResult } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
// Sampled, not greedy: the fixture's greedy text is the same whatever it is shown, its sampled text
// is not (another image, or the same images in another order, give another text), so equal texts
// mean the same images reached the model in the same order.
const ARGS = ['-n', '8', '-t', '2', '--temp', '1.5', '--seed', '7'];
const SAMPLING = { maxTokens: 8, temperature: 1.5, seed: 7 };

/** Runs `bmoe chat ARGS` with `input` on its stdin (a pipe); killed after 60 s. */
const chatPiped = (args: readonly string[], input: string): Promise<CliResult> => runCli(['chat', ...args, ...ARGS], { input, timeoutMs: 60_000, env: {} });
/** A reply as plain output prints it: leading blanks dropped, one newline at the end. */
const printed = (text: string): string => `${text.replace(/^\s+/, '').replace(/\n$/, '')}\n`;
/** stderr without the lines every chat prints (the settings rule, the model loaded). */
const errors = (r: CliResult): string[] => lines(r.stderr).filter((l) => !/^bmoe: (holding|streaming)|^bmoe chat: /.test(l));

const user = (images: string[], text: string): ChatMessage => ({ role: 'user', content: [...images.map((image) => ({ type: 'image' as const, image })), { type: 'text', text }] });

describe.runIf(nativeAvailable)('bmoe chat with images', () => {
  let dir: string;
  let model: string;
  let textOnly: string;
  let a: string;
  let spaced: string;

  /** The replies one engine session gives to `messages`, turn after turn. */
  async function replies(messages: Array<string | ChatMessage>, path = model): Promise<string[]> {
    const m = await loadModel(path, { threads: 2 });
    try {
      const s = m.createSession();
      const out: string[] = [];
      for (const msg of messages) out.push((await s.chat(msg, SAMPLING).result).text);
      return out;
    } finally {
      await m.close();
    }
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-chat-images-'));
    model = join(dir, 'vision', 'model.gguf');
    await makeModel({ preset: 'tiny-gemma4', out: model });
    await makeProjector({ preset: 'tiny-gemma4', out: join(dir, 'vision', 'mmproj-F16.gguf'), seed: 1 });
    await mkdir(join(dir, 'text'));
    textOnly = join(dir, 'text', 'model.gguf');
    await copyFile(model, textOnly);
    a = join(dir, 'a.png');
    spaced = join(dir, 'my pic.jpg');
    await writeFile(a, makeTestImage({ width: 96, height: 64, format: 'png', seed: 1 }));
    await writeFile(spaced, makeTestImage({ width: 64, height: 80, format: 'jpeg', seed: 2 }));
    await writeFile(join(dir, 'notes.txt'), 'not a picture\n');
  }, 300_000);

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('/image then a question, then a quoted dropped path with its question: the replies session.chat gives; /stats counts the images', async () => {
    const [one, two] = await replies([user([a], 'What is in this picture?'), user([spaced], 'And in this one?')]);
    expect(one).not.toBe(two);
    const r = await chatPiped([model], `/image ${a}\nWhat is in this picture?\n'${spaced}' And in this one?\n/stats\n`);
    expect(errors(r)).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^bmoe chat: model\.gguf \(gemma4, .*, images with mmproj-F16\.gguf\), loaded in/m);
    const out = r.stdout.split('\n');
    const stats = out.findIndex((l) => l.startsWith('generation:'));
    expect(out.slice(0, stats).join('\n') + '\n').toBe(`(attached a.png: it goes with your next message)\n${printed(one!)}${printed(two!)}`);
    expect(out[stats + 1]).toMatch(/^context: (\d+) prompt tokens \(2 images among them\), [1-9]\d* reused from the KV cache; \d+ of 4096 in use; stop: length$/);
  });

  it('a backslash-escaped path alone waits for the next line; a file URL in that line joins it: both images, in order', async () => {
    const [reply] = await replies([user([spaced, a], 'Compare them.')]);
    const [swapped] = await replies([user([a, spaced], 'Compare them.')]);
    expect(reply).not.toBe(swapped);
    const escaped = spaced.replace(/ /g, '\\ ');
    const r = await chatPiped([model], `${escaped}\n/image\nfile://${a} Compare them.\n/image\n`);
    expect(errors(r)).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      '(attached my pic.jpg: it goes with your next message)\n' +
        '(attached for the next message: my pic.jpg)\n' +
        printed(reply!) +
        '(no images attached: /image PATH attaches one)\n',
    );
  });

  it('a missing file, a file that is not an image: one line each, nothing attached, and the chat goes on', async () => {
    const [hi] = await replies(['Hi']);
    const missing = join(dir, 'missing.png');
    const notes = join(dir, 'notes.txt');
    const r = await chatPiped([model], `/image ${missing}\n/image ${notes}\n/image ${a} ${notes}\n/image\nHi\n`);
    expect(r.code).toBe(0);
    expect(errors(r)).toEqual([
      `bmoe: error: ${missing}: no such file`,
      `bmoe: error: ${notes}: not an image (PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR)`,
      `bmoe: error: ${notes}: not an image (PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR)`,
    ]);
    expect(r.stdout).toBe(`(no images attached: /image PATH attaches one)\n${printed(hi!)}`);
  });

  it('a model without a projector: /image and a dropped image are one line each, nothing is sent for them, text still goes', async () => {
    const [hi] = await replies(['Hi'], textOnly);
    const r = await chatPiped([textOnly], `/image ${a}\n${a} what is this?\nHi\n`);
    expect(r.code).toBe(0);
    const refusal = 'bmoe: error: this model takes no images: no projector is loaded (start bmoe chat with --mmproj FILE, or put its mmproj*.gguf beside the model)';
    expect(errors(r)).toEqual([refusal, refusal]);
    expect(r.stdout).toBe(printed(hi!));
    expect(r.stderr).not.toMatch(/images with/);
    // --mmproj names the projector elsewhere: the same model then sees.
    const [seen] = await replies([user([a], 'What is this?')]);
    const given = await chatPiped([textOnly, '--mmproj', join(dir, 'vision', 'mmproj-F16.gguf')], `${a} What is this?\n`);
    expect(errors(given)).toEqual([]);
    expect(given.stdout).toBe(printed(seen!));
  });

  it('in a terminal: a path pasted as terminals paste a dropped file is attached, the prompt says so, the next line is answered with it', async () => {
    const [reply] = await replies([user([spaced], 'What is this?')]);
    const chat = await TmuxChat.start(['chat', model, ...ARGS]);
    try {
      await chat.waitFor('the first prompt (>>>)', atPrompt);
      // GNOME Terminal pastes a dropped file's path quoted, with a space after it.
      await chat.line(`'${spaced}' `);
      const attached = await chat.waitFor('the prompt with the image waiting', (s) => s.split('\n').at(-1) === '[1 image] >>>' && s);
      expect(attached).toContain('(attached my pic.jpg: it goes with your next message)');
      await chat.line('What is this?');
      const shown = await chat.waitFor('the reply and the next prompt', (s) => {
        const l = s.split('\n');
        const at = l.indexOf('[1 image] >>> What is this?');
        // Up to the next prompt, without the note on why the reply stopped ("[cut at 8 tokens: -n]").
        return at >= 0 && atPrompt(s) && l.slice(at + 1, -1).filter((x) => !/^\[.*\]$/.test(x)).join('\n');
      });
      expect(asShown(shown)).toBe(asShown(reply!));
      await chat.keys('C-d');
      expect(await chat.waitForExit()).toBe(0);
    } finally {
      await chat.kill();
    }
  });

  it('--session with an image: saved and resumed, or one line saying it cannot be, and no file left', async () => {
    const file = join(dir, 'vision.session');
    const r = await chatPiped([model, '--session', file], `/image ${a}\nWhat is in this picture?\n`);
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack
    if (existsSync(file)) {
      // The engine's state files carry images: the next chat resumes the conversation with its image.
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toMatch(/^bmoe chat: saved .*vision\.session \(\d+ tokens, /m);
      const [, more] = await replies([user([a], 'What is in this picture?'), 'Say more.']);
      const again = await chatPiped([model, '--session', file], 'Say more.\n/stats\n');
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toMatch(/^bmoe chat: resumed .*vision\.session: 2 messages, \d+ tokens cached$/m);
      expect(again.stdout.startsWith(printed(more!))).toBe(true);
      expect(again.stdout).toMatch(/^context: \d+ prompt tokens \(1 image among them\), [1-9]\d* reused/m);
    } else {
      // They do not carry images yet: one line naming the file, exit 1 (it was not saved), no file.
      expect(r.code).toBe(1);
      expect(errors(r)).toHaveLength(1);
      expect(errors(r)[0]).toMatch(/^bmoe: error: .*vision\.session: not saved: .*image/);
      expect(r.stdout.length).toBeGreaterThan(0);
    }
    // /save refused or not, the chat goes on to the next line.
    const other = join(dir, 'other.session');
    const saved = await chatPiped([model], `/image ${a}\nWhat is in this picture?\n/save ${other}\nHi\n`);
    expect(saved.code).toBe(0);
    expect(lines(saved.stdout).length).toBeGreaterThanOrEqual(3);
  });
});
