// Presets of the hybrid-attention MoE architectures: Qwen3.5/3.6 MoE (llama.cpp `qwen35moe`:
// Gated DeltaNet linear attention with a gated full-attention layer every 4th layer, routed
// experts plus a gated shared expert) and DeepSeek V4 (`deepseek4`: hyper-connections,
// compressed sparse attention, hash-routed first layers, routed + shared experts). Real shapes
// and small `mini-*` variants for tests (`tiny-<arch>` names belong to llama.cpp's fixtures).
// Every number says where it comes from; what could not be checked is in `notes`.

import type { Deepseek4Shape, Preset, Qwen35MoeShape, Tuning } from './preset-types.js';

// Tuned with llama-completion on the pinned llama.cpp (greedy, "The quick brown fox", seeds 1–5):
// the text keeps moving, and running one routed expert fewer (qwen35moe) or routing differently
// (deepseek4, whose hash-routed layers pin n_expert_used: a router skew) changes it within a few
// tokens. The shared expert gets half the routed experts' share so routing still decides between
// the planted successors.
const QWEN35_TUNING: Tuning = { attn: 0.4, moe: 2, sharedMlp: 0.5, routerLogitStd: 0.5, outputLogit: 16, outputNoise: 0.5, sharedDirection: 0.5 };
const MINI_QWEN35_TUNING: Tuning = { ...QWEN35_TUNING, moe: 1.5 };
const DSV4_TUNING: Tuning = { attn: 0.3, moe: 1.5, sharedMlp: 0.5, routerLogitStd: 0.5, outputLogit: 16, outputNoise: 0.5, sharedDirection: 0 };
const MINI_DSV4_TUNING: Tuning = { ...DSV4_TUNING, moe: 1.2 };

const QWEN36_35B: Qwen35MoeShape = {
  arch: 'qwen35moe', nEmbd: 2048, nLayer: 40, nHead: 16, nHeadKv: 2, headDim: 256,
  nExpert: 256, nExpertUsed: 8, nFfExp: 512, nFfShexp: 512, nVocab: 248320,
  contextLength: 262144, rmsEps: 1e-6, ropeTheta: 1e7, ropeDim: 64, ropeSections: [11, 11, 10, 0],
  fullAttnInterval: 4, linear: { convKernel: 4, keyHeads: 16, valueHeads: 32, headDim: 128 },
};

/** [0, 0, (4, 128) × 20, 4]: DeepSeek-V4-Flash's compress_ratios for its 43 main layers. */
const DSV4_FLASH_RATIOS: readonly number[] = [0, 0, ...Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? 4 : 128)), 4];

const DSV4_FLASH: Deepseek4Shape = {
  arch: 'deepseek4', nEmbd: 4096, nLayer: 43, nHead: 64, headDim: 512, ropeDim: 64,
  qLoraRank: 1024, oLoraRank: 1024, oGroups: 8, slidingWindow: 128,
  nExpert: 256, nExpertUsed: 6, nFfExp: 2048, nSharedExperts: 1, nVocab: 129280,
  contextLength: 1048576, rmsEps: 1e-6, ropeTheta: 10000, compressRopeTheta: 160000,
  compressRatios: DSV4_FLASH_RATIOS, hc: { mult: 4, sinkhornIters: 20, eps: 1e-6 }, hashLayers: 3,
  indexer: { heads: 64, headDim: 128, topK: 512 }, swigluLimit: 10, routedScale: 1.5,
  yarn: { factor: 16, origCtx: 65536, betaFast: 32, betaSlow: 1 },
};

