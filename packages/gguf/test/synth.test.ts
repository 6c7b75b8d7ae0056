import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GgmlType,
  decode,
  describeModel,
  expertRanks,
  getPreset,
  listPresets,
  makeModel,
  planModel,
  plantedSuccessors,
  readGguf,
  tensorBytes,
  type ExpertProj,
  type GgufFile,
  type ModelShape,
} from '../src/index.js';
import { randomBlockWriter } from '../src/synth/fill.js';
import { blockKey, streamKey } from '../src/synth/prng.js';
import { useMoreBits } from '../src/synth/quantmix.js';
import { ggmlType } from '../src/types.js';
import { kvNumber, kvString } from '../src/values.js';
import { planRealShape, tempDir } from './helpers.js';

const tmp = tempDir();
afterAll(() => tmp.cleanup());

const TINY = ['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4'] as const;
const files = new Map<string, { path: string; sha256: string; header: GgufFile; shape: ModelShape }>();

beforeAll(async () => {
  for (const preset of TINY) {
    const path = join(tmp.dir, `${preset}.gguf`);
    const res = await makeModel({ preset, out: path });
    const header = await readGguf(path);
    files.set(preset, { path, sha256: res.sha256, header, shape: describeModel(header) });
  }
});

/** Expected per-projection slice bytes of one expert in `layer`, from the plan's types. */
function expectedSlices(preset: string, layer: number): Partial<Record<ExpertProj, number>> {
  const plan = planModel({ preset });
  const out: Partial<Record<ExpertProj, number>> = {};
  for (const t of plan.tensors) {
    const m = /^blk\.(\d+)\.ffn_(gate|up|down|gate_up)_exps\.weight$/.exec(t.name);
    if (m && Number(m[1]) === layer) out[m[2] as ExpertProj] = tensorBytes(t.type, t.dims) / t.dims[2]!;
  }
  return out;
}

