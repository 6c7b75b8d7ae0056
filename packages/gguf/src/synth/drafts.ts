// What each architecture's tensor list (plan.ts, arch-*.ts) is built from: a tensor's name,
// dimensions (ggml order: ne0 first), how its data is made, its block index, and — rarely — a
// type forced by how the real file is made rather than by the quantization mix.

import type { GgmlType } from '../types.js';
import type { Fill } from './plan.js';

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
