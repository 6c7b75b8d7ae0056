// Headers that claim more than they hold, values of the wrong type, shapes llama.cpp aborts on
// (issue 13, findings 1, 2 and 9): each ends in a one-line GgufError naming the file, or in a
// description that cost memory bounded by what it describes.
import { readFileSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GgmlType, GgufError, GgufValueType, MAX_STRING_ITEMS, checkLlamaLimits, describeModel, gv, layoutGguf, listPresets, makeModel, planModel, readGguf, type GgufFile } from '../src/index.js';
import { SHAPE_KV, kvAt, kvTypeAt, tempDir, tensorTypeAt, withScalar, withU32, writeSparseArray } from './helpers.js';

const tmp = tempDir('bmoe-gguf-hostile-');
const PRESETS = ['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4'] as const;
const fixtures = new Map<string, Buffer>();

beforeAll(async () => {
  for (const preset of PRESETS) {
    const path = join(tmp.dir, `${preset}.gguf`);
    await makeModel({ preset, out: path });
    fixtures.set(preset, readFileSync(path));
  }
});
afterAll(() => tmp.cleanup());

let n = 0;
function file(bytes: Buffer | Uint8Array): string {
  const p = join(tmp.dir, `case-${n++}.gguf`);
  writeFileSync(p, bytes);
  return p;
}
function qwen(): Buffer {
  return fixtures.get('tiny-qwen3moe')!;
}

async function failure(p: Promise<unknown> | (() => unknown)): Promise<GgufError> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(GgufError);
  const e = err as GgufError;
  expect(e.message).not.toMatch(/[\r\n]/);
  return e;
}

async function limitsOf(path: string): Promise<GgufError> {
  const header = await readGguf(path);
  const e = await failure(() => checkLlamaLimits(header));
  expect(e.message.startsWith(`${path}: `)).toBe(true);
  return e;
}