describe('presets', () => {
  it('lists every preset with arch, shape, default quant and a source', () => {
    const names = listPresets().map((p) => p.name);
    expect(names).toEqual(
      expect.arrayContaining(['qwen3-30b-a3b', 'gpt-oss-20b', 'gpt-oss-120b', 'gemma-4-26b-a4b', 'tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4', 'demo-qwen3moe']),
    );
    for (const p of listPresets()) {
      expect(p.source.length).toBeGreaterThan(10);
      expect(['q4_k_m', 'mxfp4_moe']).toContain(p.defaultQuant);
    }
    expect(() => getPreset('nope')).toThrow(/unknown preset "nope"; known: qwen3-30b-a3b/);
  });

  it('qwen3-30b-a3b has the real shape and ~18.5 GB at Q4_K_M', () => {
    const { s } = planRealShape('qwen3-30b-a3b', { architecture: 'qwen3moe', layers: 48, experts: 128, expertsUsed: 8, embeddingLength: 2048, vocabSize: 151936 }, [18.2, 18.9]);
    // Q4_K gate/up: 768 rows of 2048 → 768 × 8 blocks × 144 B
    expect(s.expertSliceBytes.gate).toBe(768 * 8 * 144);
    expect(s.expertSliceBytes.up).toBe(768 * 8 * 144);
    // Q6_K down on use_more_bits layers: 2048 rows of 768 → 2048 × 3 × 210 B
    expect(s.expertSliceBytes.down).toBe(2048 * 3 * 210);
    expect(s.layerExperts.filter((l) => l.sliceBytes.down === 2048 * 3 * 210).map((l) => l.layer)).toEqual(
      Array.from({ length: 48 }, (_, i) => i).filter((i) => useMoreBits(i, 48)),
    );
  });

  it('qwen3-30b-a3b with layers 2 keeps every other dimension', () => {
    const s = describeModel(planModel({ preset: 'qwen3-30b-a3b', layers: 2 }).layout);
    expect(s).toMatchObject({ layers: 2, experts: 128, expertsUsed: 8, embeddingLength: 2048, vocabSize: 151936 });
    expect(s.layerExperts).toHaveLength(2);
    expect(s.layerExperts[0]!.sliceBytes).toEqual({ gate: 884736, up: 884736, down: 2048 * 3 * 210 });
    expect(s.layerExperts[1]!.sliceBytes).toEqual({ gate: 884736, up: 884736, down: 2048 * 3 * 144 });
    expect(s.expertTensors).toHaveLength(6);
    expect(s.workingSetBytes()).toBe(8 * (884736 * 2 + 2048 * 3 * 210) + 8 * (884736 * 2 + 2048 * 3 * 144));
    expect(s.workingSetBytes(1)).toBe(s.workingSetBytes() / 8);
  });

  it('q4_k puts every expert in Q4_K (and output in Q6_K)', () => {
    const plan = planModel({ preset: 'qwen3-30b-a3b', layers: 4, quant: 'q4_k' });
    const s = describeModel(plan.layout);
    expect(new Set(s.expertTensors.map((t) => t.type))).toEqual(new Set([GgmlType.Q4_K]));
    expect(plan.tensors.find((t) => t.name === 'output.weight')!.type).toBe(GgmlType.Q6_K);
    expect(plan.tensors.find((t) => t.name === 'blk.0.attn_v.weight')!.type).toBe(GgmlType.Q4_K);
    expect(plan.tensors.find((t) => t.name === 'blk.0.ffn_gate_inp.weight')!.type).toBe(GgmlType.F32);
    expect(() => planModel({ preset: 'tiny-qwen3moe', quant: 'q2_k' })).toThrow(/unknown quant/);
  });

  it('gpt-oss presets: 24/36 layers, 32/128 experts top-4, MXFP4 experts, Q8_0 elsewhere', () => {
    const s20 = describeModel(planModel({ preset: 'gpt-oss-20b' }).layout);
    expect(s20).toMatchObject({ architecture: 'gpt-oss', layers: 24, experts: 32, expertsUsed: 4, embeddingLength: 2880, vocabSize: 201088 });
    expect(s20.expertSliceBytes).toEqual({ gate: 2880 * 90 * 17, up: 2880 * 90 * 17, down: 2880 * 90 * 17 });
    expect(s20.totalBytes / 1e9).toBeGreaterThan(11.5);
    expect(s20.totalBytes / 1e9).toBeLessThan(12.5);
    const plan120 = planModel({ preset: 'gpt-oss-120b' });
    const s120 = describeModel(plan120.layout);
    expect(s120).toMatchObject({ layers: 36, experts: 128, expertsUsed: 4 });
    expect(new Set(Object.keys(s120.quantTypes))).toEqual(new Set(['F32', 'Q8_0', 'MXFP4']));
    // expert biases are small and count as dense
    expect(plan120.tensors.some((t) => t.name === 'blk.0.ffn_down_exps.bias')).toBe(true);
    expect(s120.expertTensors.every((t) => t.name.endsWith('.weight'))).toBe(true);
  });

  it('gemma-4-26b-a4b: fused gate_up experts, dense MLP beside them, 5:1 sliding pattern', () => {
    const plan = planModel({ preset: 'gemma-4-26b-a4b' });
    const s = describeModel(plan.layout);
    expect(s).toMatchObject({ architecture: 'gemma4', layers: 30, experts: 128, expertsUsed: 8, embeddingLength: 2816, vocabSize: 262144 });
    expect(Object.keys(s.expertSliceBytes).sort()).toEqual(['down', 'gate_up']);
    expect(s.expertSliceBytes.gate_up).toBe(1408 * 11 * 144); // Q4_K, 2·704 rows of 2816
    // 704-wide down projections cannot be K-quants: Q5_0, or Q8_0 where Q4_K_M wants Q6_K
    expect(new Set(s.expertTensors.filter((t) => t.proj === 'down').map((t) => t.type))).toEqual(new Set([GgmlType.Q5_0, GgmlType.Q8_0]));
    expect(plan.tensors.filter((t) => /blk\.\d+\.ffn_(gate|up|down)\.weight/.test(t.name))).toHaveLength(90);
    const pattern = plan.layout.kv.get('gemma4.attention.sliding_window_pattern')!.value as boolean[];
    expect(pattern.filter((x) => !x)).toHaveLength(5);
    expect(pattern.slice(0, 6)).toEqual([true, true, true, true, true, false]);
    // full-attention layers share K and V (no attn_v)
    expect(plan.tensors.some((t) => t.name === 'blk.5.attn_v.weight')).toBe(false);
    expect(plan.tensors.some((t) => t.name === 'blk.4.attn_v.weight')).toBe(true);
    expect(s.totalBytes / 1e9).toBeGreaterThan(16.5);
    expect(s.totalBytes / 1e9).toBeLessThan(18);
  });

  it('gemma4 with fewer layers than one 5:1 period drops rope_freqs (only full layers use it)', () => {
    const plan = planModel({ preset: 'gemma-4-26b-a4b', layers: 4 });
    expect(plan.tensors.some((t) => t.name === 'rope_freqs.weight')).toBe(false);
    expect(plan.layout.kv.get('gemma4.attention.sliding_window_pattern')!.value).toEqual([true, true, true, true]);
    expect(planModel({ preset: 'gemma-4-26b-a4b' }).tensors.filter((t) => t.name === 'rope_freqs.weight')).toHaveLength(1);
  });

  it('demo-qwen3moe is ~250–350 MB and mostly experts', () => {
    const s = describeModel(planModel({ preset: 'demo-qwen3moe' }).layout);
    expect(s.totalBytes / 1e6).toBeGreaterThan(250);
    expect(s.totalBytes / 1e6).toBeLessThan(350);
    expect(s.expertBytes / s.totalBytes).toBeGreaterThan(0.75);
  });
});

