// Split GGUFs end to end, as people download them: `bmoe make-model --split-max-size` writes the
// shards llama.cpp's own llama-gguf-split would, and a model split either way, named by its first
// shard, is described (`bmoe info`) and run (`bmoe run`, resident and streamed with no cache, a
// partial cache and a cache holding every expert) exactly as the unsplit file: the same totals,
// tokens and logits bit-identical to the unsplit resident run, text equal to llama-completion's (both repacking, their default)
// on the split. A missing shard, a shard of another model or a wrong count is one line naming the
// file, exit 1, no stack trace.
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { nativeBuild, type LoadOptions, type ModelHeaderInfo } from '@bmoe/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { findLlamaTool, runLlamaCompletion } from '../src/llama-tools.js';
import { greedyLogits, lines, runCli } from './helpers.js';

const native = await requireNative('the native addon', () => nativeBuild());
const splitTool = findLlamaTool('llama-gguf-split');
const tools = await requireNative("llama.cpp's llama-gguf-split and llama-completion", () => splitTool !== null && findLlamaTool('llama-completion') !== null);
const PROMPT = 'Once upon a time the mother looked at the birds';
const N = 24;
/** Streamed runs: no cache; 1 MiB forced, below these models' working set (partial); 64 MiB, every expert. */
const STREAMED: ReadonlyArray<{ label: string; flags: string[]; load: LoadOptions }> = [
  { label: 'cache 0', flags: ['--moe-stream', '--cache-mb', '0'], load: { stream: { moeStream: true, cacheMb: 0 } } },
  { label: 'partial cache', flags: ['--moe-stream', '--cache-mb', '1', '--force-cache'], load: { stream: { moeStream: true, cacheMb: 1, forceCache: true } } },
  { label: 'all cached', flags: ['--moe-stream', '--cache-mb', '64'], load: { stream: { moeStream: true, cacheMb: 64 } } },
];
const PRESETS = [
  { preset: 'tiny-qwen3moe', size: '3500000', llamaSize: '3M' },
  { preset: 'tiny-gpt-oss', size: '2M', llamaSize: '2M' },
] as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-split-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function info(model: string): Promise<ModelHeaderInfo> {
  const r = await runCli(['info', model, '--json']);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as ModelHeaderInfo;
}

/** Tokens and every token's logits of a greedy run through the engine. */
const generate = (path: string, load: LoadOptions): Promise<{ tokens: number[]; logits: Buffer[] }> => greedyLogits(path, load, PROMPT, N);

/** `bmoe run --json`'s generated text. */
async function bmoeText(model: string, extra: string[]): Promise<string | undefined> {
  const r = await runCli(['run', model, '-p', PROMPT, '-n', String(N), '-t', '2', '--json', ...extra], { timeoutMs: 300_000 });
  expect(r.stderr.includes('bmoe: error') ? r.stderr : '', model).toBe('');
  expect(r.code).toBe(0);
  return lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done')?.text;
}

