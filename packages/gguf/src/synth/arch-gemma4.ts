// gemma4 (Gemma 4 MoE): tensors and hparams as the pinned llama.cpp loads them
// (src/models/gemma4.cpp) and its converter writes them (conversion/gemma.py): sliding-window
// and full-attention layers (5 : 1) with their own head sizes, K = V on full-attention layers,
// a dense MLP beside fused gate+up experts, and post-norms that set each block's share of the
// residual stream directly.

import type { GgufValue } from '../values.js';
import { gv } from '../values.js';
import { attentionKv, drafter, inv, type Draft } from './arch-parts.js';
import type { Gemma4Shape, Tuning } from './preset-types.js';

/** gemma4: does layer il use sliding-window attention? (5 sliding : 1 full) */
export function gemma4IsSwa(shape: Gemma4Shape, il: number): boolean {
  return il % shape.swaPeriod !== shape.swaPeriod - 1;
}

export function gemma4Tensors(s: Gemma4Shape, t: Tuning): Draft[] {
  const { out, g } = drafter();
  const L = s.nLayer;
  const n = s.nEmbd;
  const f = s.nFfExp;
  const E = s.nExpert;
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

export function gemma4Kv(s: Gemma4Shape): [string, GgufValue][] {
  const swa = Array.from({ length: s.nLayer }, (_, i) => gemma4IsSwa(s, i));
  return [
    ['gemma4.feed_forward_length', gv.u32(s.nFf)],
    ...attentionKv('gemma4', gv.i32s(swa.map((w) => (w ? s.nHeadKvSwa : s.nHeadKvFull))), s.headDim),
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