describe('tiny presets on disk', () => {
  for (const preset of TINY) {
    it(`${preset}: describeModel matches the preset`, () => {
      const f = files.get(preset)!;
      const p = getPreset(preset).shape;
      const s = f.shape;
      expect(s.architecture).toBe(p.arch);
      expect(s.layers).toBe(p.nLayer);
      expect(s.experts).toBe(p.nExpert);
      expect(s.expertsUsed).toBe(p.nExpertUsed);
      expect(s.embeddingLength).toBe(p.nEmbd);
      expect(s.vocabSize).toBe(p.nVocab);
      for (const l of s.layerExperts) expect(l.sliceBytes).toEqual(expectedSlices(preset, l.layer));
      const all = f.header.tensors.reduce((a, t) => a + t.bytes, 0);
      expect(s.denseBytes + s.expertBytes).toBe(all);
      expect(s.totalBytes).toBe(all);
      expect(Object.values(s.quantTypes).reduce((a, b) => a + b, 0)).toBe(all);
      expect(s.expertTensors).toHaveLength(p.nLayer * (p.arch === 'gemma4' ? 2 : 3));
      for (const t of s.expertTensors) {
        expect(t.sliceBytes * t.experts).toBe(t.bytes);
        expect(t.experts).toBe(p.nExpert);
      }
      expect(s.workingSetBytes()).toBe(s.layerExperts.reduce((a, l) => a + p.nExpertUsed * l.expertBytes, 0));
      expect(f.header.fileSize / 1e6).toBeLessThan(12); // "a few MB"
      // the plan describes the file exactly
      const planned = describeModel(planModel({ preset }).layout);
      expect(planned.expertTensors).toEqual(s.expertTensors);
      expect(planned.denseBytes).toBe(s.denseBytes);
    });
  }

  it('files carry a working tokenizer and chat template for llama.cpp', () => {
    const q = files.get('tiny-qwen3moe')!.header.kv;
    expect(kvString(q, 'tokenizer.ggml.model')).toBe('gpt2');
    expect(kvString(q, 'tokenizer.ggml.pre')).toBe('qwen2');
    const o = files.get('tiny-gpt-oss')!.header.kv;
    expect(kvString(o, 'tokenizer.ggml.pre')).toBe('gpt-4o');
    expect(kvString(o, 'tokenizer.chat_template')).toContain('<|channel|>');
    const g = files.get('tiny-gemma4')!.header.kv;
    expect(kvString(g, 'tokenizer.ggml.model')).toBe('gemma4');
    expect(kvString(g, 'tokenizer.chat_template')).toContain("'<|tool_call>call:'");
    expect(kvNumber(g, 'gemma4.embedding_length_per_layer_input')).toBe(0);
    for (const f of files.values()) expect(kvString(f.header.kv, 'bmoe.synthetic.preset')).toBeDefined();
  });
});

