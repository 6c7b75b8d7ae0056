// Split GGUF models as llama.cpp names, writes and loads them: the naming functions, the writer
// (byte-identical to the pinned llama.cpp's own llama-gguf-split when it is built), readGgufModel
// seeing the same model as the unsplit file, and every way a set of shards can be wrong, each a
// one-line GgufError naming the file. Every file is written in the test.

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import {
  GgufError,
  describeModel,
  gv,
  layoutGguf,
  layoutSplit,
  makeModel,
  parseSplitSize,
  readGguf,
  readGgufModel,
  splitPath,
  splitPrefix,
  writeGguf,
  writeGgufSplit,
  type GgufLayout,
  type GgufTensorInfo,
  type GgufValue,
} from '../src/index.js';
import { FIXTURE_SPEC, patternBytes, tempDir } from './helpers.js';

const run = promisify(execFile);
const SPLIT_TOOL = process.env.BMOE_LLAMA_BIN_DIR
  ? join(process.env.BMOE_LLAMA_BIN_DIR, 'llama-gguf-split')
  : fileURLToPath(new URL('../../core-native/build/bin/llama-gguf-split', import.meta.url));
const splitTool = await requireNative(`llama.cpp's llama-gguf-split (${SPLIT_TOOL})`, () => existsSync(SPLIT_TOOL));
const tmp = tempDir('bmoe-split-');
afterAll(() => tmp.cleanup());

describe('llama.cpp split naming', () => {
  it('splitPath is llama_split_path: "%s-%05d-of-%05d.gguf" with no + 1 and count', () => {
    expect(splitPath('/m/model', 0, 3)).toBe('/m/model-00001-of-00003.gguf');
    expect(splitPath('/m/model', 2, 3)).toBe('/m/model-00003-of-00003.gguf');
    expect(splitPath('x', 99999, 100000)).toBe('x-100000-of-100000.gguf'); // %05d widens, never truncates
    expect(() => splitPath('x', -1, 3)).toThrow(RangeError);
  });

  it('splitPrefix is llama_split_prefix: the prefix when the name is that shard, else nothing', () => {
    expect(splitPrefix('/m/model-00002-of-00004.gguf', 1, 4)).toBe('/m/model');
    expect(splitPrefix('/m/model-00002-of-00004.gguf', 0, 4)).toBeUndefined();
    expect(splitPrefix('/m/model-00002-of-00004.gguf', 1, 5)).toBeUndefined();
    expect(splitPrefix('/m/model.gguf', 0, 1)).toBeUndefined();
    // llama.cpp needs something before the suffix.
    expect(splitPrefix('-00001-of-00002.gguf', 0, 2)).toBeUndefined();
    expect(splitPrefix('a-00001-of-00002.gguf', 0, 2)).toBe('a');
  });

  it('--split-max-size values as llama-gguf-split reads them (M = 10^6, G = 10^9), plus plain bytes', () => {
    expect(parseSplitSize('300M')).toBe(300_000_000);
    expect(parseSplitSize('2G')).toBe(2_000_000_000);
    expect(parseSplitSize('123456')).toBe(123456);
    for (const bad of ['0M', '1.5G', '2K', '', 'M', '-3M', '2g']) expect(() => parseSplitSize(bad), bad).toThrow(RangeError);
  });
});