/** Real shapes, listed after the other real shapes. */
export const HYBRID_PRESETS: readonly Preset[] = [
  {
    name: 'qwen3.6-35b-a3b',
    description: 'Qwen3.6-35B-A3B shape: 40 layers (3 Gated DeltaNet : 1 gated attention), 256 experts top-8 + shared expert',
    shape: QWEN36_35B,
    defaultQuant: 'q4_k_m',
    source:
      'Qwen/Qwen3.6-35B-A3B config.json text_config as reproduced ("the real Qwen3.6-35B-A3B config") in a public ' +
      'Rust re-implementation\'s test fixture found by code search: hidden_size 2048, 40 layers, full_attention_interval 4, ' +
      '16 heads / 2 KV heads, head_dim 256, partial_rotary_factor 0.25, mrope_section [11, 11, 10], rope_theta 1e7, ' +
      'linear_conv_kernel_dim 4, linear_num_key_heads 16, linear_num_value_heads 32, linear_key/value_head_dim 128, ' +
      '256 experts, 8 per token, moe_intermediate_size 512, shared_expert_intermediate_size 512, vocab 248320, ' +
      'max_position_embeddings 262144, rms_norm_eps 1e-6, tie_word_embeddings false. The model card\'s list agrees ' +
      '(copied at https://mera.a-ai.ru/en/industrial/submits/181: 40 layers, hidden 2048, 10 × (3 × Gated DeltaNet + ' +
      '1 × Gated Attention), 32 V / 16 QK linear heads of 128, 16 Q / 2 KV heads of 256, RoPE dim 64, 256 experts, ' +
      '8 routed + 1 shared, expert dim 512, vocab 248320). Keys and tensors: llama.cpp src/models/qwen35moe.cpp, ' +
      'conversion/qwen.py (Qwen3_5MoeTextModel)',
    notes:
      'Not read from the Hub (no network here): the numbers agree across the reproduced config and the model card ' +
      'copy but are otherwise unverified; Qwen3.5-35B-A3B is the same architecture (same converter class), its own ' +
      'config was not checked. Random weights with the planted output head (the real head is untied too). Not ' +
      'written: the MTP block the converter appends by default (blk.40, nextn.*; llama.cpp loads the trunk without ' +
      'it) and the vision encoder (a separate mmproj file). Tokenizer: Qwen3\'s special tokens under pre-tokenizer ' +
      '"qwen35", not Qwen3.5\'s exact added-token list or ids. Every width is a multiple of 256: all K-quants, no ' +
      'fallbacks. With --layers below 4 the last layer is made a full-attention layer (llama.cpp aborts on a ' +
      'qwen35moe file without one) and the layer kinds are written as attention.recurrent_layers.',
    tuning: QWEN35_TUNING,
  },
  {
    name: 'deepseek-v4-flash',
    description: 'DeepSeek-V4-Flash shape: 43 layers, 4 hyper-connection streams, 256 experts top-6 + shared, MXFP4 experts',
    shape: DSV4_FLASH,
    defaultQuant: 'mxfp4_moe',
    source:
      'deepseek-ai/DeepSeek-V4-Flash config.json as reproduced in public re-implementations found by code search ' +
      '(a Rust DeepSeekV4Config test "v4_flash_real_config_parses", a C++ port\'s DeepSeek-V4-Flash config, a Python ' +
      'DeepseekV4Config whose defaults are the same): hidden_size 4096, 43 layers, 64 heads / 1 KV head, head_dim 512, ' +
      'qk_rope_head_dim 64, q_lora_rank 1024, o_lora_rank 1024, o_groups 8, sliding_window 128, compress_ratios ' +
      '[0, 0, (4, 128) × 20, 4] plus 0 for the MTP layer, compress_rope_theta 160000, rope_theta 10000 with YaRN ' +
      'factor 16 over 65536 (beta_fast 32, beta_slow 1), 256 routed experts, 6 per token, 1 shared, ' +
      'moe_intermediate_size 2048, num_hash_layers 3, scoring_func sqrtsoftplus, norm_topk_prob true, ' +
      'routed_scaling_factor 1.5, swiglu_limit 10, hc_mult 4, hc_sinkhorn_iters 20, hc_eps 1e-6, index_n_heads 64, ' +
      'index_head_dim 128, index_topk 512, vocab 129280, max_position_embeddings 1048576, rms_norm_eps 1e-6, ' +
      'tie_word_embeddings false. NVIDIA NeMo AutoModel\'s page (https://docs.nvidia.com/nemo/automodel/latest/' +
      'model-coverage/large-language-models/deep-seek-v-4-flash) agrees on 43 layers, 256 + 1 experts, top-6, ' +
      'hc_mult 4. Keys, tensors and types: llama.cpp src/models/deepseek4.cpp, conversion/deepseek.py (DeepseekV4Model)',
    notes:
      'Not read from the Hub (no network here): the numbers agree across independent reproductions but are ' +
      'unverified. Experts MXFP4 as the checkpoint ships them (the converter repacks them; ftype MXFP4_MOE); every ' +
      'other 2-D weight Q8_0 as llama-quantize\'s MXFP4_MOE rule gives it, while the converter writes FP8 sources as ' +
      'Q8_0 but keeps BF16 sources BF16 (which ones are BF16 — likely the embedding and head — is not verified), so ' +
      'the dense bytes may differ. The hyper-connection mixers (hc_*_fn) and compressor position biases (*_ape) are ' +
      'kept F32, assumed F32 in the checkpoint (unverified). The hash-routing tables of the first 3 layers are ' +
      'synthetic: 6 distinct experts per token id, Zipf-skewed by the router skew. Elsewhere the skew rides on ' +
      'exp_probs_b, which is added to sqrt(softplus) scores: it is scaled by their slope at 0 (≈ 0.30), so the Zipf ' +
      'law holds only approximately. n_expert_used cannot be overridden on a file with hash-routed layers ' +
      '(tid2eid is [6, n_vocab]). The MTP layer is not written (the converter skips it by default). --layers needs ' +
      'at least 2, and with 2 or 3 the last two layers get compress ratios 4 and 128: the pinned llama.cpp divides ' +
      'by zero when either compressed kind has no layer.',
    tuning: DSV4_TUNING,
  },
];

