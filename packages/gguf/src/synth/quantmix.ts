// Which ggml type each tensor gets, following llama.cpp's llama-quantize rules
// (src/llama-quant.cpp: tensor_allows_quantization, llama_tensor_get_type_impl and the
// row-size fallback), so a synthetic "Q4_K_M" file has the same per-tensor types — and hence
// the same dense/expert byte split — as a real one.
//
// - q4_k_m (LLAMA_FTYPE_MOSTLY_Q4_K_M): Q4_K by default; output.weight Q6_K; the attn_v-like
//   tensors (attn_v, attn_qkv, attn_kv_b: llama-quant.cpp's category_is_attn_v, counted together
//   in file order) and every ffn_down* tensor Q6_K on the layers use_more_bits() picks; 1-D
//   tensors, *_norm, the router (ffn_gate_inp), ssm_conv1d and the I32 hash-routing table
//   (ffn_gate_tid2eid) are not quantized. (The rule's n_expert == 8 special cases are not modelled;
//   no preset has 8 experts with a K-quant mix.)
// - q4_k: every quantizable 2-D/3-D weight Q4_K, output.weight Q6_K — the "all experts Q4_K"
//   files some published streaming numbers were measured on.
// - mxfp4_moe (LLAMA_FTYPE_MOSTLY_MXFP4_MOE): 3-D expert tensors MXFP4, every other
//   quantizable weight (output and token_embd included) Q8_0.
// Rows that are not a multiple of the type's block size fall back as llama-quantize does
// (Q4_K → Q5_0, Q6_K → Q8_0, then F16).

import { GgmlType, ggmlType } from '../types.js';
import type { QuantMix } from './preset-types.js';

/** llama_ftype value stored in general.file_type for each mix (informational). */
export const FILE_TYPE: Readonly<Record<QuantMix, number>> = {
  q4_k_m: 15, // LLAMA_FTYPE_MOSTLY_Q4_K_M
  q4_k: 14, // closest llama_ftype: LLAMA_FTYPE_MOSTLY_Q4_K_S
  mxfp4_moe: 38, // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
};

export function isQuantMix(s: string): s is QuantMix {
  return s === 'q4_k_m' || s === 'q4_k' || s === 'mxfp4_moe';
}

/** llama-quant.cpp use_more_bits: the layers Q4_K_M gives Q6_K. */
export function useMoreBits(i: number, n: number): boolean {
  return i < n / 8 || i >= (7 * n) / 8 || (i - Math.trunc(n / 8)) % 3 === 2;
}

/** Whether llama-quantize would quantize this tensor at all (else it keeps its F32 type). */
export function quantizable(name: string, dims: readonly number[]): boolean {
  if (dims.length < 2) return false;
  if (!name.endsWith('weight')) return false;
  if (name.includes('_norm.weight')) return false;
  if (name.includes('ffn_gate_inp.weight')) return false;
  if (name.includes('ffn_gate_tid2eid.weight')) return false;
  if (name.includes('ssm_conv1d')) return false;
  if (name.includes('per_layer_model_proj')) return false;
  return true;
}

/** llama-quant.cpp category_is_attn_v: the tensors Q4_K_M counts (and upgrades) as attn_v. */
export function isAttnVLike(name: string): boolean {
  return name.includes('attn_v.weight') || name.includes('attn_qkv.weight') || name.includes('attn_kv_b.weight');
}

function fallback(type: GgmlType, ne0: number): GgmlType {
  if (ne0 % ggmlType(type).blockSize === 0) return type;
  const next = type === GgmlType.Q4_K ? GgmlType.Q5_0 : type === GgmlType.Q6_K ? GgmlType.Q8_0 : type;
  return ne0 % ggmlType(next).blockSize === 0 ? next : GgmlType.F16;
}

export interface TypeContext {
  /** block_count */
  readonly nLayer: number;
  /** number of attn_v-like tensors in the file (llama-quantize's n_attention_wv) */
  readonly nAttnV: number;
}

/**
 * Type of one tensor. `attnVIndex` is the ordinal of this tensor among attn_v-like tensors (only
 * used for those), `layer` the block index parsed from the name.
 */
export function tensorType(
  mix: QuantMix,
  name: string,
  dims: readonly number[],
  ctx: TypeContext,
  layer: number | undefined,
  attnVIndex: number,
): GgmlType {
  if (!quantizable(name, dims)) return GgmlType.F32;
  const ne0 = dims[0]!;
  let t: GgmlType;
  if (name === 'output.weight') {
    // ne0 % block checks happen in fallback(); MXFP4_MOE keeps the head at Q8_0.
    t = mix === 'mxfp4_moe' ? GgmlType.Q8_0 : ne0 % 256 === 0 ? GgmlType.Q6_K : GgmlType.Q8_0;
  } else if (mix === 'mxfp4_moe') {
    t = dims.length >= 3 && dims[2]! > 1 ? GgmlType.MXFP4 : GgmlType.Q8_0;
  } else if (mix === 'q4_k') {
    t = GgmlType.Q4_K;
  } else {
    t = GgmlType.Q4_K;
    if (isAttnVLike(name) && useMoreBits(attnVIndex, ctx.nAttnV)) t = GgmlType.Q6_K;
    if (name.includes('ffn_down') && layer !== undefined && useMoreBits(layer, ctx.nLayer)) t = GgmlType.Q6_K;
  }
  return fallback(t, ne0);
}
