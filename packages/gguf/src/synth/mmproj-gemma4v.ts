// gemma4v (Gemma 4 vision): tensors and keys as conversion/gemma.py (Gemma4VisionAudioModel, a
// checkpoint without an audio tower such as gemma-4-26B-A4B) writes them and the pinned llama.cpp
// reads them (tools/mtmd/clip.cpp: load_hparams, load_tensors; models/gemma4v.cpp and
// clip_graph::build_vit: the graph).
//
// The graph: pixels mapped to [-1, 1], a Conv2D patch embedding without bias, learned position
// tables looked up by patch column and by patch row, ViT layers with RMS norms everywhere
// (pre-norms, q/k norms per head, V normed without weight, post-norms after attention and MLP,
// a per-layer output scale), 2-D NeoX RoPE, attention with scale 1, a gated MLP; then 3 × 3
// average pooling, × √n_embd, an RMS norm without weight and the input projection into the text
// model's width (mm.input_projection). The clamp scalars of Gemma4ClippableLinear and the
// std_bias / std_scale standardization are optional in llama.cpp and left out, as for
// checkpoints that do not use them.
//
// Scales: post-norms set each block's output RMS directly (their weight); the projection's
// input is RMS-normed, so std 1/√n_embd gives image embeddings of RMS 1 — what gemma4's token
// embeddings are after the text graph's √n_embd scale, which image embeddings do not get.

import { gv, type GgufValue } from '../values.js';
import { drafter, inv, type Draft } from './arch-parts.js';
import type { VisionShape } from './mmproj-shapes.js';

/** Each block's output RMS relative to the residual stream, over √L (the post-norms' weight). */
const SHARE = 0.5;
/** Each position table's RMS, relative to the patch features (RMS ≈ 0.6 for a typical image). */
const POS_STD = 0.5;

export function gemma4vTensors(v: VisionShape, nText: number): Draft[] {
  const { out, g } = drafter();
  const n = v.nEmbd;
  const L = v.nLayer;
  const p = v.patchSize;
  const hd = n / v.nHead;
  // Attention with scale 1 on RMS-normed q and k: norm weights hd^(-1/4) make q·k ~ N(0, 1).
  const qkNorm = hd ** -0.25;
  const post = SHARE / Math.sqrt(L);
  // Conv kernel [kw, kh, c_in, c_out] over inputs in [-1, 1].
  g('v.patch_embd.weight', [p, p, 3, n], { kind: 'random', std: inv(p * p * 3) });
  // position_embedding_table [2, nPos, n] in HF: the column table, then the row table.
  g('v.position_embd.weight', [n, v.nPos, 2], { kind: 'random', std: POS_STD });
  for (let i = 0; i < L; i++) {
    const b = `v.blk.${i}`;
    g(`${b}.ln1.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, n], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.weight`, [n, n], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_v.weight`, [n, n], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_q_norm.weight`, [hd], { kind: 'const', value: qkNorm }, i);
    g(`${b}.attn_k_norm.weight`, [hd], { kind: 'const', value: qkNorm }, i);
    g(`${b}.attn_out.weight`, [n, n], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_post_norm.weight`, [n], { kind: 'const', value: post }, i);
    g(`${b}.ln2.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_gate.weight`, [n, v.nFf], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up.weight`, [n, v.nFf], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_down.weight`, [v.nFf, n], { kind: 'random', std: inv(v.nFf) }, i);
    g(`${b}.ffn_post_norm.weight`, [n], { kind: 'const', value: post }, i);
    // layer_scalar: one value per layer.
    g(`${b}.out_scale.weight`, [1], { kind: 'const', value: 1 }, i);
  }
  g('mm.input_projection.weight', [n, nText], { kind: 'random', std: inv(n) });
  return out;
}

/**
 * The keys after the common ones (mmproj.ts). The converter writes the projector type under
 * clip.vision.projector_type (its "mixed modalities" key, also without an audio tower), which
 * clip.cpp reads when clip.projector_type is absent; it sets neither use_gelu nor use_silu, so
 * llama.cpp runs the MLP with its default, GELU-quick. The pooling kernel (3) is llama.cpp's
 * default for gemma4v.
 */
export function gemma4vKv(v: VisionShape): [string, GgufValue][] {
  return [
    ['clip.vision.projector_type', gv.str('gemma4v')],
    ['clip.vision.attention.layer_norm_epsilon', gv.f32(v.eps)],
  ];
}
