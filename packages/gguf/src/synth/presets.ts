// Synthetic model presets: the real models' shapes (so file layout, expert slice sizes and
// streaming working sets match what users run), plus tiny and demo variants for tests.
// Every preset says where its numbers come from.

import type { Gemma4Shape, Preset, Qwen3MoeShape, Tuning } from './preset-types.js';
import { HYBRID_PRESETS, MINI_HYBRID_PRESETS } from './presets-hybrid.js';

// Tuned with llama-completion on the pinned llama.cpp (greedy, "The quick brown fox", several
// seeds): the text keeps moving and running top-k − 1 changes it within a few tokens. Small
// models (n_embd 256) need a smaller MoE share: with fewer dimensions random layer output more
// often out-votes the planted successors. A flat router (logit std 0.5) keeps the last of the
// top-k experts' weight comparable to the first, so dropping it matters.
const QWEN_TUNING: Tuning = { attn: 0.4, moe: 2, sharedMlp: 0, routerLogitStd: 0.5, outputLogit: 16, outputNoise: 0.5, sharedDirection: 0.5 };
const TINY_QWEN_TUNING: Tuning = { ...QWEN_TUNING, moe: 1.5 };
const GPT_OSS_TUNING: Tuning = { attn: 0.3, moe: 1, sharedMlp: 0, routerLogitStd: 0.5, outputLogit: 16, outputNoise: 0.5, sharedDirection: 0 };
const GEMMA4_TUNING: Tuning = { attn: 0.3, moe: 2, sharedMlp: 0.5, routerLogitStd: 0.5, outputLogit: 16, outputNoise: 0.5, sharedDirection: 0.5 };
const TINY_GEMMA4_TUNING: Tuning = { ...GEMMA4_TUNING, moe: 1.2 };

const QWEN3_30B: Qwen3MoeShape = {
  arch: 'qwen3moe', nEmbd: 2048, nLayer: 48, nHead: 32, nHeadKv: 4, headDim: 128,
  nExpert: 128, nExpertUsed: 8, nFfExp: 768, nFf: 6144, nVocab: 151936,
  contextLength: 40960, rmsEps: 1e-6, ropeTheta: 1e6,
};

const GPT_OSS_BASE = {
  arch: 'gpt-oss', nEmbd: 2880, nHead: 64, nHeadKv: 8, headDim: 64, nExpertUsed: 4, nFfExp: 2880,
  nVocab: 201088, contextLength: 131072, rmsEps: 1e-5, ropeTheta: 150000, slidingWindow: 128,
  yarn: { factor: 32, origCtx: 4096, betaFast: 32, betaSlow: 1 },
} as const;

const GEMMA4_26B: Gemma4Shape = {
  arch: 'gemma4', nEmbd: 2816, nLayer: 30, nHead: 16, nHeadKvSwa: 8, nHeadKvFull: 2,
  headDim: 512, headDimSwa: 256, nFf: 2112, nExpert: 128, nExpertUsed: 8, nFfExp: 704,
  nVocab: 262144, contextLength: 262144, rmsEps: 1e-6, ropeTheta: 1e6, ropeThetaSwa: 1e4,
  slidingWindow: 1024, swaPeriod: 6, partialRotaryFull: 0.25, finalLogitSoftcap: 30, kEqV: true,
};

