// deepseek4 (DeepSeek V4): tensors and hparams as the pinned llama.cpp loads them
// (src/models/deepseek4.cpp: load_arch_hparams, load_arch_tensors, the graph) and its converter
// writes them (conversion/deepseek.py: DeepseekV4Model).
//
// The residual stream is hc_mult parallel streams (manifold-constrained hyper-connections). Each
// block reads a weighted sum of the streams (pre = sigmoid(mix·scale + base)), and writes
//     stream_dst ← post_dst · block_out + Σ_src comb[dst, src] · stream_src,
// with post = 2·sigmoid(…) and comb a Sinkhorn-normalized 4 × 4 matrix. The planted structure
// (structure.ts) wants a plain residual stream, so the mixers are made to act like one: the base
// gives pre = ½ each (the block input is RMS-normed anyway), post = 1 and comb ≈ identity (a
// diagonal of 4 before the softmax), and the random mixing matrices only perturb that (scale 0.1).
// All streams start as the token embedding and get the same updates, so they stay alike; the
// output head reads their (pre-weighted) sum.
//
// Block scales as in arch-qwen35moe.ts: attention outputs a mix of V rows (≈ 0.7) through the
// grouped low-rank output projection (wo_a keeps unit scale, wo_b sets the share t.attn/√L);
// routed experts t.moe/√L after routed_scaling_factor; the shared expert t.sharedMlp of that.

import { GgmlType } from '../types.js';
import type { GgufValue } from '../values.js';
import { gv } from '../values.js';
import { attentionKv, drafter, inv, outputStd, routedExperts, router, yarnKv, type Draft, type DraftFn } from './arch-parts.js';
import type { Deepseek4Shape, Tuning } from './preset-types.js';

/**
 * Compression ratio of every layer: the preset's list, then alternating 4, 128. The pinned
 * llama.cpp needs at least one layer of each compressed kind (with none, an empty cache's
 * Hadamard size loop divides by zero: SIGFPE in llama_kv_cache::build_input_k_rot), so when the
 * first nLayer entries lack one (`--layers 2` or 3 of DeepSeek-V4-Flash), the last two layers
 * become 4 and 128.
 */
export function dsv4Ratios(s: Deepseek4Shape): number[] {
  if (s.nLayer < 2) throw new RangeError(`deepseek4 needs at least 2 layers (one with compress ratio 4, one with 128), got ${s.nLayer}`);
  const r = Array.from({ length: s.nLayer }, (_, il) => (il < s.compressRatios.length ? s.compressRatios[il]! : il % 2 === 0 ? 4 : 128));
  if (!r.includes(4) || !r.includes(128)) r.splice(s.nLayer - 2, 2, 4, 128);
  return r;
}

/** Hash-routed layers actually present (the count is capped by the layer count). */
export function dsv4HashLayers(s: Deepseek4Shape): number {
  return Math.min(s.hashLayers, s.nLayer);
}

/**
 * Slope of sqrt(softplus(x)) at 0, σ(0) / (2·√ln 2): exp_probs_b is added to these scores, so a
 * logit-space skew b becomes ≈ b times this.
 */
export const SQRT_SOFTPLUS_SLOPE = 0.5 / (2 * Math.sqrt(Math.LN2));

/** hc base: [pre × hc, post × hc, comb hc × hc (dst fastest)], see the file comment. */
function hcBase(hc: number): number[] {
  const comb = Array.from({ length: hc * hc }, (_, i) => (i % hc === Math.floor(i / hc) ? 4 : 0));
  return [...new Array<number>(2 * hc).fill(0), ...comb];
}

function hcTensors(g: DraftFn, s: Deepseek4Shape, prefix: string, i: number): void {
  const hc = s.hc.mult;
  const mix = (2 + hc) * hc;
  g(`${prefix}_fn.weight`, [hc * s.nEmbd, mix], { kind: 'random', std: inv(hc * s.nEmbd) }, i, GgmlType.F32);
  g(`${prefix}_base.weight`, [mix], { kind: 'values', values: hcBase(hc) }, i);
  g(`${prefix}_scale.weight`, [3], { kind: 'const', value: 0.1 }, i);
}

function attentionTensors(g: DraftFn, s: Deepseek4Shape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  const b = `blk.${i}`;
  const hd = s.headDim;
  const groupDim = (s.nHead * hd) / s.oGroups;
  g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
  // A sink logit of 0 per head: as likely as an average key.
  g(`${b}.attn_sinks.weight`, [s.nHead], { kind: 'const', value: 0 }, i);
  g(`${b}.attn_q_a.weight`, [n, s.qLoraRank], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_q_a_norm.weight`, [s.qLoraRank], { kind: 'const', value: 1 }, i);
  g(`${b}.attn_q_b.weight`, [s.qLoraRank, s.nHead * hd], { kind: 'random', std: inv(s.qLoraRank) }, i);
  g(`${b}.attn_kv.weight`, [n, hd], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_kv_a_norm.weight`, [hd], { kind: 'const', value: 1 }, i);
  // As the converter writes it: 2-D [n_head·head_dim / o_groups, o_lora_rank · o_groups]; llama.cpp reshapes it per group.
  g(`${b}.attn_output_a.weight`, [groupDim, s.oLoraRank * s.oGroups], { kind: 'random', std: inv(groupDim) }, i);
  const oIn = s.oGroups * s.oLoraRank;
  g(`${b}.attn_output_b.weight`, [oIn, n], { kind: 'random', std: outputStd(t.attn, s.nLayer, oIn, 0.7) }, i);
}

