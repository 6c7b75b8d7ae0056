// What each architecture's tensor list (plan.ts, arch-*.ts) is built from: a tensor's name,
// dimensions (ggml order: ne0 first), how its data is made, its block index, and — rarely — a
// type forced by how the real file is made rather than by the quantization mix.

import type { GgmlType } from '../types.js';

/** How a tensor's data is produced (interpreted by fill.ts). */
export type Fill =
  /** every element = value (norm weights, scales) */
  | { readonly kind: 'const'; readonly value: number }
  /** explicit values (rope_freqs) */
  | { readonly kind: 'values'; readonly values: readonly number[] }
  /** random weights with this standard deviation: random quantized blocks, or gaussians for float types */
  | { readonly kind: 'random'; readonly std: number }
  /** token embedding: random blocks with RMS 1·scale, plus the shared direction */
  | { readonly kind: 'embedding'; readonly rms: number }
  /** router weight rows: random (orthogonal to the shared direction) + popularity skew */
  | { readonly kind: 'router'; readonly layer: number; readonly std: number; readonly inputScale: number }
  /** router bias (gpt-oss) or selection bias (deepseek4 exp_probs_b): the popularity skew × scale */
  | { readonly kind: 'routerBias'; readonly layer: number; readonly scale?: number }
  /** deepseek4 hash routing (I32 [k, n_vocab]): k distinct experts per token id, drawn with the skew */
  | { readonly kind: 'hashRoute'; readonly layer: number }
  /** the planted output head */
  | { readonly kind: 'output' };

export interface Draft {
  name: string;
  dims: number[];
  fill: Fill;
  layer: number | undefined;
  /** A type the real conversion gives this tensor whatever the mix (F32 sources, I32 tables). */
  type?: GgmlType;
}

/** 1/√x: the standard deviation that keeps a sum of x unit terms at unit scale. */
export const inv = (x: number): number => 1 / Math.sqrt(x);

/** A tensor-list builder: g(name, dims, fill, layer?, type?) appends one draft. */
export function drafter(): { out: Draft[]; g: (name: string, dims: number[], fill: Fill, layer?: number, type?: GgmlType) => void } {
  const out: Draft[] = [];
  const g = (name: string, dims: number[], fill: Fill, layer?: number, type?: GgmlType): void => {
    out.push(type === undefined ? { name, dims, fill, layer } : { name, dims, fill, layer, type });
  };
  return { out, g };
}