const PRESETS: readonly Preset[] = [
  {
    name: 'qwen3-30b-a3b',
    description: 'Qwen3-30B-A3B shape: 48 layers, 128 experts, top-8 (~18.5 GB at Q4_K_M)',
    shape: QWEN3_30B,
    defaultQuant: 'q4_k_m',
    source: 'Qwen/Qwen3-30B-A3B config.json (hidden_size 2048, 48 layers, 32 heads / 4 KV heads, head_dim 128, ' +
      '128 experts, 8 per token, moe_intermediate_size 768, intermediate_size 6144, vocab 151936, rope_theta 1e6, ' +
      'rms_norm_eps 1e-6, max_position_embeddings 40960); design.md: 18.5 GB at Q4_K_M',
    notes: 'Exact tensor shapes; random weights. The output head is planted (see structure.ts).',
    tuning: QWEN_TUNING,
  },
  {
    name: 'gpt-oss-20b',
    description: 'gpt-oss-20b shape: 24 layers, 32 experts, top-4, MXFP4 experts',
    shape: { ...GPT_OSS_BASE, nLayer: 24, nExpert: 32 },
    defaultQuant: 'mxfp4_moe',
    source: 'openai/gpt-oss-20b config.json (hidden_size 2880, 24 layers, 64 heads / 8 KV heads, head_dim 64, ' +
      '32 local experts, 4 per token, intermediate_size 2880, vocab 201088, sliding_window 128 alternating with full ' +
      'attention, rope_theta 150000 with YaRN factor 32 over 4096, rms_norm_eps 1e-5); llama.cpp MXFP4_MOE rule',
    notes: 'Attention sinks, q/k/v/o, router and expert biases present as llama.cpp requires.',
    tuning: GPT_OSS_TUNING,
  },
  {
    name: 'gpt-oss-120b',
    description: 'gpt-oss-120b shape: 36 layers, 128 experts, top-4, MXFP4 experts',
    shape: { ...GPT_OSS_BASE, nLayer: 36, nExpert: 128 },
    defaultQuant: 'mxfp4_moe',
    source: 'openai/gpt-oss-120b config.json (as gpt-oss-20b but 36 layers and 128 local experts); design.md: ' +
      'gpt-oss-120b 36 layers, 128 experts top-4',
    notes: 'As gpt-oss-20b.',
    tuning: GPT_OSS_TUNING,
  },
  {
    name: 'gemma-4-26b-a4b',
    description: 'Gemma-4-26B-A4B shape: 30 layers (5 sliding : 1 full), 128 experts top-8 + dense MLP, fused gate+up',
    shape: GEMMA4_26B,
    defaultQuant: 'q4_k_m',
    source: 'google/gemma-4-26B-A4B text_config as reproduced in several public projects (hidden_size 2816, ' +
      '30 layers, 16 heads, 8 KV heads sliding / 2 global, head_dim 256 / global_head_dim 512, ' +
      'intermediate_size 2112, moe_intermediate_size 704, 128 experts, top_k_experts 8, vocab 262144, ' +
      'sliding_window 1024, layer_types 5 sliding + 1 full, rope_theta 1e4 sliding / 1e6 full with ' +
      'partial_rotary_factor 0.25, final_logit_softcapping 30, attention_k_eq_v true); tensors and hparams from ' +
      'llama.cpp src/models/gemma4.cpp and conversion/gemma.py',
    notes: 'Not read from the model card itself (no network here): numbers agree across independent ' +
      're-implementations but are unverified. The real model ties the output head to token_embd; this file ' +
      'carries a separate output.weight (accepted by llama.cpp) because the planted successor structure needs ' +
      'an untied head, which adds n_vocab x n_embd Q6_K (~0.6 GB) to the dense bytes. 704-wide expert down ' +
      'projections and the 2112-wide dense down projection are not multiples of 256, so K-quants fall back ' +
      'to Q5_0 / Q8_0 exactly as llama-quantize does.',
    tuning: GEMMA4_TUNING,
  },
  ...HYBRID_PRESETS,
  {
    name: 'tiny-qwen3moe',
    description: 'Tiny qwen3moe for tests: 4 layers, n_embd 256, 16 experts top-4',
    shape: {
      ...QWEN3_30B, nEmbd: 256, nLayer: 4, nHead: 4, nHeadKv: 2, headDim: 64,
      nExpert: 16, nExpertUsed: 4, nFfExp: 256, nFf: 1024, nVocab: 2048, contextLength: 4096,
    },
    defaultQuant: 'q4_k_m',
    source: 'qwen3-30b-a3b scaled down; dims are multiples of 256 so every weight is a K-quant',
    notes: '16 experts, not 8: llama.cpp\'s Q4_K_M rule special-cases exactly 8 experts.',
    tuning: TINY_QWEN_TUNING,
  },
  {
    name: 'tiny-gpt-oss',
    description: 'Tiny gpt-oss for tests: 4 layers, n_embd 256, 8 experts top-4, MXFP4 experts',
    shape: { ...GPT_OSS_BASE, nEmbd: 256, nLayer: 4, nHead: 4, nHeadKv: 2, nExpert: 8, nFfExp: 256, nVocab: 2048, contextLength: 4096 },
    defaultQuant: 'mxfp4_moe',
    source: 'gpt-oss-20b scaled down (head_dim 64, sliding window 128, YaRN kept)',
    notes: '',
    tuning: GPT_OSS_TUNING,
  },
  {
    name: 'tiny-gemma4',
    description: 'Tiny gemma4 for tests: 6 layers (5 sliding + 1 full), n_embd 256, 16 experts top-4',
    shape: {
      ...GEMMA4_26B, nEmbd: 256, nLayer: 6, nHead: 4, nHeadKvSwa: 2, nHeadKvFull: 1, headDim: 128, headDimSwa: 64,
      nFf: 384, nExpert: 16, nExpertUsed: 4, nFfExp: 128, nVocab: 2048, contextLength: 4096, slidingWindow: 128,
    },
    defaultQuant: 'q4_k_m',
    source: 'gemma-4-26b-a4b scaled down',
    notes: 'Like the real model, its down projections (128 and 384 wide) are not multiples of 256 and fall back to Q5_0 / Q8_0.',
    tuning: TINY_GEMMA4_TUNING,
  },
  ...MINI_HYBRID_PRESETS,
  {
    name: 'demo-qwen3moe',
    description: 'Demo qwen3moe: ~300 MB, 8 layers, n_embd 1024, 64 experts top-8, mostly expert bytes',
    shape: {
      ...QWEN3_30B, nEmbd: 1024, nLayer: 8, nHead: 16, nHeadKv: 4, headDim: 64,
      nExpert: 64, nExpertUsed: 8, nFfExp: 256, nFf: 2048, nVocab: 32768, contextLength: 32768,
    },
    defaultQuant: 'q4_k_m',
    source: 'qwen3moe architecture sized for `npm run demo`',
    notes: '',
    tuning: QWEN_TUNING,
  },
];

const BY_NAME = new Map(PRESETS.map((p) => [p.name, p]));


/** All presets, by name. */
export const presets: Readonly<Record<string, Preset>> = Object.freeze(Object.fromEntries(BY_NAME));

/** All presets in a stable order (real shapes first, then tiny and mini, then demo). */
export function listPresets(): readonly Preset[] {
  return PRESETS;
}

/** A preset by name; throws listing the valid names. */
export function getPreset(name: string): Preset {
  const p = BY_NAME.get(name);
  if (!p) throw new RangeError(`unknown preset ${JSON.stringify(name)}; known: ${PRESETS.map((x) => x.name).join(', ')}`);
  return p;
}