describe('determinism and regeneration', () => {
  it('same options → same bytes; another seed → different bytes', async () => {
    const a = files.get('tiny-qwen3moe')!;
    const again = await makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'again.gguf') });
    expect(again.sha256).toBe(a.sha256);
    expect(createHash('sha256').update(readFileSync(a.path)).digest('hex')).toBe(a.sha256);
    const seed2 = await makeModel({ preset: 'tiny-qwen3moe', seed: 2, out: join(tmp.dir, 'seed2.gguf') });
    expect(seed2.sha256).not.toBe(a.sha256);
    expect(seed2.bytes).toBe(again.bytes);
  });

  it('any block of a random tensor can be regenerated alone', () => {
    const f = files.get('tiny-gpt-oss')!;
    const bytes = readFileSync(f.path);
    const plan = planModel({ preset: 'tiny-gpt-oss' });
    for (const name of ['blk.2.ffn_up_exps.weight', 'blk.3.ffn_down_exps.weight', 'blk.1.attn_q.weight']) {
      const t = f.header.tensors.find((x) => x.name === name)!;
      const planned = plan.tensors.find((x) => x.name === name)!;
      if (planned.fill.kind !== 'random') throw new Error('expected a random tensor');
      const info = ggmlType(t.type);
      const write = randomBlockWriter(t.type, planned.fill.std);
      for (const b of [0, 7, t.bytes / info.typeSize - 1]) {
        const block = new Uint8Array(info.typeSize);
        write(block, 0, blockKey(streamKey(1, name), b));
        const at = t.offset + b * info.typeSize;
        expect(Buffer.compare(bytes.subarray(at, at + info.typeSize), block)).toBe(0);
      }
    }
  });
});

