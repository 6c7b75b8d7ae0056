// The hybrid-architecture presets: Qwen3.6-35B-A3B (qwen35moe) and DeepSeek-V4-Flash (deepseek4)
// in their real shapes (planned, not written: 21 and 155 GB), and their mini variants on disk.
// What llama.cpp itself makes of the files is in llama.test.ts and the CLI's
// presets-new-archs.test.ts.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GgmlType, describeModel, getPreset, listPresets, makeModel, planModel, readGguf, type GgufFile } from '../src/index.js';
import { useMoreBits } from '../src/synth/quantmix.js';
import { kvNumber, kvString } from '../src/values.js';
import { planRealShape, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const type = (plan: ReturnType<typeof planModel>, name: string): GgmlType | undefined => plan.tensors.find((t) => t.name === name)?.type;
const dims = (plan: ReturnType<typeof planModel>, name: string): readonly number[] | undefined => plan.tensors.find((t) => t.name === name)?.dims;
const kvArr = (f: GgufFile, key: string): unknown => f.kv.get(key)?.value;

describe('hybrid presets: real shapes', () => {
  it('are listed with sources, and the small variants are mini-*, not tiny-*', () => {
    const names = listPresets().map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['qwen3.6-35b-a3b', 'deepseek-v4-flash', 'mini-qwen35moe', 'mini-deepseek4']));
    expect(names.filter((n) => n.startsWith('tiny-'))).toEqual(['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4']);
    for (const n of ['qwen3.6-35b-a3b', 'deepseek-v4-flash']) {
      expect(getPreset(n).source).toMatch(/config\.json/);
      expect(getPreset(n).notes).toMatch(/unverified/);
    }
  });

  it('qwen3.6-35b-a3b: 40 layers (3 DeltaNet : 1 gated attention), 256 experts top-8 + shared, ~21 GB at Q4_K_M', () => {
    const shape = { architecture: 'qwen35moe', layers: 40, experts: 256, expertsUsed: 8, embeddingLength: 2048, vocabSize: 248320 };
    const { plan, s } = planRealShape('qwen3.6-35b-a3b', shape, [20.5, 22]);
    // Q4_K gate/up: 512 rows of 2048; Q6_K down on use_more_bits layers: 2048 rows of 512.
    expect(s.expertSliceBytes).toEqual({ gate: 512 * 8 * 144, up: 512 * 8 * 144, down: 2048 * 2 * 210 });
    const full = Array.from({ length: 40 }, (_, i) => i).filter((i) => plan.tensors.some((t) => t.name === `blk.${i}.attn_q.weight`));
    expect(full).toEqual([3, 7, 11, 15, 19, 23, 27, 31, 35, 39]);
    expect(plan.tensors.filter((t) => t.name.endsWith('.attn_qkv.weight'))).toHaveLength(30);
    expect(dims(plan, 'blk.0.attn_qkv.weight')).toEqual([2048, 2 * 16 * 128 + 32 * 128]);
    expect(dims(plan, 'blk.0.ssm_conv1d.weight')).toEqual([4, 8192]);
    expect(dims(plan, 'blk.3.attn_q.weight')).toEqual([2048, 2 * 16 * 256]); // query + output gate per head
    expect(dims(plan, 'blk.3.attn_k.weight')).toEqual([2048, 2 * 256]);
    expect(dims(plan, 'blk.0.ffn_down_shexp.weight')).toEqual([512, 2048]);
    // llama-quantize counts attn_qkv and attn_v together (category_is_attn_v) for Q4_K_M's Q6_K layers.
    const attnV = plan.tensors.filter((t) => /\.attn_(qkv|v)\.weight$/.test(t.name));
    expect(attnV.map((t) => t.type)).toEqual(attnV.map((_, i) => (useMoreBits(i, 40) ? GgmlType.Q6_K : GgmlType.Q4_K)));
    expect(type(plan, 'blk.0.ssm_conv1d.weight')).toBe(GgmlType.F32);
    expect(type(plan, 'blk.0.ssm_a')).toBe(GgmlType.F32);
    expect(type(plan, 'blk.0.ffn_gate_inp_shexp.weight')).toBe(GgmlType.F32);
    expect(type(plan, 'output.weight')).toBe(GgmlType.Q6_K);
    const kv = plan.layout.kv;
    expect(kvNumber(kv, 'qwen35moe.full_attention_interval')).toBe(4);
    expect(kvNumber(kv, 'qwen35moe.ssm.inner_size')).toBe(4096);
    expect(kvNumber(kv, 'qwen35moe.ssm.group_count')).toBe(16);
    expect(kvNumber(kv, 'qwen35moe.ssm.time_step_rank')).toBe(32);
    expect(kvNumber(kv, 'qwen35moe.rope.dimension_count')).toBe(64);
    expect(kv.get('qwen35moe.rope.dimension_sections')?.value).toEqual([11, 11, 10, 0]);
    expect(kv.has('qwen35moe.attention.recurrent_layers')).toBe(false);
  });

  it('qwen3.6-35b-a3b with fewer layers than the interval makes its last layer full attention and says so', () => {
    const plan = planModel({ preset: 'qwen3.6-35b-a3b', layers: 2 });
    expect(plan.tensors.some((t) => t.name === 'blk.1.attn_q.weight')).toBe(true);
    expect(plan.tensors.some((t) => t.name === 'blk.0.attn_qkv.weight')).toBe(true);
    expect(plan.layout.kv.get('qwen35moe.attention.recurrent_layers')?.value).toEqual([1, 0]);
  });

  it('deepseek-v4-flash: 43 layers, hash-routed first 3, 4 hc streams, MXFP4 experts, ~155 GB', () => {
    const shape = { architecture: 'deepseek4', layers: 43, experts: 256, expertsUsed: 6, embeddingLength: 4096, vocabSize: 129280 };
    const { plan, s } = planRealShape('deepseek-v4-flash', shape, [150, 160]);
    expect(s.expertSliceBytes).toEqual({ gate: 2048 * 128 * 17, up: 2048 * 128 * 17, down: 4096 * 64 * 17 });
    expect(new Set(Object.keys(s.quantTypes))).toEqual(new Set(['F32', 'I32', 'Q8_0', 'MXFP4']));
    const ratios = plan.layout.kv.get('deepseek4.attention.compress_ratios')?.value as number[];
    expect(ratios).toEqual([0, 0, ...Array.from({ length: 20 }, () => [4, 128]).flat(), 4]);
    for (let i = 0; i < 43; i++) {
      const hash = plan.tensors.some((t) => t.name === `blk.${i}.ffn_gate_tid2eid.weight`);
      expect(hash, `layer ${i}`).toBe(i < 3);
      expect(plan.tensors.some((t) => t.name === `blk.${i}.exp_probs_b.bias`), `layer ${i}`).toBe(i >= 3);
      expect(plan.tensors.some((t) => t.name === `blk.${i}.indexer.proj.weight`), `layer ${i}`).toBe(ratios[i] === 4);
    }
    expect(type(plan, 'blk.0.ffn_gate_tid2eid.weight')).toBe(GgmlType.I32);
    expect(dims(plan, 'blk.0.ffn_gate_tid2eid.weight')).toEqual([6, 129280]);
    expect(dims(plan, 'blk.0.attn_q_b.weight')).toEqual([1024, 64 * 512]);
    expect(dims(plan, 'blk.0.attn_output_a.weight')).toEqual([4096, 8192]); // 2-D as converted; llama.cpp reshapes per group
    expect(dims(plan, 'blk.0.hc_attn_fn.weight')).toEqual([4 * 4096, 24]);
    expect(dims(plan, 'blk.2.attn_compressor_ape.weight')).toEqual([1024, 4]);
    expect(dims(plan, 'blk.3.attn_compressor_ape.weight')).toEqual([512, 128]);
    expect(type(plan, 'blk.0.hc_attn_fn.weight')).toBe(GgmlType.F32);
    expect(type(plan, 'output.weight')).toBe(GgmlType.Q8_0);
    expect(kvNumber(plan.layout.kv, 'deepseek4.expert_gating_func')).toBe(4);
    expect(kvNumber(plan.layout.kv, 'deepseek4.hash_layer_count')).toBe(3);
    expect(kvNumber(plan.layout.kv, 'deepseek4.embedding_length_out')).toBe(4 * 4096);
  });

  it('deepseek4 needs one layer of each compressed kind: --layers 1 is refused, 2 and 3 end in 4, 128', () => {
    expect(() => planModel({ preset: 'deepseek-v4-flash', layers: 1 })).toThrow(/at least 2 layers/);
    expect(planModel({ preset: 'deepseek-v4-flash', layers: 2 }).layout.kv.get('deepseek4.attention.compress_ratios')?.value).toEqual([4, 128]);
    expect(planModel({ preset: 'deepseek-v4-flash', layers: 3 }).layout.kv.get('deepseek4.attention.compress_ratios')?.value).toEqual([0, 4, 128]);
    expect(kvNumber(planModel({ preset: 'deepseek-v4-flash', layers: 2 }).layout.kv, 'deepseek4.hash_layer_count')).toBe(2);
  });
});

