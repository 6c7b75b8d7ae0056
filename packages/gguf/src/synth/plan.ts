// The complete plan of a synthetic model file — metadata, every tensor's name, shape, type and
// how its data is made — computed without writing anything. makeModel() streams a plan to
// disk; describeModel(planModel(...).layout) describes a 17 GB preset in milliseconds.
//
// Tensor names, shapes and required hparams follow the pinned llama.cpp loaders
// (src/models/qwen3moe.cpp, openai-moe.cpp, gemma4.cpp, qwen35moe.cpp, deepseek4.cpp) and its
// converters (conversion/base.py, qwen.py, gpt_oss.py, gemma.py, deepseek.py), which define what
// a real file holds. The hybrid architectures' tensors and keys live in arch-qwen35moe.ts and
// arch-deepseek4.ts.

import { layoutGguf, type GgufLayout, type GgufTensorSpec } from '../writer.js';
import { gv, type GgufValue } from '../values.js';
import type { Arch, ArchShape, Gemma4Shape, GptOssShape, Preset, QuantMix, Qwen3MoeShape, Tuning } from './preset-types.js';
import { getPreset } from './presets.js';
import { FILE_TYPE, isAttnVLike, isQuantMix, tensorType } from './quantmix.js';
import { DEEPSEEK4_TEMPLATE, GEMMA4_TEMPLATE, HARMONY_TEMPLATE, QWEN35_TEMPLATE, QWEN3_TEMPLATE } from './templates.js';
import { buildVocab, type SynthVocab, type VocabStyle } from './tokenizer.js';
import { inv, type Draft, type Fill } from './drafts.js';
import { qwen35moeKv, qwen35moeTensors } from './arch-qwen35moe.js';
import { deepseek4Kv, deepseek4Tensors } from './arch-deepseek4.js';

/** Options that determine a synthetic model's bytes. */
export interface PlanOptions {
  /** Preset name (see listPresets()). */
  readonly preset: string;
  /** Override the layer count only; every other dimension stays the preset's. */
  readonly layers?: number;
  /** Quantization mix; default: the preset's (q4_k_m for qwen3moe/gemma4, mxfp4_moe for gpt-oss). */
  readonly quant?: string;
  /** PRNG seed; default 1. */
  readonly seed?: number;
  /** Router popularity skew X ≥ 0; default 0 (uniform random routing). See structure.ts. */
  readonly routerSkew?: number;
  /** Advanced: override some of the preset's behaviour knobs (changes the bytes). */
  readonly tuning?: Partial<Tuning>;
}

export interface PlannedTensor extends GgufTensorSpec {
  readonly fill: Fill;
  readonly layer: number | undefined;
}

export interface ModelPlan {
  readonly preset: Preset;
  /** The preset's shape with the layer override applied. */
  readonly shape: ArchShape;
  readonly quant: QuantMix;
  readonly seed: number;
  readonly routerSkew: number;
  readonly vocab: SynthVocab;
  /** Planned tensors, in file order (same order as layout.tensors). */
  readonly tensors: readonly PlannedTensor[];
  /** Header bytes, tensor offsets and file size: a GgufFile for describeModel(). */
  readonly layout: GgufLayout;
}


/** gemma4: does layer il use sliding-window attention? (5 sliding : 1 full) */
export function gemma4IsSwa(shape: Gemma4Shape, il: number): boolean {
  return il % shape.swaPeriod !== shape.swaPeriod - 1;
}

