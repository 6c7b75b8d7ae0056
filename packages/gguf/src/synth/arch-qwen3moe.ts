// qwen3moe (Qwen3 MoE): tensors and hparams as the pinned llama.cpp loads them
// (src/models/qwen3moe.cpp) and its converter writes them (conversion/qwen.py).
//
// Scales (see structure.ts for the planted output head): attention writes t.attn/√L of the
// residual stream from a softmax mix of V rows (RMS ≈ 0.7), the routed experts t.moe/√L.

import type { GgufValue } from '../values.js';
import { gv } from '../values.js';
import { attentionKv, drafter, inv, outputStd, routedExperts, router, type Draft } from './arch-parts.js';
import type { Qwen3MoeShape, Tuning } from './preset-types.js';

export function qwen3moeTensors(s: Qwen3MoeShape, t: Tuning): Draft[] {
  const { out, g } = drafter();
  const n = s.nEmbd;
  const nq = s.nHead * s.headDim;
  const nkv = s.nHeadKv * s.headDim;
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < s.nLayer; i++) {
    const b = `blk.${i}`;
    g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, nq], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_v.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_output.weight`, [nq, n], { kind: 'random', std: outputStd(t.attn, s.nLayer, nq, 0.7) }, i);
    g(`${b}.attn_k_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q_norm.weight`, [s.headDim], { kind: 'const', value: 1 }, i);
    g(`${b}.ffn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    router(g, s, t, i);
    routedExperts(g, s, t, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

export function qwen3moeKv(s: Qwen3MoeShape): [string, GgufValue][] {
  return [['qwen3moe.feed_forward_length', gv.u32(s.nFf)], ...attentionKv('qwen3moe', gv.u32(s.nHeadKv), s.headDim)];
}
