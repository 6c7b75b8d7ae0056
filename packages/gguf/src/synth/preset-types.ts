// What a synthetic-model preset is: the architectures the generator builds, each one's shape,
// the quantization mixes and the behaviour knobs (Tuning). The presets themselves are in
// presets.ts and presets-hybrid.ts.

/** Architectures the generator can build, named as llama.cpp's general.architecture. */
export type Arch = 'qwen3moe' | 'gpt-oss' | 'gemma4' | 'qwen35moe' | 'deepseek4';

/** Quantization mixes (see quantmix.ts for the exact per-tensor rules). */
export type QuantMix = 'q4_k_m' | 'q4_k' | 'mxfp4_moe';

interface ShapeBase {
  /** hidden size (n_embd) */
  readonly nEmbd: number;
  readonly nLayer: number;
  /** query heads */
  readonly nHead: number;
  /** head dimension (for gemma4: of full-attention layers) */
  readonly headDim: number;
  readonly nExpert: number;
  /** default top-k */
  readonly nExpertUsed: number;
  /** one expert's FFN width */
  readonly nFfExp: number;
  readonly nVocab: number;
  readonly contextLength: number;
  readonly rmsEps: number;
  /** rope theta (for gemma4: of full-attention layers) */
  readonly ropeTheta: number;
}

export interface Qwen3MoeShape extends ShapeBase {
  readonly arch: 'qwen3moe';
  readonly nHeadKv: number;
  /** feed_forward_length as the converter writes it (HF intermediate_size; unused by the MoE graph) */
  readonly nFf: number;
}

export interface GptOssShape extends ShapeBase {
  readonly arch: 'gpt-oss';
  readonly nHeadKv: number;
  /** sliding window of the SWA layers (every other layer, starting with layer 0) */
  readonly slidingWindow: number;
  /** YaRN rope scaling as in the HF config */
  readonly yarn: { readonly factor: number; readonly origCtx: number; readonly betaFast: number; readonly betaSlow: number };
}

export interface Gemma4Shape extends ShapeBase {
  readonly arch: 'gemma4';
  readonly nHeadKvSwa: number;
  /** KV heads of full-attention layers (num_global_key_value_heads) */
  readonly nHeadKvFull: number;
  readonly headDimSwa: number;
  /** width of the dense MLP that runs beside the experts in every layer */
  readonly nFf: number;
  readonly slidingWindow: number;
  /** layer il uses full attention iff il % swaPeriod == swaPeriod − 1 (5 sliding : 1 full) */
  readonly swaPeriod: number;
  readonly ropeThetaSwa: number;
  /** partial_rotary_factor of full-attention layers (proportional RoPE) */
  readonly partialRotaryFull: number;
  readonly finalLogitSoftcap: number;
  /** attention_k_eq_v: full-attention layers have no V projection (V = K) */
  readonly kEqV: boolean;
}

export interface Qwen35MoeShape extends ShapeBase {
  readonly arch: 'qwen35moe';
  /** KV heads of the gated full-attention layers */
  readonly nHeadKv: number;
  /** shared expert FFN width (shared_expert_intermediate_size) */
  readonly nFfShexp: number;
  /** rotary dimensions of a full-attention head (head_dim × partial_rotary_factor) */
  readonly ropeDim: number;
  /** interleaved M-RoPE sections (mrope_section, padded to 4 with 0 as the converter writes it) */
  readonly ropeSections: readonly number[];
  /** layer il is full attention iff (il + 1) % fullAttnInterval == 0; the others are Gated DeltaNet */
  readonly fullAttnInterval: number;
  /** Gated DeltaNet: linear_conv_kernel_dim, linear_num_key_heads, linear_num_value_heads, linear_key_head_dim (= value head dim) */
  readonly linear: { readonly convKernel: number; readonly keyHeads: number; readonly valueHeads: number; readonly headDim: number };
}

export interface Deepseek4Shape extends ShapeBase {
  readonly arch: 'deepseek4';
  /** rotary dimensions of a head (qk_rope_head_dim; the last ropeDim of headDim) */
  readonly ropeDim: number;
  readonly qLoraRank: number;
  readonly oLoraRank: number;
  /** o_groups: the grouped low-rank output projection */
  readonly oGroups: number;
  readonly slidingWindow: number;
  /** n_shared_experts, each nFfExp wide */
  readonly nSharedExperts: number;
  /** per layer: 0 = sliding window only, 4 = compressed sparse attention + indexer, 128 = heavily compressed; layers past the list alternate 4, 128 */
  readonly compressRatios: readonly number[];
  readonly compressRopeTheta: number;
  /** manifold-constrained hyper-connections: streams, Sinkhorn iterations, epsilon */
  readonly hc: { readonly mult: number; readonly sinkhornIters: number; readonly eps: number };
  /** the first hashLayers layers route by token id (ffn_gate_tid2eid) instead of by score */
  readonly hashLayers: number;
  readonly indexer: { readonly heads: number; readonly headDim: number; readonly topK: number };
  readonly swigluLimit: number;
  /** routed_scaling_factor */
  readonly routedScale: number;
  readonly yarn: { readonly factor: number; readonly origCtx: number; readonly betaFast: number; readonly betaSlow: number };
}

export type ArchShape = Qwen3MoeShape | GptOssShape | Gemma4Shape | Qwen35MoeShape | Deepseek4Shape;

/**
 * How strongly each part of the random network acts, as dimensionless ratios (documented in
 * synth/structure.ts). These are behaviour knobs, not shapes: they make greedy decoding move and
 * make the routed experts matter. Contributions per layer scale with 1/√layers so the balance
 * holds whatever --layers is.
 */
export interface Tuning {
  /** total attention contribution to the residual stream, relative to the token embedding */
  readonly attn: number;
  /** total MoE contribution to the residual stream, relative to the token embedding */
  readonly moe: number;
  /** gemma4: the dense MLP's weight inside the FFN block, relative to the experts (1 = equal);
   *  qwen35moe, deepseek4: the shared expert's output relative to the routed experts' */
  readonly sharedMlp: number;
  /** standard deviation of the router logits across experts for a typical token */
  readonly routerLogitStd: number;
  /** output logit of a successor when the final hidden state is the current token's embedding */
  readonly outputLogit: number;
  /** standard deviation of the noise logits every token gets */
  readonly outputNoise: number;
  /** magnitude of the direction all token embeddings share (carries the router skew), relative to their RMS */
  readonly sharedDirection: number;
}

export interface Preset {
  readonly name: string;
  readonly description: string;
  readonly shape: ArchShape;
  readonly defaultQuant: QuantMix;
  /** Where the numbers came from. */
  readonly source: string;
  /** Deviations from the real model and open uncertainties. */
  readonly notes: string;
  readonly tuning: Tuning;
}
