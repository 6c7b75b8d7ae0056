// gpt-oss: tensors and hparams as the pinned llama.cpp loads them (src/models/openai-moe.cpp)
// and its converter writes them (conversion/gpt_oss.py): biases on q/k/v/o, the router and
// every expert projection, one attention sink per head, sliding-window attention on every
// other layer and YaRN rope scaling.
//
// Scales as in arch-qwen3moe.ts; the biases are small random offsets.

import type { GgufValue } from '../values.js';
import { gv } from '../values.js';
import { attentionKv, drafter, expertDownStd, inv, outputStd, router, yarnKv, type Draft } from './arch-parts.js';
import type { GptOssShape, Tuning } from './preset-types.js';

export function gptOssTensors(s: GptOssShape, t: Tuning): Draft[] {
  const { out, g } = drafter();
  const n = s.nEmbd;
  const nq = s.nHead * s.headDim;
  const nkv = s.nHeadKv * s.headDim;
  const f = s.nFfExp;
  const E = s.nExpert;
  g('token_embd.weight', [n, s.nVocab], { kind: 'embedding', rms: 1 });
  for (let i = 0; i < s.nLayer; i++) {
    const b = `blk.${i}`;
    g(`${b}.attn_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    g(`${b}.attn_q.weight`, [n, nq], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_q.bias`, [nq], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_k.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_k.bias`, [nkv], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_v.weight`, [n, nkv], { kind: 'random', std: inv(n) }, i);
    g(`${b}.attn_v.bias`, [nkv], { kind: 'random', std: 0.1 }, i);
    g(`${b}.attn_output.weight`, [nq, n], { kind: 'random', std: outputStd(t.attn, s.nLayer, nq, 0.7) }, i);
    g(`${b}.attn_output.bias`, [n], { kind: 'random', std: 0.01 }, i);
    // Attention sinks: one learned logit per head; 0 = a sink as likely as an average key.
    g(`${b}.attn_sinks.weight`, [s.nHead], { kind: 'const', value: 0 }, i);
    g(`${b}.post_attention_norm.weight`, [n], { kind: 'const', value: 1 }, i);
    router(g, s, t, i);
    g(`${b}.ffn_gate_inp.bias`, [E], { kind: 'routerBias', layer: i }, i);
    g(`${b}.ffn_gate_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_gate_exps.bias`, [f, E], { kind: 'random', std: 0.1 }, i);
    g(`${b}.ffn_up_exps.weight`, [n, f, E], { kind: 'random', std: inv(n) }, i);
    g(`${b}.ffn_up_exps.bias`, [f, E], { kind: 'random', std: 0.1 }, i);
    g(`${b}.ffn_down_exps.weight`, [f, n, E], { kind: 'random', std: expertDownStd(s, t) }, i);
    g(`${b}.ffn_down_exps.bias`, [n, E], { kind: 'random', std: 0.01 }, i);
  }
  g('output_norm.weight', [n], { kind: 'const', value: 1 });
  g('output.weight', [n, s.nVocab], { kind: 'output' });
  return out;
}

export function gptOssKv(s: GptOssShape): [string, GgufValue][] {
  return [
    ['gpt-oss.feed_forward_length', gv.u32(s.nFfExp)],
    ...attentionKv('gpt-oss', gv.u32(s.nHeadKv), s.headDim),
    ['gpt-oss.attention.sliding_window', gv.u32(s.slidingWindow)],
    ...yarnKv('gpt-oss', s.yarn),
  ];
}
