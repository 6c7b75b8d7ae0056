// `bmoe run --image` and `bmoe info` on vision models: the text `run` prints about pictures equals
// llama-mtmd-cli's on the same files (built from the same pinned source; its single turn is the
// user message "<marker per image> + prompt" through the chat template, as ours), for both
// projector kinds (gemma4v on tiny-gemma4, qwen3vl_merger on the hybrid mini-qwen35moe) and two
// projector seeds each; the image's cells count as prompt tokens; a missing file, a file that is
// not an image, a model without a projector are one line before anything loads; `info` describes
// the projector found beside the model or named by --mmproj, as the engine loads it.
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel, nativeBuild } from '@bmoe/engine';
import { parseGenerationLine } from '@bmoe/engine/metrics';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { findLlamaTool, runLlamaMtmd } from '../src/llama-tools.js';
import { lines, runCli } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const mtmd = await requireNative("llama.cpp's llama-mtmd-cli", () => findLlamaTool('llama-mtmd-cli'));
const N = 8;
const PROMPT = 'What is in this picture?';

interface Fixture {
  preset: 'tiny-gemma4' | 'mini-qwen35moe';
  seed: number;
  model: string;
  mmproj: string;
}

let root: string;
const fixtures: Fixture[] = [];
/** tiny-gemma4 alone in a folder: no projector beside it. */
let textOnly: string;
const image = (name: string): string => join(root, name);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bmoe-cli-images-'));
  for (const preset of ['tiny-gemma4', 'mini-qwen35moe'] as const) {
    for (const seed of [1, 2]) {
      const dir = join(root, `${preset}-${seed}`);
      const model = join(dir, 'model.gguf');
      const mmproj = join(dir, 'mmproj-F16.gguf');
      await makeModel({ preset, out: model });
      await makeProjector({ preset, out: mmproj, seed });
      fixtures.push({ preset, seed, model, mmproj });
    }
  }
  await mkdir(join(root, 'text-only'));
  textOnly = join(root, 'text-only', 'model.gguf');
  await copyFile(fixtures[0]!.model, textOnly);
  await writeFile(image('a.png'), makeTestImage({ width: 96, height: 64, format: 'png', seed: 1 }));
  await writeFile(image('b.jpg'), makeTestImage({ width: 64, height: 80, format: 'jpeg', seed: 2 }));
  await writeFile(image('notes.txt'), 'not a picture\n');
}, 300_000);

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

/** `bmoe run MODEL --image ... -p PROMPT` greedy; its stdout. */
async function runImages(model: string, images: readonly string[], extra: readonly string[] = []): Promise<string> {
  const r = await runCli(['run', model, ...images.flatMap((i) => ['--image', i]), '-p', PROMPT, '-n', String(N), '--temp', '0', '-t', '2', ...extra], { timeoutMs: 120_000 });
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
}

/** What a run printed, as text to compare: the closing newline(s) `run` and llama-mtmd-cli add aside. */
const answer = (s: string): string => s.replace(/\n+$/, '');