describe('a model written as shards', () => {
  it('is byte-identical to llama-gguf-split --split-max-size of the unsplit file, and read back as the same model', async () => {
    const single = join(tmp.dir, 'q.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: single });
    const made = await makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'qs.gguf'), splitMaxBytes: 3_000_000 });
    expect(made.path).toBe(join(tmp.dir, 'qs-00001-of-00004.gguf'));
    expect(made.shards.map((s) => s.path)).toEqual([0, 1, 2, 3].map((k) => splitPath(join(tmp.dir, 'qs'), k, 4)));
    expect(await readdir(tmp.dir)).not.toContainEqual(expect.stringMatching(/partial/));

    const one = await readGguf(single);
    const model = await readGgufModel(made.path);
    expect(model.shards.map((s) => s.path)).toEqual(made.shards.map((s) => s.path));
    expect(model.fileSize).toBe(made.bytes);
    expect(model.shards.map((s) => s.tensorCount)).toEqual([...new Set(model.tensors.map((t) => t.shard))].map((k) => model.tensors.filter((t) => t.shard === k).length));
    // Same metadata (the first shard adds only the split keys), same tensors in the same order.
    const noSplit = new Map([...model.kv].filter(([k]) => !k.startsWith('split.')));
    expect(noSplit).toEqual(one.kv);
    expect(model.kv.get('split.count')).toEqual(gv.u16(4));
    expect(model.kv.get('split.tensors.count')).toEqual(gv.i32(one.tensors.length));
    expect(model.tensors.map(({ name, dims, type, bytes }) => ({ name, dims, type, bytes }))).toEqual(one.tensors.map(({ name, dims, type, bytes }) => ({ name, dims, type, bytes })));
    // Every tensor's bytes are where its shard says.
    const whole = await readFile(single);
    const shards = await Promise.all(model.shards.map((s) => readFile(s.path)));
    model.tensors.forEach((t, i) => {
      const u = one.tensors[i]!;
      expect(shards[t.shard]!.subarray(t.offset, t.offset + t.bytes).equals(whole.subarray(u.offset, u.offset + u.bytes)), t.name).toBe(true);
    });
    // describeModel: the same totals; expert tensors tagged with their shard.
    const a = describeModel(one);
    const b = describeModel(model);
    for (const k of ['totalBytes', 'denseBytes', 'expertBytes', 'expertBytesPerLayer', 'layers', 'experts'] as const) expect(b[k], k).toBe(a[k]);
    expect(b.workingSetBytes()).toBe(a.workingSetBytes());
    expect(b.expertTensors.map((t) => t.name)).toEqual(a.expertTensors.map((t) => t.name));
    expect(new Set(b.expertTensors.map((t) => t.shard)).size).toBeGreaterThan(1);

    if (splitTool) {
      await run(SPLIT_TOOL, ['--split-max-size', '3M', single, join(tmp.dir, 'llama')], { timeout: 60_000 });
      const theirs = (await readdir(tmp.dir)).filter((n) => n.startsWith('llama-')).sort();
      expect(theirs).toEqual([0, 1, 2, 3].map((k) => splitPath('llama', k, 4)));
      for (let k = 0; k < 4; k++) expect((await readFile(join(tmp.dir, theirs[k]!))).equals(shards[k]!), `shard ${k + 1}`).toBe(true);
    }
  });

  it('a split size below the first tensor is refused, and nothing is written', async () => {
    await expect(makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'small', 'm.gguf'), splitMaxBytes: 1000 })).rejects.toThrow(/smaller than tensor .*no tensor/);
    expect(existsSync(join(tmp.dir, 'small', 'm-00001-of-00001.gguf'))).toBe(false);
  });

  it('a model that fits in one shard is one -00001-of-00001 file, read as a single file', async () => {
    const made = await makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'whole.gguf'), splitMaxBytes: 1e9 });
    expect(made.path).toBe(join(tmp.dir, 'whole-00001-of-00001.gguf'));
    expect((await readGgufModel(made.path)).shards).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------
// Bad shard sets, from FIXTURE_SPEC split 3 ways (3, 1 and 2 tensors) at 75000 bytes.

const MAX = 75_000;
let n = 0;
const pattern = (t: GgufTensorInfo, i: number): Uint8Array[] => [patternBytes(t, i)];

/** A fresh split fixture: its directory, prefix, first shard and shard layouts. */
async function fixture(): Promise<{ prefix: string; first: string; layouts: GgufLayout[]; path: (k: number) => string }> {
  const prefix = join(tmp.dir, `fx${n++}`, 'model');
  await mkdir(join(prefix, '..'));
  const layout = layoutGguf(FIXTURE_SPEC);
  const made = await writeGgufSplit(prefix, layout, MAX, pattern);
  expect(made.shards).toHaveLength(3);
  return { prefix, first: made.path, layouts: layoutSplit(layout, prefix, MAX), path: (k) => splitPath(prefix, k, 3) };
}

/** Rewrite shard k with its metadata (and optionally its tensors) edited. */
async function rewrite(layout: GgufLayout, edit: (kv: Map<string, GgufValue>) => void, tensors = layout.tensors): Promise<void> {
  const kv = new Map([...layout.kv].filter(([k]) => k !== 'general.alignment'));
  edit(kv);
  await writeGguf(layout.path, { kv, tensors, alignmentKey: layout.kv.has('general.alignment') }, pattern);
}

async function refusal(first: string): Promise<string> {
  const err = await readGgufModel(first).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GgufError);
  const msg = (err as GgufError).message;
  expect(msg).not.toMatch(/\n/);
  return msg;
}