/** Small variants for tests: every tensor kind of the real shape, a few MB. */
export const MINI_HYBRID_PRESETS: readonly Preset[] = [
  {
    name: 'mini-qwen35moe',
    description: 'Mini qwen35moe for tests: 4 layers (3 Gated DeltaNet + 1 gated attention), n_embd 256, 16 experts top-4 + shared',
    shape: {
      ...QWEN36_35B, nEmbd: 256, nLayer: 4, nHead: 4, nHeadKv: 2, headDim: 64, nExpert: 16, nExpertUsed: 4,
      nFfExp: 256, nFfShexp: 256, nVocab: 2048, contextLength: 4096, ropeDim: 16, ropeSections: [3, 3, 2, 0],
      linear: { convKernel: 4, keyHeads: 2, valueHeads: 4, headDim: 128 },
    },
    defaultQuant: 'q4_k_m',
    source: 'qwen3.6-35b-a3b scaled down (linear head dim 128 and the 3 : 1 layer pattern kept); dims are multiples of 256',
    notes: '16 experts, not 8: llama.cpp\'s Q4_K_M rule special-cases exactly 8 experts.',
    tuning: MINI_QWEN35_TUNING,
  },
  {
    name: 'mini-deepseek4',
    description: 'Mini deepseek4 for tests: 4 layers (hash-routed, window, CSA, HCA), n_embd 256, 16 experts top-4 + shared',
    shape: {
      ...DSV4_FLASH, nEmbd: 256, nLayer: 4, nHead: 4, headDim: 128, ropeDim: 64, qLoraRank: 128, oLoraRank: 128,
      oGroups: 2, nExpert: 16, nExpertUsed: 4, nFfExp: 256, nVocab: 2048, contextLength: 4096,
      compressRatios: [0, 0, 4, 128], hashLayers: 1, indexer: { heads: 64, headDim: 128, topK: 8 },
    },
    defaultQuant: 'mxfp4_moe',
    source: 'deepseek-v4-flash scaled down; indexer 64 heads of 128 and hc_mult 4 kept (what llama.cpp\'s own deepseek4 fixture uses)',
    notes: 'Layer 0 is hash-routed, layers 2 and 3 exercise the compressed (ratio 4, with indexer) and heavily compressed (128) attention.',
    tuning: MINI_DSV4_TUNING,
  },
];