describe('finding 2: memory follows what the header describes, not what it claims', () => {
  it('a 400M-item array in a sparse file is described, not loaded', async () => {
    const path = join(tmp.dir, 'sparse-u8.gguf');
    writeSparseArray(path, SHAPE_KV, 'tokenizer.ggml.token_type', GgufValueType.UINT8, 400_000_000);
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const header = await readGguf(path);
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(32 << 20);
    expect(header.kv.has('tokenizer.ggml.token_type')).toBe(false);
    expect(header.entries?.get('tokenizer.ggml.token_type')).toMatchObject({ type: GgufValueType.ARRAY, itemType: GgufValueType.UINT8, length: 400_000_000, loaded: false });
    expect(describeModel(header).experts).toBe(8);
    const e = await failure(() => checkLlamaLimits(header));
    expect(e.message).toMatch(/tokenizer\.ggml\.token_type holds 400000000 items, more than bmoe reads/);
  });

  it('a tokenizer table of 8M strings is walked, not loaded, and still gives the vocabulary size', async () => {
    const path = join(tmp.dir, 'sparse-str.gguf');
    writeSparseArray(path, SHAPE_KV, 'tokenizer.ggml.tokens', GgufValueType.STRING, 8_000_000);
    const heap0 = process.memoryUsage().heapUsed;
    const t0 = performance.now();
    const header = await readGguf(path);
    expect(performance.now() - t0).toBeLessThan(5000);
    expect(process.memoryUsage().heapUsed - heap0).toBeLessThan(32 << 20);
    expect(header.entries?.get('tokenizer.ggml.tokens')).toMatchObject({ length: 8_000_000, loaded: false });
    expect(describeModel(header).vocabSize).toBe(8_000_000);
  });

  it('a table of 400M strings is refused at once, without walking it', async () => {
    const path = join(tmp.dir, 'sparse-str-huge.gguf');
    writeSparseArray(path, SHAPE_KV, 'tokenizer.ggml.tokens', GgufValueType.STRING, 400_000_000);
    const t0 = performance.now();
    const e = await failure(readGguf(path));
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(e.message).toMatch(new RegExp(`^${path}: array "tokenizer\\.ggml\\.tokens" claims 400000000 strings, more than the ${MAX_STRING_ITEMS} bmoe reads`));
  });

  it('a budget smaller than a table leaves it described; the rest still loads', async () => {
    const path = file(qwen());
    const header = await readGguf(path, { maxStringBytes: 4096 });
    const tokens = header.entries?.get('tokenizer.ggml.tokens');
    expect(tokens).toMatchObject({ length: 2048, loaded: false });
    expect(header.kv.has('tokenizer.ggml.tokens')).toBe(false);
    expect(header.kv.get('qwen3moe.expert_count')?.value).toBe(16);
    expect(describeModel(header).vocabSize).toBe(2048);
    const full = await readGguf(path);
    expect(full.entries?.get('tokenizer.ggml.tokens')?.loaded).toBe(true);
    expect(full.tensors).toEqual(header.tensors);
  });

  it('a 1 GiB string value is skipped; a 1 GiB key or tensor name is refused before it is read', async () => {
    const kv = SHAPE_KV.map(([k, v]) => [k, v] as const);
    const path = join(tmp.dir, 'sparse-string.gguf');
    writeSparseArray(path, kv, 'tokenizer.chat_template', GgufValueType.UINT8, 0);
    // Turn the trailing empty array into a string value claiming 1 GiB.
    const bytes = readFileSync(path);
    const at = kvTypeAt(bytes, 'tokenizer.chat_template');
    bytes.writeUInt32LE(GgufValueType.STRING, at);
    bytes.writeBigUInt64LE(1n << 30n, at + 4);
    writeFileSync(path, bytes.subarray(0, at + 12));
    truncateSync(path, at + 12 + (1 << 30));
    const header = await readGguf(path);
    expect(header.entries?.get('tokenizer.chat_template')).toMatchObject({ type: GgufValueType.STRING, length: 1 << 30, loaded: false });

    const key = Buffer.from(qwen());
    key.writeBigUInt64LE(1n << 29n, kvAt(key, 'general.architecture'));
    const keyPath = file(key);
    truncateSync(keyPath, 1 << 30);
    expect((await failure(readGguf(keyPath))).message).toMatch(/key 1 is 536870912 bytes long, GGUF allows at most 65535/);
  });
});

describe('finding 9: truncation and wrong types, named', () => {
  it('a header cut at byte 30 is truncated, not an absurd count', async () => {
    const path = file(qwen().subarray(0, 30));
    const e = await failure(readGguf(path));
    expect(e.message.startsWith(`${path}: truncated: the header ends early`)).toBe(true);
    expect(e.message).toMatch(/the file ends at byte 30/);
    expect(e.message).not.toMatch(/absurd/);
  });

  it('a float expert_used_count is a one-line error naming the file, the key and the type', async () => {
    const bytes = withScalar(qwen(), 'qwen3moe.expert_used_count', GgufValueType.FLOAT32, (b, at) => b.writeFloatLE(2.5, at));
    const path = file(bytes);
    const header = await readGguf(path);
    const e = await failure(() => describeModel(header));
    expect(e.message).toMatch(new RegExp(`^${path}: qwen3moe\\.expert_used_count is 2\\.5 \\(float32\\)`));
    expect((await limitsOf(path)).message).toMatch(/qwen3moe\.expert_used_count is a float32 \(2\.5\), but llama\.cpp reads it as a uint32/);
  });
});

