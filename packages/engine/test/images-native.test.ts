// Images in a conversation (llama.cpp's multimodal library through the model's projector): the
// greedy answer about a generated image equals llama-mtmd-cli's on the same files (built from the
// same pinned source), streamed experts give the resident tokens and logits bit for bit, the image
// changes the logits, a second turn reuses the image's KV, and bad images and files are refused in
// one line. Two projector kinds (qwen3vl_merger on the hybrid qwen35moe, gemma4v on gemma4), two
// projector seeds, PNG and JPEG of several sizes: no contract rests on one fixture's output.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { llamaToolPath } from '@bmoe/core-native';
import { gv, makeModel, makeProjector, makeTestImage, rewriteGguf } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { inspectModel, loadModel, nativeBuild, type ChatMessage, type ImageSource, type LoadOptions } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const run = promisify(execFile);
const MiB = 1024 * 1024;
const N = 8;

interface Fixture {
  preset: string;
  seed: number;
  dir: string;
  model: string;
  mmproj: string;
}

let root: string;
const fixtures: Fixture[] = [];
const images: Record<string, string> = {};
const IMAGES = [
  { name: 'a.png', width: 96, height: 64, format: 'png', seed: 1 },
  { name: 'b.jpg', width: 64, height: 80, format: 'jpeg', seed: 2 },
  { name: 'c.png', width: 200, height: 120, format: 'png', seed: 3 },
] as const;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bmoe-engine-images-'));
  for (const preset of ['mini-qwen35moe', 'tiny-gemma4']) {
    for (const seed of [1, 2]) {
      const dir = join(root, `${preset}-${seed}`);
      const model = join(dir, 'model.gguf');
      const mmproj = join(dir, 'mmproj-F16.gguf');
      await makeModel({ preset, out: model, seed });
      await makeProjector({ preset, out: mmproj, seed });
      fixtures.push({ preset, seed, dir, model, mmproj });
    }
  }
  for (const im of IMAGES) {
    images[im.name] = join(root, im.name);
    await writeFile(images[im.name]!, makeTestImage(im));
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const ask = (image: ImageSource, text = 'What is in this picture?'): ChatMessage[] => [
  { role: 'user', content: [{ type: 'image', image }, { type: 'text', text }] },
];

interface Answer {
  text: string;
  tokens: number[];
  logits: Float32Array[];
  promptTokens: number;
  reused: number;
}

async function answer(path: string, messages: ChatMessage[], options: LoadOptions = {}): Promise<Answer> {
  const model = await loadModel(path, { threads: 2, ...options });
  try {
    const gen = model.createSession().generate(messages, { maxTokens: N, logits: true });
    const logits: Float32Array[] = [];
    for await (const ev of gen) if (ev.logits) logits.push(ev.logits);
    const r = await gen.result;
    return { text: r.text, tokens: r.tokens, logits, promptTokens: r.promptTokens, reused: r.promptTokensReused };
  } finally {
    await model.close();
  }
}

/** llama-mtmd-cli's greedy answer: the user's message is the image's marker then the text, as bmoe's parts are. */
async function reference(f: Fixture, image: string, text: string): Promise<string> {
  const bin = llamaToolPath('llama-mtmd-cli');
  expect(bin, 'llama-mtmd-cli is built beside llama-completion').toBeDefined();
  const args = ['-m', f.model, '--mmproj', f.mmproj, '--image', image, '-p', text, '-n', String(N), '--temp', '0', '-t', '2',
    '-c', '4096', '-b', '512', '-ub', '512', '--jinja'];
  // Its async logger may drop the tail at exit: run again until the answer's closing blank line is there.
  for (let attempt = 0; attempt < 8; attempt++) {
    const { stdout } = await run(bin!, args, { maxBuffer: 16 << 20 });
    if (stdout.endsWith('\n\n')) return stdout;
  }
  throw new Error('llama-mtmd-cli never printed a whole answer');
}

const sameBits = (a: Float32Array[], b: Float32Array[]): boolean =>
  a.length === b.length && a.every((x, i) => Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(b[i]!.buffer, b[i]!.byteOffset, b[i]!.byteLength)));