describe.runIf(nativeAvailable)('bmoe run --image (native)', () => {
  it.runIf(mtmd)('prints what llama-mtmd-cli prints on the same files: both projector kinds, two projector seeds, PNG and JPEG', async () => {
    for (const f of fixtures) {
      const images = [image(f.seed === 1 ? 'a.png' : 'b.jpg')];
      const ref = await runLlamaMtmd({ model: f.model, mmproj: f.mmproj, images, prompt: PROMPT, nPredict: N, threads: 2 });
      const ours = await runImages(f.model, images);
      expect(answer(ref).trim(), `${f.preset} seed ${f.seed}`).not.toBe('');
      expect(answer(ours), `${f.preset} seed ${f.seed}`).toBe(answer(ref));
    }
  });

  it.runIf(mtmd)('several --image flags: every image, in order, before the prompt (as llama-mtmd-cli); --mmproj names a projector elsewhere', async () => {
    for (const f of fixtures.filter((x) => x.seed === 1)) {
      const images = [image('b.jpg'), image('a.png')];
      const ref = await runLlamaMtmd({ model: f.model, mmproj: f.mmproj, images, prompt: PROMPT, nPredict: N, threads: 2 });
      expect(answer(await runImages(f.model, images)), f.preset).toBe(answer(ref));
    }
    const f = fixtures[0]!;
    const ref = await runLlamaMtmd({ model: f.model, mmproj: f.mmproj, images: [image('a.png')], prompt: PROMPT, nPredict: N, threads: 2 });
    expect(answer(await runImages(textOnly, [image('a.png')], ['--mmproj', f.mmproj]))).toBe(answer(ref));
  });

  it('the images reach the model in the order given: sampled text equals the engine\'s for that order, not for the other', async () => {
    // Sampled: the fixture's greedy text does not depend on what it is shown; its sampled text does.
    const f = fixtures[0]!;
    const sampling = ['--temp', '1.5', '--seed', '7'];
    const engine = async (images: string[]): Promise<string> => {
      const m = await loadModel(f.model, { threads: 2 });
      try {
        const content = [...images.map((i) => ({ type: 'image' as const, image: i })), { type: 'text' as const, text: PROMPT }];
        return (await m.createSession().generate([{ role: 'user', content }], { maxTokens: N, temperature: 1.5, seed: 7 }).result).text;
      } finally {
        await m.close();
      }
    };
    const ba = await engine([image('b.jpg'), image('a.png')]);
    expect(ba).not.toBe(await engine([image('a.png'), image('b.jpg')]));
    expect(answer(await runImages(f.model, [image('b.jpg'), image('a.png')], sampling))).toBe(answer(ba));
  });

  it("counts the image's cells as prompt tokens (generation: line and --json), beyond the same message without it", async () => {
    const f = fixtures[0]!;
    const json = (extra: string[]) =>
      runCli(['run', f.model, '-p', PROMPT, '-n', '2', '-t', '2', '--json', ...extra]).then((r) => {
        expect(r.code, r.stderr).toBe(0);
        const done = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; promptTokens?: number }).find((e) => e.type === 'done')!;
        const gen = lines(r.stderr).map(parseGenerationLine).find((g) => g !== null);
        expect(gen?.promptTokens).toBe(done.promptTokens);
        return done.promptTokens!;
      });
    const withImage = await json(['--image', image('a.png')]);
    const without = await json(['--chat']);
    const m = await loadModel(f.model, { threads: 2 });
    try {
      const cells = (await m.promptTokens([{ role: 'user', content: [{ type: 'image', image: image('a.png') }, { type: 'text', text: PROMPT }] }])).filter((t) => t < 0).length;
      expect(cells).toBeGreaterThan(8);
      expect(withImage).toBeGreaterThanOrEqual(without + cells);
    } finally {
      await m.close();
    }
  });

  it('a missing file, a file that is not an image, a model without a projector: one line, exit 1, nothing generated', async () => {
    const cases: Array<[string[], string]> = [
      [[fixtures[0]!.model, '--image', image('missing.png')], `bmoe: error: --image ${image('missing.png')}: no such file`],
      [[fixtures[0]!.model, '--image', image('notes.txt')], `bmoe: error: --image ${image('notes.txt')}: not an image (PNG, JPEG, GIF, BMP, TGA, PNM, PSD or HDR)`],
      [[textOnly, '--image', image('a.png')], `bmoe: error: --image: ${textOnly} has no projector beside it (an mmproj*.gguf in its folder) to read images with: give one with --mmproj FILE`],
    ];
    for (const [args, line] of cases) {
      const r = await runCli(['run', ...args, '-p', PROMPT, '-n', '4', '-t', '2']);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stdout).toBe('');
      expect(lines(r.stderr).filter((l) => !l.startsWith('bmoe: holding') && !l.startsWith('bmoe: streaming'))).toEqual([line]);
    }
    const none = await runCli(['run', fixtures[0]!.model, '--image', image('a.png'), '--mmproj', 'none', '-p', PROMPT]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^error: --image needs the model's projector, and --mmproj none loads none$/m);
    // A model file given as the projector: the engine's one line.
    const wrong = await runCli(['run', fixtures[0]!.model, '--image', image('a.png'), '--mmproj', fixtures[0]!.model, '-p', PROMPT, '-n', '4', '-t', '2']);
    expect(wrong.code).toBe(1);
    expect(lines(wrong.stderr).at(-1)).toMatch(/^bmoe: error: mmproj: .*model\.gguf: not a projector \(general\.architecture is 'gemma4'/);
  });
});

