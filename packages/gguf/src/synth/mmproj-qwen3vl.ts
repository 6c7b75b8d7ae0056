// qwen3vl_merger (Qwen3.5 / Qwen3.6 vision): tensors and keys as conversion/qwen3vl.py
// (Qwen3VLVisionModel) writes them and the pinned llama.cpp reads them (tools/mtmd/clip.cpp:
// load_hparams, load_tensors; models/qwen3vl.cpp: the graph).
//
// The graph: two Conv2D patch embeddings (the Conv3D over 2 frames, split; a still image is both
// frames) plus a bias, a learned position grid interpolated to the image's patches, pre-norm ViT
// layers (LayerNorm, fused qkv with M-RoPE, GELU MLP, all with biases), a final LayerNorm, then
// the merger: every 2 × 2 patches concatenated and put through fc1 → GELU → fc2 into the text
// model's width. No deepstack: Qwen3.5's deepstack_visual_indexes is empty, and the qwen35moe
// text model reads no deepstack embeddings (its n_embd_inp is n_embd, which mtmd checks).
//
// Scales keep the residual stream at RMS ≈ 1 and make the merger's output RMS ≈ 1, the RMS of
// qwen35moe's token embeddings.

import { gv, type GgufValue } from '../values.js';
import { drafter, inv, outputStd, type Draft } from './arch-parts.js';
import type { VisionShape } from './mmproj-shapes.js';

/** RMS of gelu(x) for x ~ N(0, 1): √E[gelu(x)²] ≈ √0.425. */
const GELU_RMS = 0.652;
/** Each block's share of the residual stream (it grows by share/√L per block). */
const SHARE = 0.5;
/** Biases: small, so they are exercised without steering anything. */
const BIAS_STD = 0.02;
/** The learned positions, relative to the patch features (RMS ≈ 0.6 for a typical image). */
const POS_STD = 0.5;

export function qwen3vlTensors(v: VisionShape, nText: number): Draft[] {
  const { out, g } = drafter();
  const n = v.nEmbd;
  const L = v.nLayer;
  const p = v.patchSize;
  const merged = 4 * n; // 2 × 2 patches side by side
  // Conv kernels [kw, kh, c_in, c_out]; the two frames' outputs add up: std 1/√(2·p²·3).
  const patchStd = inv(2 * p * p * 3);
  g('v.patch_embd.weight', [p, p, 3, n], { kind: 'random', std: patchStd });
  g('v.patch_embd.weight.1', [p, p, 3, n], { kind: 'random', std: patchStd });
  g('v.patch_embd.bias', [n], { kind: 'random', std: BIAS_STD });
  g('v.position_embd.weight', [n, v.nPos], { kind: 'random', std: POS_STD });
  for (let i = 0; i < L; i++) {
    const b = `v.blk.${i}`;
    g(`${b}.ln1.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ln1.bias`, [n], { kind: 'const', value: 0 }, i);
    g(`${b}.attn_qkv.weight`, [n, 3 * n], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_qkv.bias`, [3 * n], { kind: 'random', std: BIAS_STD }, i);
    // A softmax mix of V rows has RMS below V's; 0.7 is typical.
    g(`${b}.attn_out.weight`, [n, n], { kind: 'random', std: outputStd(SHARE, L, n, 0.7) }, i);
    g(`${b}.attn_out.bias`, [n], { kind: 'random', std: BIAS_STD }, i);
    g(`${b}.ln2.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.ln2.bias`, [n], { kind: 'const', value: 0 }, i);
    g(`${b}.ffn_up.weight`, [n, v.nFf], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up.bias`, [v.nFf], { kind: 'random', std: BIAS_STD }, i);
    g(`${b}.ffn_down.weight`, [v.nFf, n], { kind: 'random', std: outputStd(SHARE, L, v.nFf, GELU_RMS) }, i);
    g(`${b}.ffn_down.bias`, [n], { kind: 'random', std: BIAS_STD }, i);
  }
  // The merger's LayerNorm (visual.merger.norm), applied per patch before the 2 × 2 merge.
  g('v.post_ln.weight', [n], { kind: 'const', value: 1 });
  g('v.post_ln.bias', [n], { kind: 'const', value: 0 });
  // fc1 (mm.0) keeps unit scale; fc2 (mm.2) maps GELU's output (RMS 0.652) to unit RMS.
  g('mm.0.weight', [merged, merged], { kind: 'random', std: inv(merged) });
  g('mm.0.bias', [merged], { kind: 'random', std: BIAS_STD });
  g('mm.2.weight', [merged, nText], { kind: 'random', std: inv(merged) / GELU_RMS });
  g('mm.2.bias', [nText], { kind: 'random', std: BIAS_STD });
  return out;
}

/** The keys after the common ones (mmproj.ts), as Qwen3VLVisionModel.set_gguf_parameters adds them. */
export function qwen3vlKv(v: VisionShape): [string, GgufValue][] {
  return [
    ['clip.projector_type', gv.str('qwen3vl_merger')],
    ['clip.use_gelu', gv.bool(true)],
    ['clip.vision.spatial_merge_size', gv.u32(2)],
    // The text config's rms_norm_eps, used for the vision LayerNorms.
    ['clip.vision.attention.layer_norm_epsilon', gv.f32(v.eps)],
    // [False] × depth when deepstack_visual_indexes is empty, as for Qwen3.5 (llama.cpp counts
    // deepstack layers from the v.deepstack.* tensors instead).
    ['clip.vision.is_deepstack_layers', gv.bools(Array.from({ length: v.nLayer }, () => false))],
  ];
}