describe('readGgufModel refuses a bad set of shards in one line naming the file', () => {
  it('reads the good one: every shard, the sum of their sizes', async () => {
    const f = await fixture();
    const m = await readGgufModel(f.first);
    expect(m.shards.map((s) => s.tensorCount)).toEqual([3, 1, 2]);
    expect(m.tensors.map((t) => t.shard)).toEqual([0, 0, 0, 1, 2, 2]);
    expect(m.fileSize).toBe(m.shards.reduce((s, x) => s + x.fileSize, 0));
  });

  it('a later shard given: names the first shard to use', async () => {
    const f = await fixture();
    expect(await refusal(f.path(1))).toBe(`${f.path(1)}: this is shard 2 of 3 of a split model: load the model by its first shard, ${f.first}`);
  });

  it('a missing shard: names the missing file and which shard it is', async () => {
    const f = await fixture();
    await rm(f.path(2));
    expect(await refusal(f.first)).toBe(`${f.path(2)}: missing: no such file (shard 3 of 3 of ${f.first})`);
  });

  it('a shard whose split.count differs', async () => {
    const f = await fixture();
    await rewrite(f.layouts[1]!, (kv) => kv.set('split.count', gv.u16(4)));
    expect(await refusal(f.first)).toMatch(new RegExp(`^${f.path(1)}: split\\.count is 4, the first shard's is 3 \\(shard 2 of 3 of .*\\): a shard of another model\\? \\(at byte \\d+\\)$`));
  });

  it('a shard whose split.no is not its position', async () => {
    const f = await fixture();
    await rewrite(f.layouts[2]!, (kv) => kv.set('split.no', gv.u16(1)));
    expect(await refusal(f.first)).toMatch(new RegExp(`^${f.path(2)}: split\\.no is 1 \\(shard 2\\), expected 2 at this position`));
  });

  it('a shard of another model: other split.tensors.count, other architecture, a repeated tensor, tensors that do not add up', async () => {
    const f = await fixture();
    await rewrite(f.layouts[1]!, (kv) => kv.set('split.tensors.count', gv.i32(7)));
    expect(await refusal(f.first)).toMatch(new RegExp(`^${f.path(1)}: split\\.tensors\\.count is 7, the first shard's is 6 .*another model`));

    const g = await fixture();
    await rewrite(g.layouts[2]!, (kv) => kv.set('general.architecture', gv.str('llama')));
    expect(await refusal(g.first)).toMatch(new RegExp(`^${g.path(2)}: general\\.architecture is "llama", the first shard's is "qwen3moe"`));

    const h = await fixture();
    const dup = h.layouts[1]!.tensors.map((t, i) => (i === 0 ? { ...t, name: 'token_embd.weight', dims: [256, 10], type: FIXTURE_SPEC.tensors[0]!.type } : t));
    await rewrite(h.layouts[1]!, () => undefined, dup);
    expect(await refusal(h.first)).toMatch(new RegExp(`^${h.path(1)}: tensor token_embd\\.weight is also in shard 1 \\(${h.first}\\): a shard of another model\\?`));

    const k = await fixture();
    await rewrite(k.layouts[2]!, () => undefined, k.layouts[2]!.tensors.slice(0, 1));
    expect(await refusal(k.first)).toBe(`${k.first}: split.tensors.count is 6 but the 3 shards hold 5 tensors: a shard of another model?`);
  });

  it('a truncated shard (tensor data past its end), as readGguf reports a truncated file', async () => {
    const f = await fixture();
    await truncate(f.path(1), f.layouts[1]!.fileSize - 100);
    expect(await refusal(f.first)).toMatch(new RegExp(`^${f.path(1)}: truncated: tensor blk\\.0\\.ffn_up_exps\\.weight data ends at byte`));
  });

  it('a first shard not named -00001-of-0000N.gguf: says how llama.cpp finds the others', async () => {
    const f = await fixture();
    const renamed = join(f.prefix, '..', 'model.gguf');
    await rename(f.first, renamed);
    expect(await refusal(renamed)).toBe(
      `${renamed}: this is the first of 3 shards of a split model, but its name does not end in -00001-of-00003.gguf: the other shards are found by that name (rename the shards as llama-gguf-split names them)`,
    );
  });

  it('a later shard under another name: still names the first shard', async () => {
    const f = await fixture();
    const renamed = join(f.prefix, '..', 'part2.gguf');
    await rename(f.path(1), renamed);
    expect(await refusal(renamed)).toBe(`${renamed}: this is shard 2 of 3 of a split model: load the model by its first shard (named ...-00001-of-00003.gguf)`);
  });
});
