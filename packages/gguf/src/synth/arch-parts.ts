// What each architecture's part of a plan (arch-*.ts) is built from. A tensor is drafted as its
// name, dimensions (ggml order: ne0 first), how its data is made (Fill), its block index and —
// rarely — a type forced by how the real file is made rather than by the quantization mix; plan.ts
// gives every other draft its type. Below that: the scales, tensors and keys several
// architectures share.

import type { GgmlType } from '../types.js';
import { gv, type GgufValue } from '../values.js';
import type { Arch, ArchShape, GptOssShape, Tuning } from './preset-types.js';

/** How a tensor's data is produced (interpreted by fill.ts). */
export type Fill =
  /** every element = value (norm weights, scales) */
  | { readonly kind: 'const'; readonly value: number }
  /** explicit values (rope_freqs) */
  | { readonly kind: 'values'; readonly values: readonly number[] }
  /** random weights with this standard deviation: random quantized blocks, or gaussians for float types */
  | { readonly kind: 'random'; readonly std: number }
  /** token embedding: random blocks with RMS 1·scale, plus the shared direction */
  | { readonly kind: 'embedding'; readonly rms: number }
  /** router weight rows: random (orthogonal to the shared direction) + popularity skew */
  | { readonly kind: 'router'; readonly layer: number; readonly std: number; readonly inputScale: number }
  /** router bias (gpt-oss) or selection bias (deepseek4 exp_probs_b): the popularity skew × scale */
  | { readonly kind: 'routerBias'; readonly layer: number; readonly scale?: number }
  /** deepseek4 hash routing (I32 [k, n_vocab]): k distinct experts per token id, drawn with the skew */
  | { readonly kind: 'hashRoute'; readonly layer: number }
  /** the planted output head */
  | { readonly kind: 'output' };

export interface Draft {
  name: string;
  dims: number[];
  fill: Fill;
  layer: number | undefined;
  /** A type the real conversion gives this tensor whatever the mix (F32 sources, I32 tables). */
  type?: GgmlType;
}

/** 1/√x: the standard deviation that keeps a sum of x unit terms at unit scale. */
export const inv = (x: number): number => 1 / Math.sqrt(x);

/** Appends one draft: g(name, dims, fill, layer?, type?). */
export type DraftFn = (name: string, dims: number[], fill: Fill, layer?: number, type?: GgmlType) => void;

/** A tensor-list builder: `out` collects what `g` drafts. */
export function drafter(): { out: Draft[]; g: DraftFn } {
  const out: Draft[] = [];
  const g: DraftFn = (name, dims, fill, layer, type) => {
    out.push(type === undefined ? { name, dims, fill, layer } : { name, dims, fill, layer, type });
  };
  return { out, g };
}

/**
 * The standard deviation of a block's output projection that writes `share`/√L of the residual
 * stream (whose RMS is 1) from `width` inputs of RMS `inputRms`.
 */
export function outputStd(share: number, L: number, width: number, inputRms: number): number {
  return share / (Math.sqrt(L) * Math.sqrt(width) * inputRms);
}

/**
 * The standard deviation of the routed experts' down projection that makes their output
 * t.moe/√L of the residual stream: silu(gate)·up has RMS ≈ 0.6, the top-k mix of independent
 * experts shrinks by ≈ √(k/2), and llama.cpp multiplies the mix by `routedScale`
 * (expert_weights_scale).
 */
export function expertDownStd(s: ArchShape, t: Tuning, routedScale = 1): number {
  return (t.moe * Math.sqrt(s.nExpertUsed / 2)) / (0.6 * Math.sqrt(s.nFfExp) * Math.sqrt(s.nLayer) * routedScale);
}

/** Layer i's router (ffn_gate_inp) over a unit-RMS input: logits with std t.routerLogitStd. */
export function router(g: DraftFn, s: ArchShape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  g(`blk.${i}.ffn_gate_inp.weight`, [n, s.nExpert], { kind: 'router', layer: i, std: t.routerLogitStd / Math.sqrt(n), inputScale: 1 }, i);
}

/** Layer i's routed experts without biases: gate and up [n, f, E], down [f, n, E] (see expertDownStd). */
export function routedExperts(g: DraftFn, s: ArchShape, t: Tuning, i: number, routedScale = 1): void {
  const n = s.nEmbd;
  const f = s.nFfExp;
  const E = s.nExpert;
  g(`blk.${i}.ffn_gate_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
  g(`blk.${i}.ffn_up_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
  g(`blk.${i}.ffn_down_exps.weight`, [f, n, E], { kind: 'random', std: expertDownStd(s, t, routedScale) }, i);
}

/** The attention head keys: KV heads (one count, or one per layer), key and value length. */
export function attentionKv(arch: Arch, headCountKv: GgufValue, headDim: number): [string, GgufValue][] {
  return [
    [`${arch}.attention.head_count_kv`, headCountKv],
    [`${arch}.attention.key_length`, gv.u32(headDim)],
    [`${arch}.attention.value_length`, gv.u32(headDim)],
  ];
}

/** YaRN rope scaling as the HF config gives it. */
export function yarnKv(arch: Arch, yarn: GptOssShape['yarn']): [string, GgufValue][] {
  return [
    [`${arch}.rope.scaling.type`, gv.str('yarn')],
    [`${arch}.rope.scaling.factor`, gv.f32(yarn.factor)],
    [`${arch}.rope.scaling.original_context_length`, gv.u32(yarn.origCtx)],
    [`${arch}.rope.scaling.yarn_beta_fast`, gv.f32(yarn.betaFast)],
    [`${arch}.rope.scaling.yarn_beta_slow`, gv.f32(yarn.betaSlow)],
  ];
}
