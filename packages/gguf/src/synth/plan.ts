// The complete plan of a synthetic model file — metadata, every tensor's name, shape, type and
// how its data is made — computed without writing anything. makeModel() streams a plan to
// disk; describeModel(planModel(...).layout) describes a 17 GB preset in milliseconds.
//
// Tensor names, shapes and required hparams follow the pinned llama.cpp loaders
// (src/models/qwen3moe.cpp, openai-moe.cpp, gemma4.cpp, qwen35moe.cpp, deepseek4.cpp) and its
// converters (conversion/base.py, qwen.py, gpt_oss.py, gemma.py, deepseek.py), which define what
// a real file holds. Each architecture's tensors and keys live in its arch-*.ts; this file adds
// the keys every file has, the tokenizer, the provenance and each tensor's type.

import { layoutGguf, type GgufLayout, type GgufTensorSpec } from '../writer.js';
import { gv, type GgufValue } from '../values.js';
import type { Arch, ArchShape, Preset, QuantMix, Tuning } from './preset-types.js';
import { getPreset } from './presets.js';
import { FILE_TYPE, isAttnVLike, isQuantMix, tensorType } from './quantmix.js';
import { DEEPSEEK4_TEMPLATE, GEMMA4_TEMPLATE, HARMONY_TEMPLATE, QWEN35_TEMPLATE, QWEN3_TEMPLATE } from './templates.js';
import { buildVocab, type SynthVocab, type VocabStyle } from './tokenizer.js';
import type { Draft, Fill } from './arch-parts.js';
import { qwen3moeKv, qwen3moeTensors } from './arch-qwen3moe.js';
import { gptOssKv, gptOssTensors } from './arch-gpt-oss.js';
import { gemma4Kv, gemma4Tensors } from './arch-gemma4.js';
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

/** The architecture's own part of the plan: its tensors, and its keys after the common ones. */
function archPart(s: ArchShape, t: Tuning): { drafts: Draft[]; kv: [string, GgufValue][] } {
  switch (s.arch) {
    case 'qwen3moe':
      return { drafts: qwen3moeTensors(s, t), kv: qwen3moeKv(s) };
    case 'gpt-oss':
      return { drafts: gptOssTensors(s, t), kv: gptOssKv(s) };
    case 'gemma4':
      return { drafts: gemma4Tensors(s, t), kv: gemma4Kv(s) };
    case 'qwen35moe':
      return { drafts: qwen35moeTensors(s, t), kv: qwen35moeKv(s) };
    case 'deepseek4':
      return { drafts: deepseek4Tensors(s, t), kv: deepseek4Kv(s) };
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
  const arch = archPart(shape, preset.tuning);
  const drafts = arch.drafts;
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
    ...arch.kv,
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