describe.each(PRESETS)('$preset split in shards', ({ preset, size, llamaSize }) => {
  let single: string;
  /** First shards: ours (make-model --split-max-size) and llama-gguf-split's. */
  const firsts: Record<'bmoe' | 'llama', string> = { bmoe: '', llama: '' };

  beforeAll(async () => {
    single = join(dir, `${preset}.gguf`);
    expect((await runCli(['make-model', '--preset', preset, '--out', single], { timeoutMs: 300_000 })).code).toBe(0);
    const made = await runCli(['make-model', '--preset', preset, '--out', join(dir, `${preset}-split.gguf`), '--split-max-size', size], { timeoutMs: 300_000 });
    expect(made.code, made.stderr).toBe(0);
    firsts.bmoe = /^path\s+(\S+)$/m.exec(made.stdout)![1]!;
    expect(firsts.bmoe).toBe(join(dir, `${preset}-split-00001-of-00003.gguf`));
    expect(made.stdout).toMatch(/^shard 3\/3\s+\S+-00003-of-00003\.gguf \(/m);
    if (splitTool) {
      const prefix = join(dir, `${preset}-llama`);
      await promisify(execFile)(splitTool, ['--split-max-size', llamaSize, single, prefix], { timeout: 60_000 });
      firsts.llama = (await readdir(dir)).filter((f) => f.startsWith(`${preset}-llama-00001-of-`)).map((f) => join(dir, f))[0]!;
    }
  }, 300_000);

  it('bmoe info FIRST: every shard, and the totals of the unsplit model', async () => {
    const whole = await info(single);
    for (const first of Object.values(firsts).filter(Boolean)) {
      const split = await info(first);
      expect(split.shards.length).toBeGreaterThanOrEqual(3);
      expect(split.shards[0]!.path).toBe(first);
      expect(split.fileBytes).toBe(split.shards.reduce((s, x) => s + x.bytes, 0));
      for (const k of ['totalBytes', 'denseBytes', 'expertBytes', 'workingSetBytes', 'tensors', 'layers', 'experts'] as const) expect(split[k], k).toBe(whole[k]);
      const human = (await runCli(['info', first])).stdout;
      expect(human).toMatch(new RegExp(`^file\\s+${first} \\(split model: ${split.shards.length} shards, `, 'm'));
      for (const [i, s] of split.shards.entries()) expect(human).toMatch(new RegExp(`^shard ${i + 1}/${split.shards.length}\\s+${s.path} \\(`, 'm'));
    }
  });

  it.runIf(tools)("make-model's shards are llama-gguf-split's, byte for byte", async () => {
    if (llamaSize !== size) return; // llama-gguf-split takes only M/G sizes
    const ours = (await info(firsts.bmoe)).shards;
    const theirs = (await info(firsts.llama)).shards;
    expect(ours.length).toBe(theirs.length);
    for (const [i, s] of ours.entries()) expect((await readFile(s.path)).equals(await readFile(theirs[i]!.path)), `shard ${i + 1}`).toBe(true);
  });

  it.runIf(native)('tokens and logits: resident and streamed (cache 0, partial, all) equal the unsplit resident run', async () => {
    const reference = await generate(single, {});
    expect(reference.tokens.length).toBeGreaterThan(0);
    for (const [who, first] of Object.entries(firsts).filter(([, f]) => f)) {
      for (const { label, load } of [{ label: 'resident', load: {} }, ...STREAMED]) {
        const r = await generate(first, load);
        expect(r.tokens, `${who} ${label}`).toEqual(reference.tokens);
        expect(r.logits.length).toBe(reference.logits.length);
        expect(r.logits.every((l, i) => l.equals(reference.logits[i]!)), `${who} ${label}: logits`).toBe(true);
      }
    }
  }, 300_000);

  it.runIf(native && tools)('bmoe run FIRST (resident and streamed) = llama-completion on the split = on the unsplit file', async () => {
    const expected = await runLlamaCompletion({ model: single, prompt: PROMPT, nPredict: N, threads: 2 });
    expect(expected.length).toBeGreaterThan(10);
    for (const first of Object.values(firsts).filter(Boolean)) {
      expect(await runLlamaCompletion({ model: first, prompt: PROMPT, nPredict: N, threads: 2 })).toBe(expected);
      expect(await bmoeText(first, [])).toBe(expected);
      for (const { flags } of STREAMED) expect(await bmoeText(first, flags), flags.join(' ')).toBe(expected);
    }
  }, 300_000);
});

describe('a bad set of shards: one line naming the file, exit 1, from bmoe info and bmoe run', () => {
  /** A copy of the tiny-qwen3moe split (3 shards) in its own directory; returns its shard paths. */
  async function copyOfSplit(name: string): Promise<string[]> {
    const to = join(dir, name);
    await mkdir(to);
    const from = (await readdir(dir)).filter((f) => /^tiny-qwen3moe-split-0000\d-of-00003\.gguf$/.test(f)).sort();
    expect(from).toHaveLength(3);
    await Promise.all(from.map((f) => copyFile(join(dir, f), join(to, f))));
    return from.map((f) => join(to, f));
  }

  async function expectRefused(first: string, message: RegExp): Promise<void> {
    for (const args of [['info', first], ['run', first, '-p', 'hi', '-n', '2']]) {
      const r = await runCli(args, { timeoutMs: 120_000 });
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stdout).toBe('');
      expect(lines(r.stderr), args.join(' ')).toHaveLength(1);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  }

  beforeAll(async () => {
    // Both presets' splits, made by the suites above when they ran; made here otherwise.
    for (const { preset, size } of PRESETS) {
      if ((await readdir(dir)).some((f) => f.startsWith(`${preset}-split-00001-of-`))) continue;
      const r = await runCli(['make-model', '--preset', preset, '--out', join(dir, `${preset}-split.gguf`), '--split-max-size', size], { timeoutMs: 300_000 });
      expect(r.code, r.stderr).toBe(0);
    }
  }, 300_000);

  it('a missing shard', async () => {
    const shards = await copyOfSplit('missing');
    await rm(shards[1]!);
    await expectRefused(shards[0]!, new RegExp(`^bmoe: error: ${shards[1]}: missing: no such file \\(shard 2 of 3 of ${shards[0]}\\)$`, 'm'));
  });

  it('a shard of another model (tiny-gpt-oss shard 2 of 3 in a tiny-qwen3moe split)', async () => {
    const shards = await copyOfSplit('foreign');
    await copyFile(join(dir, 'tiny-gpt-oss-split-00002-of-00003.gguf'), shards[1]!);
    await expectRefused(shards[0]!, new RegExp(`^bmoe: error: ${shards[1]}: split\\.tensors\\.count is 79, the first shard's is 51 \\(shard 2 of 3 of .*\\): a shard of another model\\?`, 'm'));
  });

  it('a shard with a wrong split count', async () => {
    const shards = await copyOfSplit('count');
    // split.count is a u16 value right after its key and value type: 3 → 4.
    const bytes = await readFile(shards[2]!);
    const key = Buffer.from('split.count');
    const at = bytes.indexOf(key) + key.length + 4;
    expect(bytes.readUInt16LE(at)).toBe(3);
    bytes.writeUInt16LE(4, at);
    await writeFile(shards[2]!, bytes);
    await expectRefused(shards[0]!, new RegExp(`^bmoe: error: ${shards[2]}: split\\.count is 4, the first shard's is 3 \\(shard 3 of 3 of .*\\): a shard of another model\\?`, 'm'));
  });

  it('a later shard given as the model: names the first shard', async () => {
    const shards = await copyOfSplit('later');
    await expectRefused(shards[2]!, new RegExp(`^bmoe: error: ${shards[2]}: this is shard 3 of 3 of a split model: load the model by its first shard, ${shards[0]}$`, 'm'));
  });
});