describe('planted structure', () => {
  it('successors are word tokens, never control/EOG/padding, and never form 2-cycles', () => {
    for (const preset of TINY) {
      const plan = planModel({ preset });
      const succ = plantedSuccessors({ preset });
      const cand = new Set(plan.vocab.candidates);
      expect(succ).toHaveLength(plan.vocab.live.length);
      succ.forEach(([a, b], t) => {
        expect(cand.has(a) && cand.has(b)).toBe(true);
        expect(a).not.toBe(b);
        expect(a).not.toBe(t);
        if (cand.has(t)) expect(succ[a]!.includes(t) || succ[b]!.includes(t)).toBe(false);
      });
      for (const id of plan.vocab.special.values()) expect(cand.has(id)).toBe(false);
    }
  });

  it('the output head prefers the two successors of a token’s own embedding', () => {
    const f = files.get('tiny-qwen3moe')!;
    const bytes = readFileSync(f.path);
    const plan = planModel({ preset: 'tiny-qwen3moe' });
    const succ = plantedSuccessors({ preset: 'tiny-qwen3moe' });
    const n = plan.shape.nEmbd;
    const emb = f.header.tensors.find((t) => t.name === 'token_embd.weight')!;
    const out = f.header.tensors.find((t) => t.name === 'output.weight')!;
    const row = (t: typeof emb, r: number): Float32Array => {
      const rb = t.bytes / t.dims[1]!;
      return decode(t.type, bytes.subarray(t.offset + r * rb, t.offset + (r + 1) * rb), n);
    };
    const head = Array.from({ length: plan.shape.nVocab }, (_, s) => row(out, s));
    let hits = 0;
    const probes = plan.vocab.candidates.slice(0, 40);
    for (const t of probes) {
      const e = row(emb, t);
      let ss = 0;
      for (const v of e) ss += v * v;
      const h = e.map((v) => v / Math.sqrt(ss / n)); // output_norm with weight 1
      const logits = head.map((w) => w.reduce((a, v, i) => a + v * h[i]!, 0));
      const top2 = [...logits.keys()].sort((a, b) => logits[b]! - logits[a]!).slice(0, 2);
      if (new Set(top2).size === 2 && top2.every((s) => succ[t]!.includes(s))) hits++;
    }
    expect(hits).toBe(probes.length);
  });

  it('routerSkew biases the layer-0 routing towards each layer’s popular experts', async () => {
    const routing = async (skew: number): Promise<number[]> => {
      const path = join(tmp.dir, `skew-${skew}.gguf`);
      await makeModel({ preset: 'tiny-qwen3moe', routerSkew: skew, out: path });
      const h = await readGguf(path);
      const bytes = readFileSync(path);
      const plan = planModel({ preset: 'tiny-qwen3moe' });
      const n = plan.shape.nEmbd;
      const E = plan.shape.nExpert;
      const k = plan.shape.nExpertUsed;
      const emb = h.tensors.find((t) => t.name === 'token_embd.weight')!;
      const gate = h.tensors.find((t) => t.name === 'blk.0.ffn_gate_inp.weight')!;
      const W = decode(GgmlType.F32, bytes.subarray(gate.offset, gate.offset + gate.bytes), n * E);
      const rank = expertRanks(1, 0, E);
      const byRank = new Array<number>(E).fill(0);
      const rb = emb.bytes / emb.dims[1]!;
      for (const t of plan.vocab.live) {
        const e = decode(emb.type, bytes.subarray(emb.offset + t * rb, emb.offset + (t + 1) * rb), n);
        const r = Math.sqrt(e.reduce((a, v) => a + v * v, 0) / n);
        const logits = Array.from({ length: E }, (_, x) => W.subarray(x * n, (x + 1) * n).reduce((a, w, i) => a + (w * e[i]!) / r, 0));
        for (const x of [...logits.keys()].sort((a, b) => logits[b]! - logits[a]!).slice(0, k)) byRank[rank[x]!]!++;
      }
      const total = byRank.reduce((a, b) => a + b, 0);
      return byRank.map((c) => c / total);
    };
    const flat = await routing(0);
    const skewed = await routing(3);
    const uniform = 1 / 16;
    // X = 0: no expert is far from uniform; X = 3: the top-ranked experts take most of the routing.
    expect(Math.max(...flat)).toBeLessThan(3 * uniform);
    expect(skewed[0]!).toBeGreaterThan(0.2);
    expect(skewed.slice(0, 4).reduce((a, b) => a + b, 0)).toBeGreaterThan(0.7);
    expect(skewed.slice(8).reduce((a, b) => a + b, 0)).toBeLessThan(0.05);
  });

  it('gpt-oss carries the skew in its router bias exactly', async () => {
    const plan = planModel({ preset: 'tiny-gpt-oss', routerSkew: 2 });
    const path = join(tmp.dir, 'oss-skew.gguf');
    await makeModel({ preset: 'tiny-gpt-oss', routerSkew: 2, out: path });
    const h = await readGguf(path);
    const bias = h.tensors.find((t) => t.name === 'blk.1.ffn_gate_inp.bias')!;
    const v = decode(GgmlType.F32, readFileSync(path).subarray(bias.offset, bias.offset + bias.bytes), plan.shape.nExpert);
    const rank = expertRanks(1, 1, plan.shape.nExpert);
    v.forEach((b, e) => expect(b).toBeCloseTo(-2 * Math.log(1 + rank[e]!), 5));
  });
});

describe('makeModel options', () => {
  it('abort mid-write leaves no file at out', async () => {
    const out = join(tmp.dir, 'aborted-demo.gguf');
    const ac = new AbortController();
    const p = makeModel({
      preset: 'demo-qwen3moe',
      out,
      signal: ac.signal,
      onProgress: (done, total) => {
        if (done > total / 3) ac.abort(new Error('user abort'));
      },
    });
    await expect(p).rejects.toThrow('user abort');
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.partial`)).toBe(false);
  });

  it('validates options', async () => {
    await expect(makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'x.gguf'), layers: 0 })).rejects.toThrow(/layers/);
    await expect(makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'x.gguf'), routerSkew: -1 })).rejects.toThrow(/routerSkew/);
    await expect(makeModel({ preset: 'tiny-qwen3moe', out: join(tmp.dir, 'x.gguf'), seed: 1.5 })).rejects.toThrow(/seed/);
    expect(existsSync(join(tmp.dir, 'x.gguf'))).toBe(false);
  });
});