function qwen3Tensors(s: Qwen3MoeShape, t: Preset['tuning']): Draft[] {
  const L = s.nLayer;
  const n = s.nEmbd;
  const nq = s.nHead * s.headDim;
  const nkv = s.nHeadKv * s.headDim;
  const k = s.nExpertUsed;
  const f = s.nFfExp;
  const out: Draft[] = [];
  const g = (name: string, dims: number[], fill: Fill, layer?: number): void => {
    out.push({ name, dims, fill, layer });
  };
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < L; i++) {
    const b = `blk.${i}`;
    g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, nq], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_v.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    // Attention output per layer ≈ t.attn/√L of the embedding RMS (1); 0.7 ≈ RMS of an attention mix of V rows.
    g(`${b}.attn_output.weight`, [nq, n], { kind: 'random', std: t.attn / (Math.sqrt(L) * Math.sqrt(nq) * 0.7) }, i);
    g(`${b}.attn_k_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_gate_inp.weight`, [n, s.nExpert], { kind: 'router', layer: i, std: t.routerLogitStd / Math.sqrt(n), inputScale: 1 }, i);
    g(`${b}.ffn_gate_exps.weight`, [n, f, s.nExpert], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up_exps.weight`, [n, f, s.nExpert], { kind: 'random', std: inv(n) }, i);
    // MoE output per layer ≈ t.moe/√L: SiLU(gate)·up has RMS ≈ 0.6 and the top-k mix of
    // independent experts shrinks by ≈ √(k/2).
    g(`${b}.ffn_down_exps.weight`, [f, n, s.nExpert], { kind: 'random', std: (t.moe * Math.sqrt(k / 2)) / (0.6 * Math.sqrt(f) * Math.sqrt(L)) }, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

function gptOssTensors(s: GptOssShape, t: Preset['tuning']): Draft[] {
  const L = s.nLayer;
  const n = s.nEmbd;
  const nq = s.nHead * s.headDim;
  const nkv = s.nHeadKv * s.headDim;
  const k = s.nExpertUsed;
  const f = s.nFfExp;
  const E = s.nExpert;
  const out: Draft[] = [];
  const g = (name: string, dims: number[], fill: Fill, layer?: number): void => {
    out.push({ name, dims, fill, layer });
  };
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < L; i++) {
    const b = `blk.${i}`;
    g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, nq], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_q.bias`, [nq], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_k.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.bias`, [nkv], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_v.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_v.bias`, [nkv], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_output.weight`, [nq, n], { kind: 'random', std: t.attn / (Math.sqrt(L) * Math.sqrt(nq) * 0.7) }, i);
    g(`${b}.attn_output.bias`, [n], { kind: 'random', std: 0.01 }, i);
    // Attention sinks: one learned logit per head; 0 = a sink as likely as an average key.
    g(`${b}.attn_sinks.weight`, [s.nHead], { kind: 'const', value: 0 }, i);
    g(`${b}.post_attention_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_gate_inp.weight`, [n, E], { kind: 'router', layer: i, std: t.routerLogitStd / Math.sqrt(n), inputScale: 1 }, i);
    g(`${b}.ffn_gate_inp.bias`, [E], { kind: 'routerBias', layer: i }, i);
    g(`${b}.ffn_gate_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_gate_exps.bias`, [f, E], { kind: 'random', std: 0.1 }, i);
    g(`${b}.ffn_up_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up_exps.bias`, [f, E], { kind: 'random', std: 0.1 }, i);
    g(`${b}.ffn_down_exps.weight`, [f, n, E], { kind: 'random', std: (t.moe * Math.sqrt(k / 2)) / (0.6 * Math.sqrt(f) * Math.sqrt(L)) }, i);
    g(`${b}.ffn_down_exps.bias`, [n, E], { kind: 'random', std: 0.01 }, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

function gemma4Tensors(s: Gemma4Shape, t: Preset['tuning']): Draft[] {
  const L = s.nLayer;
  const n = s.nEmbd;
  const f = s.nFfExp;
  const E = s.nExpert;
  const out: Draft[] = [];
  const g = (name: string, dims: number[], fill: Fill, layer?: number): void => {
    out.push({ name, dims, fill, layer });
  };
  const anyFull = Array.from({ length: L }, (_, i) => i).some((i) => !gemma4IsSwa(s, i));
  if (anyFull) {
    // Proportional RoPE of full-attention layers: rotate the first partial_rotary_factor of
    // each head's dims; freq factor 1e30 freezes the rest (conversion/gemma.py).
    const half = s.headDim / 2;
    const rot = Math.trunc((s.headDim * s.partialRotaryFull) / 2);
    g('rope_freqs.weight', [half], { kind: 'values', values: Array.from({ length: half }, (_, i) => (i < rot ? 1 : 1e30)) });
  }
  // Gemma scales the input embedding by √n_embd; RMS 1/√n makes the residual stream start at RMS 1.
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 / Math.sqrt(n) });
  for (let i = 0; i < L; i++) {
    const b = `blk.${i}`;
    const swa = gemma4IsSwa(s, i);
    const hd = swa ? s.headDimSwa : s.headDim;
    const nkvHeads = swa ? s.nHeadKvSwa : s.nHeadKvFull;
    // Gemma 4 attends with scale 1 on RMS-normed q and k: norm weights hd^(-1/4) make q·k ~ N(0, 1).
    const qkNorm = hd ** -0.25;
    g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, s.nHead * hd], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.weight`, [n, nkvHeads * hd], { kind: 'random', std: inv(n) }, i);
    if (swa || !s.kEqV) g(`${b}.attn_v.weight`, [n, nkvHeads * hd], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_output.weight`, [s.nHead * hd, n], { kind: 'random', std: inv(s.nHead * hd) }, i);
    g(`${b}.attn_q_norm.weight`, [hd], { kind: 'const', value: qkNorm }, i);
    g(`${b}.attn_k_norm.weight`, [hd], { kind: 'const', value: qkNorm }, i);
    // Post-norms set each block's share of the residual stream directly.
    g(`${b}.post_attention_norm.weight`, [n], { kind: 'const', value: t.attn / Math.sqrt(L) }, i);
    g(`${b}.layer_output_scale.weight`, [1], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_gate.weight`, [n, s.nFf], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up.weight`, [n, s.nFf], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_down.weight`, [s.nFf, n], { kind: 'random', std: inv(s.nFf) }, i);
    g(`${b}.post_ffw_norm.weight`, [n], { kind: 'const', value: t.moe / Math.sqrt(L) }, i);
    // Router: logits = W · (rms_norm(x)/√n ⊙ scale), so std t.routerLogitStd per weight gives that logit std.
    g(`${b}.ffn_gate_inp.weight`, [n, E], { kind: 'router', layer: i, std: t.routerLogitStd, inputScale: 1 / Math.sqrt(n) }, i);
    g(`${b}.ffn_gate_inp.scale`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.pre_ffw_norm_2.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.post_ffw_norm_1.weight`, [n], { kind: 'const', value: t.sharedMlp }, i);
    g(`${b}.post_ffw_norm_2.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_gate_up_exps.weight`, [n, 2 * f, E], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_down_exps.weight`, [f, n, E], { kind: 'random', std: inv(f) }, i);
    // Per-expert output scale (the converter's router.per_expert_scale).
    g(`${b}.ffn_down_exps.scale`, [E], { kind: 'const', value: 1 }, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

function commonKv(arch: Arch, s: ArchShape, name: string, quant: QuantMix): [string, GgufValue][] {
  return [
    ['general.architecture', gv.str(arch)],
    ['general.type', gv.str('model')],
    ['general.name', gv.str(name)],
    ['general.quantization_version', gv.u32(2)],
    ['general.file_type', gv.u32(FILE_TYPE[quant])],
    [`${arch}.context_length`, gv.u32(s.contextLength)],
    [`${arch}.embedding_length`, gv.u32(s.nEmbd)],
    [`${arch}.block_count`, gv.u32(s.nLayer)],
    [`${arch}.attention.head_count`, gv.u32(s.nHead)],
    [`${arch}.attention.layer_norm_rms_epsilon`, gv.f32(s.rmsEps)],
    [`${arch}.rope.freq_base`, gv.f32(s.ropeTheta)],
    [`${arch}.expert_count`, gv.u32(s.nExpert)],
    [`${arch}.expert_used_count`, gv.u32(s.nExpertUsed)],
    [`${arch}.expert_feed_forward_length`, gv.u32(s.nFfExp)],
  ];
}

function archKv(s: ArchShape): [string, GgufValue][] {
  switch (s.arch) {
    case 'qwen35moe':
      return qwen35moeKv(s);
    case 'deepseek4':
      return deepseek4Kv(s);
    case 'qwen3moe':
      return [
        ['qwen3moe.feed_forward_length', gv.u32(s.nFf)],
        ['qwen3moe.attention.head_count_kv', gv.u32(s.nHeadKv)],
        ['qwen3moe.attention.key_length', gv.u32(s.headDim)],
        ['qwen3moe.attention.value_length', gv.u32(s.headDim)],
      ];
    case 'gpt-oss':
      return [
        ['gpt-oss.feed_forward_length', gv.u32(s.nFfExp)],
        ['gpt-oss.attention.head_count_kv', gv.u32(s.nHeadKv)],
        ['gpt-oss.attention.key_length', gv.u32(s.headDim)],
        ['gpt-oss.attention.value_length', gv.u32(s.headDim)],
        ['gpt-oss.attention.sliding_window', gv.u32(s.slidingWindow)],
        ['gpt-oss.rope.scaling.type', gv.str('yarn')],
        ['gpt-oss.rope.scaling.factor', gv.f32(s.yarn.factor)],
        ['gpt-oss.rope.scaling.original_context_length', gv.u32(s.yarn.origCtx)],
        ['gpt-oss.rope.scaling.yarn_beta_fast', gv.f32(s.yarn.betaFast)],
        ['gpt-oss.rope.scaling.yarn_beta_slow', gv.f32(s.yarn.betaSlow)],
      ];
    case 'gemma4': {
      const swa = Array.from({ length: s.nLayer }, (_, i) => gemma4IsSwa(s, i));
      return [
        ['gemma4.feed_forward_length', gv.u32(s.nFf)],
        ['gemma4.attention.head_count_kv', gv.i32s(swa.map((w) => (w ? s.nHeadKvSwa : s.nHeadKvFull)))],
        ['gemma4.attention.key_length', gv.u32(s.headDim)],
        ['gemma4.attention.value_length', gv.u32(s.headDim)],
        ['gemma4.attention.key_length_swa', gv.u32(s.headDimSwa)],
        ['gemma4.attention.value_length_swa', gv.u32(s.headDimSwa)],
        ['gemma4.rope.dimension_count', gv.u32(s.headDim)],
        ['gemma4.rope.dimension_count_swa', gv.u32(s.headDimSwa)],
        ['gemma4.rope.freq_base_swa', gv.f32(s.ropeThetaSwa)],
        ['gemma4.attention.sliding_window', gv.u32(s.slidingWindow)],
        ['gemma4.attention.sliding_window_pattern', gv.bools(swa)],
        ['gemma4.attention.shared_kv_layers', gv.u32(0)],
        ['gemma4.embedding_length_per_layer_input', gv.u32(0)],
        ['gemma4.final_logit_softcapping', gv.f32(s.finalLogitSoftcap)],
      ];
    }
  }
}

function tokenizerKv(v: SynthVocab, template: string): [string, GgufValue][] {
  const kv: [string, GgufValue][] = [['tokenizer.ggml.model', gv.str(v.model)]];
  if (v.pre !== undefined) kv.push(['tokenizer.ggml.pre', gv.str(v.pre)]);
  kv.push(
    ['tokenizer.ggml.tokens', gv.strs(v.tokens)],
    ['tokenizer.ggml.token_type', gv.i32s(v.types)],
    ['tokenizer.ggml.merges', gv.strs(v.merges)],
  );
  if (v.bos !== undefined) kv.push(['tokenizer.ggml.bos_token_id', gv.u32(v.bos)]);
  kv.push(['tokenizer.ggml.eos_token_id', gv.u32(v.eos)]);
  if (v.unk !== undefined) kv.push(['tokenizer.ggml.unknown_token_id', gv.u32(v.unk)]);
  if (v.pad !== undefined) kv.push(['tokenizer.ggml.padding_token_id', gv.u32(v.pad)]);
  kv.push(['tokenizer.ggml.add_bos_token', gv.bool(v.addBos)]);
  if (v.style === 'gemma4') kv.push(['tokenizer.ggml.add_space_prefix', gv.bool(false)]);
  kv.push(['tokenizer.chat_template', gv.str(template)]);
  return kv;
}

function archTensors(s: ArchShape, t: Tuning): Draft[] {
  switch (s.arch) {
    case 'qwen3moe':
      return qwen3Tensors(s, t);
    case 'gpt-oss':
      return gptOssTensors(s, t);
    case 'gemma4':
      return gemma4Tensors(s, t);
    case 'qwen35moe':
      return qwen35moeTensors(s, t);
    case 'deepseek4':
      return deepseek4Tensors(s, t);
  }
}

/** Each architecture's tokenizer family and chat template. */
const VOCAB_STYLE: Readonly<Record<Arch, VocabStyle>> = {
  qwen3moe: 'qwen3',
  'gpt-oss': 'harmony',
  gemma4: 'gemma4',
  qwen35moe: 'qwen35',
  deepseek4: 'deepseek4',
};
const TEMPLATES: Readonly<Record<VocabStyle, string>> = {
  qwen3: QWEN3_TEMPLATE,
  harmony: HARMONY_TEMPLATE,
  gemma4: GEMMA4_TEMPLATE,
  qwen35: QWEN35_TEMPLATE,
  deepseek4: DEEPSEEK4_TEMPLATE,
};

/** Validate options and apply defaults. */
export function resolveOptions(opts: PlanOptions): { preset: Preset; shape: ArchShape; quant: QuantMix; seed: number; routerSkew: number } {
  const base = getPreset(opts.preset);
  const preset: Preset = opts.tuning ? { ...base, tuning: { ...base.tuning, ...opts.tuning } } : base;
  for (const [k, v] of Object.entries(preset.tuning)) {
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new RangeError(`tuning.${k} must be a finite number ≥ 0`);
  }
  let shape: ArchShape = preset.shape;
  if (opts.layers !== undefined) {
    if (!Number.isInteger(opts.layers) || opts.layers < 1 || opts.layers > 512) {
      throw new RangeError(`layers must be an integer in 1..512, got ${opts.layers}`);
    }
    shape = { ...shape, nLayer: opts.layers };
  }
  const quant = opts.quant ?? preset.defaultQuant;
  if (!isQuantMix(quant)) throw new RangeError(`unknown quant ${JSON.stringify(quant)}; use q4_k_m, q4_k or mxfp4_moe`);
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be an integer in 0..2^32-1, got ${seed}`);
  const routerSkew = opts.routerSkew ?? 0;
  if (!Number.isFinite(routerSkew) || routerSkew < 0) throw new RangeError(`routerSkew must be a finite number ≥ 0, got ${routerSkew}`);
  return { preset, shape, quant, seed, routerSkew };
}

/** Plan a synthetic model: everything about the file except its tensor bytes. */
export function planModel(opts: PlanOptions, path?: string): ModelPlan {
  const { preset, shape, quant, seed, routerSkew } = resolveOptions(opts);
  const t = preset.tuning;
  const drafts = archTensors(shape, t);
  const nAttnV = drafts.filter((d) => isAttnVLike(d.name)).length;
  let attnV = 0;
  const tensors: PlannedTensor[] = drafts.map((d) => {
    const type = d.type ?? tensorType(quant, d.name, d.dims, { nLayer: shape.nLayer, nAttnV }, d.layer, attnV);
    if (isAttnVLike(d.name)) attnV++;
    return { name: d.name, dims: d.dims, type, fill: d.fill, layer: d.layer };
  });
  const style = VOCAB_STYLE[shape.arch];
  const vocab = buildVocab(style, shape.nVocab);
  const template = TEMPLATES[style];
  const name = opts.layers !== undefined ? `${preset.name} (${shape.nLayer} layers)` : preset.name;
  const kv: [string, GgufValue][] = [
    ...commonKv(shape.arch, shape, `bmoe synthetic ${name}`, quant),
    ...archKv(shape),
    ...tokenizerKv(vocab, template),
    // Provenance, so tools can tell a synthetic file and regenerate or explain it.
    ['bmoe.synthetic.preset', gv.str(preset.name)],
    ['bmoe.synthetic.seed', gv.u32(seed)],
    ['bmoe.synthetic.router_skew', gv.f32(routerSkew)],
    ['bmoe.synthetic.quant', gv.str(quant)],
  ];
  const layout = layoutGguf({ kv, tensors }, path ?? `<planned ${preset.name}>`);
  return { preset, shape, quant, seed, routerSkew, vocab, tensors, layout };
}