describe.runIf(nativeAvailable)('images (native)', () => {
  it('the answer about each image equals llama-mtmd-cli on the same files, for every fixture pair', async () => {
    for (const f of fixtures) {
      for (const im of IMAGES) {
        const text = 'What is in this picture?';
        const ours = await answer(f.model, ask(images[im.name]!, text));
        const ref = await reference(f, images[im.name]!, text);
        expect(ours.tokens, `${f.preset} seed ${f.seed} ${im.name}`).toHaveLength(N);
        // llama-mtmd-cli prints the answer alone on stdout (its logs go to stderr), after a newline.
        expect(ref.trim(), `${f.preset} seed ${f.seed} ${im.name}`).toBe(ours.text.trim());
      }
    }
  });

  it('streamed experts (cache 0, partial, all) give the resident tokens and logits bit for bit', async () => {
    for (const f of fixtures) {
      const h = await inspectModel(f.model);
      const msgs: ChatMessage[] = [
        { role: 'user', content: [{ type: 'image', image: images['a.png']! }, { type: 'text', text: 'and' }, { type: 'image', image: images['b.jpg']! }, { type: 'text', text: 'compare them' }] },
      ];
      const resident = await answer(f.model, msgs);
      for (const cacheMb of [0, Math.ceil((h.workingSetBytes * 1.5) / MiB) + 1, Math.ceil((h.expertBytes * 1.5) / MiB) + 2]) {
        const s = await answer(f.model, msgs, { stream: { moeStream: true, cacheMb } });
        expect(s.tokens, `${f.preset} seed ${f.seed} cache ${cacheMb}`).toEqual(resident.tokens);
        expect(sameBits(s.logits, resident.logits), `${f.preset} seed ${f.seed} cache ${cacheMb}`).toBe(true);
      }
    }
  });

  it('the image is read: another image changes the logits, the same image in another file does not', async () => {
    for (const f of fixtures) {
      const a = await answer(f.model, ask(images['a.png']!));
      const c = await answer(f.model, ask(images['c.png']!));
      expect(sameBits(a.logits.slice(0, 1), c.logits.slice(0, 1)), f.preset).toBe(false);
    }
    // The same pixels as PNG bytes, as a data URL and as a file: one image.
    const f = fixtures[0]!;
    const bytes = makeTestImage(IMAGES[0]);
    const url = `data:image/png;base64,${Buffer.from(bytes).toString('base64')}`;
    const fromFile = await answer(f.model, ask(images['a.png']!));
    expect(sameBits((await answer(f.model, ask(url))).logits, fromFile.logits)).toBe(true);
  });

  it("counts an image's tokens in the prompt, and a second turn reuses the image's KV", async () => {
    const f = fixtures.find((x) => x.preset === 'tiny-gemma4')!; // attention only: a cached prefix is kept
    const model = await loadModel(f.model, { threads: 2 });
    try {
      expect(model.info.projector).toMatchObject({ path: f.mmproj, projectorType: 'gemma4v' });
      const first = ask(images['a.png']!);
      const tokens = await model.promptTokens(first);
      const cells = tokens.filter((t) => t < 0).length;
      expect(cells).toBeGreaterThan(8);
      const session = model.createSession();
      const r1 = await session.generate(first, { maxTokens: N }).result;
      expect(r1.promptTokens).toBe(tokens.length);
      const second: ChatMessage[] = [...first, { role: 'assistant', content: r1.message.content }, { role: 'user', content: 'Say more about it.' }];
      const r2 = await session.generate(second, { maxTokens: N }).result;
      // Everything up to the first answer is cached; the image is not evaluated again.
      expect(r2.promptTokensReused).toBeGreaterThan(tokens.indexOf(tokens.find((t) => t < 0)!) + cells);
      const cold = await model.createSession().generate(second, { maxTokens: N }).result;
      expect(r2.tokens).toEqual(cold.tokens);
    } finally {
      await model.close();
    }
  });

  it('a conversation with an image saved and restored continues as if never saved (bytes, data URL and path images)', async () => {
    const f = fixtures.find((x) => x.preset === 'tiny-gemma4')!;
    const model = await loadModel(f.model, { threads: 2 });
    try {
      for (const image of [images['a.png']!, makeTestImage(IMAGES[1])] as ImageSource[]) {
        const a = model.createSession();
        await a.chat({ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: 'What is it?' }] }, { maxTokens: N }).result;
        const file = join(root, 'chat.kv');
        const saved = await a.save(file);
        expect(saved.tokens).toBeGreaterThan(20);
        const b = model.createSession({ state: file });
        const [cont, restored] = [await a.chat('Say more.', { maxTokens: N }).result, await b.chat('Say more.', { maxTokens: N }).result];
        expect(restored.tokens).toEqual(cont.tokens);
        // The restored KV held the image: it reuses what the session that never saved does, past the image.
        expect(restored.promptTokensReused).toBe(cont.promptTokensReused);
        expect(restored.promptTokensReused).toBeGreaterThan(80);
        await a.close();
        await b.close();
      }
    } finally {
      await model.close();
    }
  });

  it('sessions decoded together (one with an image, one without, streamed too) each get the tokens they get alone', async () => {
    for (const f of fixtures.filter((x) => x.seed === 2)) {
      for (const stream of [undefined, { moeStream: true, cacheMb: 0 }] as const) {
        const model = await loadModel(f.model, { threads: 2, ...(stream ? { stream } : {}) });
        try {
          const withImage = ask(images['b.jpg']!);
          const text: ChatMessage[] = [{ role: 'user', content: 'Tell me a story about a boat and a bird.' }];
          const alone = [await model.createSession().generate(withImage, { maxTokens: N }).result, await model.createSession().generate(text, { maxTokens: N }).result];
          const [a, b] = model.createSessions(2);
          const together = await Promise.all([a!.generate(withImage, { maxTokens: N }).result, b!.generate(text, { maxTokens: N }).result]);
          expect(together.map((r) => r.tokens), `${f.preset} ${stream ? 'streamed' : 'resident'}`).toEqual(alone.map((r) => r.tokens));
        } finally {
          await model.close();
        }
      }
    }
  });

  it('refuses bad images and files in one line, and the model goes on', async () => {
    const f = fixtures.find((x) => x.preset === 'tiny-gemma4')!;
    const model = await loadModel(f.model, { threads: 2 });
    const textOnly = await loadModel(f.model, { threads: 2, mmproj: 'none' });
    try {
      const s = model.createSession();
      const refuse = async (messages: ChatMessage[], m: RegExp, on = s): Promise<void> => {
        const err = await on.generate(messages, { maxTokens: 2 }).result.then(() => null, (e: unknown) => e as Error & { code: string });
        expect(err?.code).toBe('E_OPTION');
        expect(err?.message).toMatch(m);
        expect(err?.message).not.toContain('\n');
      };
      await refuse(ask(join(root, 'missing.png')), /^image 1: cannot read .*missing\.png: no such file/);
      await refuse(ask(new TextEncoder().encode('not an image at all')), /image 1: not an image format this build reads/);
      // A PNG header claiming 20000 × 10000 pixels (600 MB decoded), refused before anything is decoded.
      const png = Buffer.from(makeTestImage(IMAGES[0]));
      png.writeUInt32BE(20000, 16);
      png.writeUInt32BE(10000, 20);
      await refuse(ask(new Uint8Array(png)), /^image 1 is 20000x10000 = 200000000 pixels, over the limit of \d+$/);
      // Two headers of 6000 × 6000 each: within the bound one at a time, over it together.
      const big = Buffer.from(makeTestImage(IMAGES[0]));
      big.writeUInt32BE(6000, 16);
      big.writeUInt32BE(6000, 20);
      await refuse(
        [{ role: 'user', content: [{ type: 'image', image: new Uint8Array(big) }, { type: 'image', image: new Uint8Array(big) }, { type: 'text', text: 'x' }] }],
        /^the 2 images hold 72000000 pixels together, over the limit of \d+ for one prompt$/,
      );
      // A PNG cut short: its header reads, its pixels do not.
      await refuse(ask(makeTestImage(IMAGES[0]).slice(0, 200)), /image 1: the 96x64 image could not be decoded/);
      await refuse(ask('data:image/png,abc'), /image 1: a data URL must be base64/);
      await refuse(ask(images['a.png']!), /no projector/, textOnly.createSession());
      // And the model still answers.
      expect((await s.generate(ask(images['a.png']!), { maxTokens: 2 }).result).tokens).toHaveLength(2);
    } finally {
      await model.close();
      await textOnly.close();
    }
  });

  it('refuses a projector file that is not one, naming it', async () => {
    const f = fixtures[0]!;
    const err = await loadModel(f.model, { mmproj: f.model }).then(() => null, (e: unknown) => e as Error & { code: string });
    expect(err?.code).toBe('E_MODEL');
    expect(err?.message).toMatch(/^mmproj: .*model\.gguf: not a projector \(general\.architecture is 'qwen35moe'/);
    // One number changed in the metadata: llama.cpp's projector code aborts the process on it when
    // it builds an image's graph. bmoe checks the file in a child process and refuses it in one line.
    for (const fx of fixtures.filter((x) => x.seed === 1)) {
      for (const [key, value] of [['clip.vision.patch_size', 7], ['clip.vision.attention.head_count', 3], ['clip.vision.embedding_length', 65]] as const) {
        const bad = join(fx.dir, `mmproj-bad-${value}.gguf`);
        await rewriteGguf(fx.mmproj, bad, { [key]: gv.u32(value) });
        const e = await loadModel(fx.model, { mmproj: bad }).then(() => null, (x: unknown) => x as Error & { code: string });
        expect(e?.code, `${fx.preset} ${key}`).toBe('E_MODEL');
        expect(e?.message).toMatch(/^mmproj: .*mmproj-bad-\d+\.gguf: llama\.cpp's projector code stopped on this file \(SIGABRT: .*GGML_ASSERT/);
      }
    }
    // Another model's projector (2048 wide, for qwen3.6-35b-a3b) beside a 256-wide model: given,
    // the load fails naming it; found by 'auto', the model loads text only and says why.
    const other = join(root, 'other-model');
    await makeModel({ preset: 'tiny-gemma4', out: join(other, 'model.gguf') });
    await makeProjector({ preset: 'qwen3.6-35b-a3b', out: join(other, 'mmproj-F16.gguf') });
    const given = await loadModel(join(other, 'model.gguf'), { mmproj: join(other, 'mmproj-F16.gguf') }).then(() => null, (x: unknown) => x as Error & { code: string });
    expect(given?.code).toBe('E_MODEL');
    expect(given?.message).toMatch(/^mmproj: .*other-model\/mmproj-F16\.gguf: not a projector \(mmproj\) this llama\.cpp loads for this model/);
    const auto = await loadModel(join(other, 'model.gguf'), { threads: 2 });
    try {
      expect(auto.info.projector).toBeNull();
      expect(auto.info.projectorSkipped).toMatch(/^mmproj: .*mmproj-F16\.gguf: not a projector/);
      expect((await auto.createSession().generate('Hello', { maxTokens: 2 }).result).tokens).toHaveLength(2);
    } finally {
      await auto.close();
    }
    const cut = join(root, 'mmproj-cut.gguf');
    const { readFile } = await import('node:fs/promises');
    await writeFile(cut, (await readFile(f.mmproj)).subarray(0, 4000));
    const err2 = await loadModel(f.model, { mmproj: cut }).then(() => null, (e: unknown) => e as Error & { code: string });
    expect(err2?.code).toBe('E_MODEL');
    expect(err2?.message).toMatch(/^mmproj: .*mmproj-cut\.gguf/);
  });
});