describe('finding 1: shapes the pinned llama.cpp asserts on are refused before any native load', () => {
  it('the tiny presets pass, and so do the real shapes of every preset', async () => {
    for (const preset of PRESETS) checkLlamaLimits(await readGguf(file(fixtures.get(preset)!)));
    for (const { name } of listPresets()) checkLlamaLimits(planModel({ preset: name }).layout);
  });

  it('expert_count 1,000,000,000 (LLAMA_MAX_EXPERTS is 1024)', async () => {
    const path = file(withU32(qwen(), 'qwen3moe.expert_count', 1_000_000_000));
    const e = await limitsOf(path);
    expect(e.message).toMatch(/: qwen3moe\.expert_count is 1000000000, llama\.cpp allows at most 1024 \(at byte \d+\)$/);
    expect(e.offset).toBe(kvAt(qwen(), 'qwen3moe.expert_count'));
  });

  it('block_count 0 or above LLAMA_MAX_LAYERS', async () => {
    expect((await limitsOf(file(withU32(qwen(), 'qwen3moe.block_count', 0)))).message).toMatch(/block_count is 0, llama\.cpp allows 1 to 512/);
    expect((await limitsOf(file(withU32(qwen(), 'qwen3moe.block_count', 513)))).message).toMatch(/block_count is 513/);
  });

  it('expert_used_count above expert_count, or 0 with experts', async () => {
    expect((await limitsOf(file(withU32(qwen(), 'qwen3moe.expert_used_count', 17)))).message).toMatch(/expert_used_count is 17, more than expert_count 16/);
    expect((await limitsOf(file(withU32(qwen(), 'qwen3moe.expert_used_count', 0)))).message).toMatch(/expert_used_count is 0/);
  });

  it('a rope scaling type llama.cpp does not know', async () => {
    const bytes = Buffer.from(fixtures.get('tiny-gpt-oss')!);
    const at = kvTypeAt(bytes, 'gpt-oss.rope.scaling.type') + 4 + 8;
    bytes.write('yarX', at, 'latin1');
    expect((await limitsOf(file(bytes))).message).toMatch(/gpt-oss\.rope\.scaling\.type is "yarX", llama\.cpp knows none, linear, yarn, longrope/);
  });

  it('gemma4 key and value head sizes that differ', async () => {
    const path = file(withU32(fixtures.get('tiny-gemma4')!, 'gemma4.attention.value_length', 64));
    expect((await limitsOf(path)).message).toMatch(/gemma4\.attention\.key_length is 128 but attention\.value_length is 64/);
  });

  it('a NaN or negative norm epsilon (ggml: GGML_ASSERT(eps >= 0.0f))', async () => {
    const nan = withScalar(fixtures.get('tiny-gemma4')!, 'gemma4.attention.layer_norm_rms_epsilon', GgufValueType.FLOAT32, (b, at) => b.writeUInt32LE(0xffffffff, at));
    expect((await limitsOf(file(nan))).message).toMatch(/gemma4\.attention\.layer_norm_rms_epsilon is NaN; ggml's norms need an epsilon >= 0/);
    const neg = withScalar(qwen(), 'qwen3moe.attention.layer_norm_rms_epsilon', GgufValueType.FLOAT32, (b, at) => b.writeFloatLE(-1, at));
    expect((await limitsOf(file(neg))).message).toMatch(/layer_norm_rms_epsilon is -1/);
  });

  it('sliding-window patterns with no sliding-window layer, and gemma4 KV sharing that leaves < 2 layers', async () => {
    const gptOss = (pattern: number): GgufFile =>
      layoutGguf({
        kv: [
          ['general.architecture', gv.str('gpt-oss')],
          ['gpt-oss.block_count', gv.u32(4)],
          ['gpt-oss.expert_count', gv.u32(8)],
          ['gpt-oss.expert_used_count', gv.u32(4)],
          ['gpt-oss.attention.sliding_window_pattern', gv.u32(pattern)],
        ],
        tensors: [],
      }, 'gpt-oss.gguf');
    checkLlamaLimits(gptOss(2));
    checkLlamaLimits(gptOss(0));
    expect((await failure(() => checkLlamaLimits(gptOss(1)))).message).toMatch(/^gpt-oss\.gguf: gpt-oss\.attention\.sliding_window_pattern is 1, which makes no layer sliding-window/);
    const gemma = fixtures.get('tiny-gemma4')!;
    expect((await limitsOf(file(withU32(gemma, 'gemma4.attention.shared_kv_layers', 5)))).message).toMatch(/shared_kv_layers is 5, which leaves 1 layers with their own KV/);
    expect((await limitsOf(file(withU32(gemma, 'gemma4.attention.shared_kv_layers', 0x80000000)))).message).toMatch(/shared_kv_layers is 2147483648/);
    const flags = Buffer.from(gemma);
    flags.fill(0, kvTypeAt(flags, 'gemma4.attention.sliding_window_pattern') + 4 + 4 + 8, kvTypeAt(flags, 'gemma4.attention.sliding_window_pattern') + 4 + 4 + 8 + 6);
    expect((await limitsOf(file(flags))).message).toMatch(/sliding_window_pattern marks no layer sliding-window/);
  });

  it('rope dimensions beyond the head, or odd', async () => {
    const gemma = fixtures.get('tiny-gemma4')!;
    expect((await limitsOf(file(withU32(gemma, 'gemma4.rope.dimension_count_swa', 1000)))).message).toMatch(
      /gemma4\.rope\.dimension_count_swa is 1000: rope needs an even count of at most the head size 64/,
    );
    expect((await limitsOf(file(withU32(gemma, 'gemma4.rope.dimension_count', 127)))).message).toMatch(/dimension_count is 127/);
  });

  it('a BOS the prompt needs that does not exist (gemma4 has no default), but not where a default is valid', async () => {
    const gemma = fixtures.get('tiny-gemma4')!;
    expect((await limitsOf(file(withU32(gemma, 'tokenizer.ggml.bos_token_id', 99_999)))).message).toMatch(
      /tokenizer\.ggml\.bos_token_id is 99999, outside the vocabulary of 2048 tokens, but prompts start with it/,
    );
    // qwen3moe's gpt2 tokenizer falls back to id 11, so llama.cpp carries on.
    checkLlamaLimits(await readGguf(file(withU32(qwen(), 'tokenizer.ggml.bos_token_id', 99_999))));
  });

  it('tensor types ggml-cpu aborts or crashes on', async () => {
    const retype = (preset: string, name: string, type: GgmlType): string => {
      const bytes = Buffer.from(fixtures.get(preset)!);
      const dims = name.endsWith('exps.bias') ? 2 : 1;
      const at = tensorTypeAt(bytes, name, dims);
      bytes.writeUInt32LE(type, at);
      return file(bytes);
    };
    expect((await limitsOf(retype('tiny-qwen3moe', 'blk.0.attn_norm.weight', GgmlType.I32))).message).toMatch(
      /tensor "blk\.0\.attn_norm\.weight" has type I32: llama\.cpp's CPU backend cannot compute with it/,
    );
    expect((await limitsOf(retype('tiny-gpt-oss', 'blk.0.attn_sinks.weight', GgmlType.F16))).message).toMatch(/attn_sinks\.weight" has type F16: a 1-D tensor must be F32/);
    expect((await limitsOf(retype('tiny-gpt-oss', 'blk.0.ffn_up_exps.bias', GgmlType.BF16))).message).toMatch(/ffn_up_exps\.bias" has type BF16: expert biases must be F32/);
  });

  it('two vocabulary tokens alike', async () => {
    const bytes = Buffer.from(qwen());
    const header: GgufFile = await readGguf(file(bytes));
    const tokens = header.kv.get('tokenizer.ggml.tokens')!.value as string[];
    // Make token 300 equal to token 299 when both have the same length: overwrite its bytes.
    const i = tokens.findIndex((t, j) => j > 256 && Buffer.byteLength(t) === Buffer.byteLength(tokens[j - 1]!) && t !== tokens[j - 1]);
    let at = kvTypeAt(bytes, 'tokenizer.ggml.tokens') + 4 + 4 + 8; // type, item type, count
    for (let j = 0; j < i; j++) at += 8 + Number(bytes.readBigUInt64LE(at));
    Buffer.from(tokens[i - 1]!).copy(bytes, at + 8);
    expect((await limitsOf(file(bytes))).message).toMatch(new RegExp(`tokenizer\\.ggml\\.tokens has token ${i} equal to token ${i - 1}`));
  });
});