describe('the image flags in --help', () => {
  it('--image on run (implying --chat); --mmproj on run, chat, serve and info', async () => {
    const help = async (cmd: string): Promise<string> => (await runCli([cmd, '--help'])).stdout.replace(/\s+/g, ' ');
    const run = await help('run');
    expect(run).toContain('--image <file> an image to ask about');
    expect(run).toContain('the images first, then the text, as llama-mtmd-cli sends it');
    expect(run).toContain('(--image implies it)');
    for (const cmd of ['run', 'chat', 'serve', 'info']) expect(await help(cmd), cmd).toContain('--mmproj <FILE>');
    expect(await help('pull')).toContain('--no-mmproj');
  });
});

describe('bmoe info and the projector', () => {
  const row = (stdout: string, label: string): string | undefined => new RegExp(`^${label}\\s{2,}(.+)$`, 'm').exec(stdout)?.[1];

  it('describes the projector beside the model: path and size, type, image and patch size, projection width', async () => {
    const f = fixtures[0]!;
    const r = await runCli(['info', f.model]);
    expect(r.code, r.stderr).toBe(0);
    expect(row(r.stdout, 'projector')).toMatch(new RegExp(`^${f.mmproj.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(\\d+\\.\\d\\d MiB\\)$`));
    expect(row(r.stdout, 'projector type')).toBe('gemma4v, 2 encoder blocks');
    expect(row(r.stdout, 'image size')).toBe('224 px, patches of 16 px');
    expect(row(r.stdout, 'projection width')).toBe("256 (the model's embedding width)");
    const q = await runCli(['info', fixtures[2]!.model]);
    expect(row(q.stdout, 'projector type')).toMatch(/^qwen3vl_merger/);
  });

  it('--json carries the projector as the engine loads it; --mmproj names one elsewhere, none for none', async () => {
    const f = fixtures[2]!;
    const r = await runCli(['info', f.model, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const projector = (JSON.parse(r.stdout) as { projector: unknown }).projector;
    if (nativeAvailable) {
      const m = await loadModel(f.model, { threads: 2 });
      try {
        expect(projector).toEqual(m.info.projector);
      } finally {
        await m.close();
      }
    }
    expect(projector).toMatchObject({ path: f.mmproj, projectorType: 'qwen3vl_merger' });

    const none = await runCli(['info', textOnly, '--json']);
    expect((JSON.parse(none.stdout) as { projector: unknown }).projector).toBeNull();
    expect(row((await runCli(['info', textOnly])).stdout, 'projector')).toBe('none (text only; --mmproj FILE names one)');
    const given = await runCli(['info', textOnly, '--mmproj', f.mmproj, '--json']);
    expect((JSON.parse(given.stdout) as { projector: { path: string } }).projector.path).toBe(f.mmproj);
    expect(row((await runCli(['info', f.model, '--mmproj', 'none'])).stdout, 'projector')).toMatch(/^none/);
    const wrong = await runCli(['info', f.model, '--mmproj', image('notes.txt')]);
    expect(wrong.code).toBe(1);
    expect(lines(wrong.stderr)).toHaveLength(1);
    expect(wrong.stderr).toMatch(/^bmoe: error: mmproj: .*notes\.txt/);
  });
});
