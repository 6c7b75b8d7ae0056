// qwen35moe (Qwen3.5 / Qwen3.6 MoE): tensors and hparams as the pinned llama.cpp loads them
// (src/models/qwen35moe.cpp: load_arch_hparams, load_arch_tensors, the graph) and its converter
// writes them (conversion/qwen.py: Qwen3NextModel, _LinearAttentionVReorderBase, _Qwen35MRopeMixin).
//
// Layer il is a gated full-attention layer when (il + 1) % full_attention_interval == 0, else a
// Gated DeltaNet (linear attention) layer; every layer ends in routed experts plus a shared
// expert whose output is scaled by sigmoid(ffn_gate_inp_shexp · x).
//
// Scales (see structure.ts for the planted output head): each block's output is set to a share of
// the residual stream — attention t.attn/√L, the routed experts t.moe/√L, the shared expert
// t.sharedMlp of that — from the RMS its projection's input has:
// - DeltaNet: RMS-normed per head (ssm_norm = 1) times silu(z), z ~ N(0, 1): RMS ≈ 0.6;
// - gated attention: a softmax mix of V rows (≈ 0.7) times sigmoid(gate) (≈ 0.54): ≈ 0.38;
// - experts: silu(gate)·up ≈ 0.6, the normalized top-k mix of independent experts shrinks by √(k/2);
// - shared expert: silu(gate)·up ≈ 0.6 times sigmoid(0) = 0.5 (its gate vector is 0).

import type { GgufValue } from '../values.js';
import { gv } from '../values.js';
import { attentionKv, drafter, inv, outputStd, routedExperts, router, type Draft, type DraftFn } from './arch-parts.js';
import type { Qwen35MoeShape, Tuning } from './preset-types.js';

/**
 * Is layer il a Gated DeltaNet (recurrent) layer? llama.cpp's rule from full_attention_interval —
 * except that a file with fewer layers than the interval (`--layers 2`) makes its last layer full
 * attention, since llama.cpp aborts at the first decode of a qwen35moe without one; such a file
 * states its layer kinds in attention.recurrent_layers.
 */
export function qwen35IsRecurrent(s: Qwen35MoeShape, il: number): boolean {
  if (s.nLayer < s.fullAttnInterval) return il !== s.nLayer - 1;
  return (il + 1) % s.fullAttnInterval !== 0;
}

/** DeltaNet widths: key_dim = q and k, value_dim = v and z, conv over q, k and v. */
function linearDims(s: Qwen35MoeShape): { keyDim: number; valueDim: number; convDim: number } {
  const keyDim = s.linear.keyHeads * s.linear.headDim;
  const valueDim = s.linear.valueHeads * s.linear.headDim;
  return { keyDim, valueDim, convDim: 2 * keyDim + valueDim };
}

/** -exp(A_log) per value head (the converter stores ssm_a negated): decay rates spread over 1..8. */
function ssmA(heads: number): number[] {
  return Array.from({ length: heads }, (_, h) => -(1 + (7 * h) / Math.max(1, heads - 1)));
}

function deltaNetTensors(g: DraftFn, s: Qwen35MoeShape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  const L = s.nLayer;
  const b = `blk.${i}`;
  const { valueDim, convDim } = linearDims(s);
  const H = s.linear.valueHeads;
  g(`${b}.attn_qkv.weight`, [n, convDim], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_gate.weight`, [n, valueDim], { kind: 'random', std: inv(n) }, i);
  // Conv over convKernel steps of unit inputs: std 1/√kernel keeps its output at unit scale.
  g(`${b}.ssm_conv1d.weight`, [s.linear.convKernel, convDim], { kind: 'random', std: inv(s.linear.convKernel) }, i);
  g(`${b}.ssm_dt.bias`, [H], { kind: 'const', value: 0 }, i);
  g(`${b}.ssm_a`, [H], { kind: 'values', values: ssmA(H) }, i);
  g(`${b}.ssm_beta.weight`, [n, H], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ssm_alpha.weight`, [n, H], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ssm_norm.weight`, [s.linear.headDim], { kind: 'const', value: 1 }, i);
  g(`${b}.ssm_out.weight`, [valueDim, n], { kind: 'random', std: outputStd(t.attn, L, valueDim, 0.6) }, i);
}

function gatedAttentionTensors(g: DraftFn, s: Qwen35MoeShape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  const b = `blk.${i}`;
  const nq = s.nHead * s.headDim;
  const nkv = s.nHeadKv * s.headDim;
  // attn_q carries query and output gate per head: 2 × head_dim rows each.
  g(`${b}.attn_q.weight`, [n, 2 * nq], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_k.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_v.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
  g(`${b}.attn_output.weight`, [nq, n], { kind: 'random', std: outputStd(t.attn, s.nLayer, nq, 0.38) }, i);
  g(`${b}.attn_q_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
  g(`${b}.attn_k_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
}

function moeTensors(g: DraftFn, s: Qwen35MoeShape, t: Tuning, i: number): void {
  const n = s.nEmbd;
  const b = `blk.${i}`;
  router(g, s, t, i);
  routedExperts(g, s, t, i);
  // Shared expert gate vector 0: sigmoid(0) = ½ for every token.
  g(`${b}.ffn_gate_inp_shexp.weight`, [n], { kind: 'const', value: 0 }, i);
  g(`${b}.ffn_gate_shexp.weight`, [n, s.nFfShexp], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ffn_up_shexp.weight`, [n, s.nFfShexp], { kind: 'random', std: inv(n) }, i);
  g(`${b}.ffn_down_shexp.weight`, [s.nFfShexp, n], { kind: 'random', std: (t.moe * t.sharedMlp) / (0.5 * 0.6 * Math.sqrt(s.nFfShexp) * Math.sqrt(s.nLayer)) }, i);
}

export function qwen35moeTensors(s: Qwen35MoeShape, t: Tuning): Draft[] {
  const { out, g } = drafter();
  const n = s.nEmbd;
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < s.nLayer; i++) {
    g(`blk.${i}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    if (qwen35IsRecurrent(s, i)) deltaNetTensors(g, s, t, i);
    else gatedAttentionTensors(g, s, t, i);
    g(`blk.${i}.post_attention_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    moeTensors(g, s, t, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

export function qwen35moeKv(s: Qwen35MoeShape): [string, GgufValue][] {
  const { valueDim } = linearDims(s);
  return [
    ...attentionKv('qwen35moe', gv.u32(s.nHeadKv), s.headDim),
    ['qwen35moe.rope.dimension_count', gv.u32(s.ropeDim)],
    ['qwen35moe.rope.dimension_sections', gv.i32s(s.ropeSections)],
    ['qwen35moe.expert_shared_feed_forward_length', gv.u32(s.nFfShexp)],
    ['qwen35moe.ssm.conv_kernel', gv.u32(s.linear.convKernel)],
    ['qwen35moe.ssm.state_size', gv.u32(s.linear.headDim)],
    ['qwen35moe.ssm.group_count', gv.u32(s.linear.keyHeads)],
    ['qwen35moe.ssm.time_step_rank', gv.u32(s.linear.valueHeads)],
    ['qwen35moe.ssm.inner_size', gv.u32(valueDim)],
    ['qwen35moe.full_attention_interval', gv.u32(s.fullAttnInterval)],
    ...(s.nLayer < s.fullAttnInterval
      ? ([['qwen35moe.attention.recurrent_layers', gv.u32s(Array.from({ length: s.nLayer }, (_, i) => (qwen35IsRecurrent(s, i) ? 1 : 0)))]] as [string, GgufValue][])
      : []),
  ];
}