describe('hybrid presets: mini variants on disk', () => {
  const files = new Map<string, GgufFile>();
  beforeAll(async () => {
    for (const preset of ['mini-qwen35moe', 'mini-deepseek4']) {
      const path = join(tmp.dir, `${preset}.gguf`);
      await makeModel({ preset, out: path, routerSkew: 1 });
      files.set(preset, await readGguf(path));
    }
  });

  it('describe as their preset, a few MB, every tensor as planned', () => {
    for (const [preset, f] of files) {
      const p = getPreset(preset).shape;
      expect(describeModel(f)).toMatchObject({ architecture: p.arch, layers: p.nLayer, experts: p.nExpert, expertsUsed: p.nExpertUsed, embeddingLength: p.nEmbd });
      expect(f.fileSize / 1e6).toBeLessThan(16);
      const plan = planModel({ preset, routerSkew: 1 });
      expect(f.tensors.map((t) => [t.name, t.type, t.dims])).toEqual(plan.tensors.map((t) => [t.name, t.type, t.dims]));
    }
  });

  it('mini-qwen35moe: 3 DeltaNet layers then 1 gated attention; a qwen35 tokenizer and an XML tool-call template', () => {
    const f = files.get('mini-qwen35moe')!;
    expect([0, 1, 2, 3].map((i) => f.tensors.some((t) => t.name === `blk.${i}.attn_qkv.weight`))).toEqual([true, true, true, false]);
    expect(kvString(f.kv, 'tokenizer.ggml.pre')).toBe('qwen35');
    expect(kvString(f.kv, 'tokenizer.chat_template')).toContain('<parameter=');
  });

  it('mini-deepseek4: hash table of k distinct experts per token, skewed toward the popular ones', async () => {
    const f = files.get('mini-deepseek4')!;
    expect(kvString(f.kv, 'tokenizer.ggml.pre')).toBe('deepseek-v3');
    expect(kvString(f.kv, 'tokenizer.chat_template')).toContain('dsml_token');
    expect(kvArr(f, 'deepseek4.attention.compress_ratios')).toEqual([0, 0, 4, 128]);
    const t = f.tensors.find((x) => x.name === 'blk.0.ffn_gate_tid2eid.weight')!;
    const { open } = await import('node:fs/promises');
    const fh = await open(f.path, 'r');
    const buf = Buffer.alloc(t.bytes);
    await fh.read(buf, 0, t.bytes, t.offset);
    await fh.close();
    const ids = new Int32Array(Uint8Array.from(buf).buffer);
    const k = t.dims[0]!;
    const counts = new Array<number>(16).fill(0);
    for (let row = 0; row < t.dims[1]!; row++) {
      const experts = ids.subarray(row * k, row * k + k);
      expect(new Set(experts).size).toBe(k);
      for (const e of experts) counts[e]!++;
    }
    expect(Math.min(...ids)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...ids)).toBeLessThan(16);
    counts.sort((a, b) => b - a);
    expect(counts[0]! / counts[15]!).toBeGreaterThan(2); // Zipf skew 1 over 16 experts
  });
});