function compressorTensors(g: DraftFn, s: Deepseek4Shape, i: number, ratio: number): void {
  if (ratio === 0) return;
  const n = s.nEmbd;
  const b = `blk.${i}`;
  const width = (ratio === 4 ? 2 : 1) * s.headDim;
  g(`${b}.attn_compressor_kv.weight`, [n, width], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_compressor_gate.weight`, [n, width], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_compressor_ape.weight`, [width, ratio], { kind: 'random', std: 0.1 }, i, GgmlType.F32);
  g(`${b}.attn_compressor_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
  if (ratio !== 4) return;
  const ix = s.indexer;
  g(`${b}.indexer.proj.weight`, [n, ix.heads], { kind: 'random', std: inv(n) }, i);
  g(`${b}.indexer.attn_q_b.weight`, [s.qLoraRank, ix.heads * ix.headDim], { kind: 'random', std: inv(s.qLoraRank) }, i);
  g(`${b}.indexer_compressor_kv.weight`, [n, 2 * ix.headDim], { kind: 'random', std: inv(n) }, i);
  g(`${b}.indexer_compressor_gate.weight`, [n, 2 * ix.headDim], { kind: 'random', std: inv(n) }, i);
  g(`${b}.indexer_compressor_ape.weight`, [2 * ix.headDim, 4], { kind: 'random', std: 0.1 }, i, GgmlType.F32);
  g(`${b}.indexer_compressor_norm.weight`, [ix.headDim], { kind: 'const', value: 1 }, i);
}

function moeTensors(g: DraftFn, s: Deepseek4Shape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  const fs = s.nFfExp * s.nSharedExperts;
  const b = `blk.${i}`;
  g(`${b}.ffn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
  router(g, s, t, i);
  if (i < dsv4HashLayers(s)) g(`${b}.ffn_gate_tid2eid.weight`, [s.nExpertUsed, s.nVocab], { kind: 'hashRoute', layer: i }, i, GgmlType.I32);
  else g(`${b}.exp_probs_b.bias`, [s.nExpert], { kind: 'routerBias', layer: i, scale: SQRT_SOFTPLUS_SLOPE }, i);
  routedExperts(g, s, t, i, s.routedScale);
  g(`${b}.ffn_gate_shexp.weight`, [n, fs], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ffn_up_shexp.weight`, [n, fs], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ffn_down_shexp.weight`, [fs, n], { kind: 'random', std: (t.moe * t.sharedMlp) / (0.6 * Math.sqrt(fs) * Math.sqrt(s.nLayer)) }, i);
}

export function deepseek4Tensors(s: Deepseek4Shape, t: Tuning): Draft[] {
  const { out, g } = drafter();
  const n = s.nEmbd;
  const hc = s.hc.mult;
  const ratios = dsv4Ratios(s);
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < s.nLayer; i++) {
    attentionTensors(g, s, t, i);
    compressorTensors(g, s, i, ratios[i]!);
    hcTensors(g, s, `blk.${i}.hc_attn`, i);
    hcTensors(g, s, `blk.${i}.hc_ffn`, i);
    moeTensors(g, s, t, i);
  }
  g('output_hc_fn.weight', [hc * n, hc], { kind: 'random', std: inv(hc * n) }, undefined, GgmlType.F32);
  g('output_hc_base.weight', [hc], { kind: 'const', value: 0 });
  g('output_hc_scale.weight', [1], { kind: 'const', value: 0.1 });
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

export function deepseek4Kv(s: Deepseek4Shape): [string, GgufValue][] {
  const a = 'deepseek4';
  const L = s.nLayer;
  return [
    [`${a}.embedding_length_out`, gv.u32(s.hc.mult * s.nEmbd)],
    ...attentionKv(a, gv.u32(1), s.headDim),
    [`${a}.rope.dimension_count`, gv.u32(s.ropeDim)],
    ...yarnKv(a, s.yarn),
    [`${a}.attention.q_lora_rank`, gv.u32(s.qLoraRank)],
    [`${a}.attention.sliding_window`, gv.u32(s.slidingWindow)],
    [`${a}.expert_shared_count`, gv.u32(s.nSharedExperts)],
    [`${a}.expert_weights_scale`, gv.f32(s.routedScale)],
    [`${a}.expert_weights_norm`, gv.bool(true)],
    // LLAMA_EXPERT_GATING_FUNC_TYPE_SQRT_SOFTPLUS (scoring_func "sqrtsoftplus")
    [`${a}.expert_gating_func`, gv.u32(4)],
    [`${a}.swiglu_clamp_exp`, gv.f32s(new Array<number>(L).fill(s.swigluLimit))],
    [`${a}.swiglu_clamp_shexp`, gv.f32s(new Array<number>(L).fill(s.swigluLimit))],
    [`${a}.attention.indexer.head_count`, gv.u32(s.indexer.heads)],
    [`${a}.attention.indexer.key_length`, gv.u32(s.indexer.headDim)],
    [`${a}.attention.indexer.top_k`, gv.u32(s.indexer.topK)],
    [`${a}.attention.output_group_count`, gv.u32(s.oGroups)],
    [`${a}.attention.output_lora_rank`, gv.u32(s.oLoraRank)],
    [`${a}.attention.compress_ratios`, gv.i32s(dsv4Ratios(s))],
    [`${a}.attention.compress_rope_freq_base`, gv.f32(s.compressRopeTheta)],
    [`${a}.hyper_connection.count`, gv.u32(s.hc.mult)],
    [`${a}.hyper_connection.sinkhorn_iterations`, gv.u32(s.hc.sinkhornIters)],
    [`${a}.hyper_connection.epsilon`, gv.f32(s.hc.eps)],
    [`${a}.hash_layer_count`, gv.u32(dsv4HashLayers(s))],
  ];
}
