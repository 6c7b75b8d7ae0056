// Tensor data for synthetic models: random weights with controlled scales (blocks.ts), plus the
// planted structure that makes greedy decoding behave like a language model's (structure.ts;
// design.md, "Making synthetic models behave"). This file walks a planned tensor row by row and
// hands its data out in chunks of whole rows.

import { encode } from '../quant/index.js';
import { GgmlType, ggmlType, rowBytes } from '../types.js';
import type { GgufTensorInfo } from '../reader.js';
import type { PlannedTensor } from './plan.js';
import { blockKey, gauss, streamKey, word } from './prng.js';
import { randomBlockWriter } from './blocks.js';
import { expertRanks, routerBias, type FillContext } from './structure.js';

export { randomBlockWriter, type BlockWriter } from './blocks.js';
export { buildFillContext, expertRanks, plantSuccessors, routerBias, type FillContext, type Successors } from './structure.js';

const CHUNK_BYTES = 4 << 20;

function isFloatType(type: GgmlType): boolean {
  return type === GgmlType.F32 || type === GgmlType.F16;
}

// --- per-tensor producers ----------------------------------------------------------------

/** Rows per chunk for a tensor: whole rows, about CHUNK_BYTES at a time. */
function rowsPerChunk(t: GgufTensorInfo): number {
  return Math.max(1, Math.floor(CHUNK_BYTES / rowBytes(t.type, t.dims[0]!)));
}

function totalRows(t: GgufTensorInfo): number {
  let r = 1;
  for (let i = 1; i < t.dims.length; i++) r *= t.dims[i]!;
  return r;
}

/** Produce rows [0, rows) with rowFn writing row r's bytes into dst at off. */
function* byRows(t: GgufTensorInfo, rowFn: (dst: Uint8Array, off: number, r: number) => void): Generator<Uint8Array> {
  const rb = rowBytes(t.type, t.dims[0]!);
  const rows = totalRows(t);
  const per = rowsPerChunk(t);
  for (let r0 = 0; r0 < rows; r0 += per) {
    const nr = Math.min(per, rows - r0);
    const buf = new Uint8Array(nr * rb);
    for (let j = 0; j < nr; j++) rowFn(buf, j * rb, r0 + j);
    yield buf;
  }
}

/** Random blocks for rows; block index = global block index within the tensor. */
function randomRows(t: GgufTensorInfo, stream: number, std: number): (dst: Uint8Array, off: number, r: number) => void {
  const ne0 = t.dims[0]!;
  if (isFloatType(t.type)) {
    return (dst, off, r) => {
      const key = blockKey(stream, r);
      const row = new Float32Array(ne0);
      for (let i = 0; i < ne0; i++) row[i] = std * gauss(key, i);
      dst.set(encode(t.type, row), off);
    };
  }
  const info = ggmlType(t.type);
  const bpr = ne0 / info.blockSize;
  const write = randomBlockWriter(t.type, std);
  return (dst, off, r) => {
    for (let b = 0; b < bpr; b++) write(dst, off + b * info.typeSize, blockKey(stream, r * bpr + b));
  };
}

function constChunks(t: GgufTensorInfo, value: (i: number) => number): Generator<Uint8Array> {
  const ne0 = t.dims[0]!;
  return byRows(t, (dst, off, r) => {
    const row = new Float32Array(ne0);
    for (let i = 0; i < ne0; i++) row[i] = value(r * ne0 + i);
    dst.set(encode(t.type, row), off);
  });
}

function routerRows(ctx: FillContext, t: GgufTensorInfo, stream: number, layer: number, std: number, inputScale: number): Generator<Uint8Array> {
  const { plan, c, muEff } = ctx;
  const n = t.dims[0]!;
  const nExpert = t.dims[1]!;
  const withDir = plan.preset.tuning.sharedDirection > 0;
  const bias = routerBias(plan.seed, layer, nExpert, plan.routerSkew);
  return byRows(t, (dst, off, e) => {
    const key = blockKey(stream, e);
    const row = new Float32Array(n);
    for (let i = 0; i < n; i++) row[i] = std * gauss(key, i);
    if (withDir) {
      // Orthogonal to c, so X = 0 adds no expert-dependent offset; then the skew along c.
      let dot = 0;
      for (let i = 0; i < n; i++) dot += row[i]! * c[i]!;
      const along = -dot / n + bias[e]! / (inputScale * n * muEff);
      for (let i = 0; i < n; i++) row[i] = row[i]! + along * c[i]!;
    }
    dst.set(encode(t.type, row), off);
  });
}

function embeddingRows(ctx: FillContext, t: GgufTensorInfo, stream: number, rms: number): Generator<Uint8Array> {
  // Padding rows are never looked up; random blocks of the same scale keep the tensor honest.
  const random = randomRows(t, stream, rms);
  return byRows(t, (dst, off, r) => {
    const live = ctx.liveEmbd[r];
    if (live) dst.set(live, off);
    else random(dst, off, r);
  });
}

function outputRows(ctx: FillContext, t: GgufTensorInfo, stream: number): Generator<Uint8Array> {
  const { plan, liveDir, predecessors } = ctx;
  const n = t.dims[0]!;
  const tune = plan.preset.tuning;
  const noiseStd = tune.outputNoise / Math.sqrt(n);
  const gain = tune.outputLogit / n;
  const random = randomRows(t, stream, noiseStd);
  return byRows(t, (dst, off, s) => {
    const preds = predecessors.get(s);
    if (!preds) {
      random(dst, off, s);
      return;
    }
    const key = blockKey(stream, s);
    const row = new Float32Array(n);
    for (let i = 0; i < n; i++) row[i] = noiseStd * gauss(key, i);
    for (const p of preds) {
      const u = liveDir[p]!;
      for (let i = 0; i < n; i++) row[i] = row[i]! + gain * u[i]!;
    }
    dst.set(encode(t.type, row), off);
  });
}

/**
 * deepseek4 hash routing, I32 [k, n_vocab]: row t lists the k experts token t always uses. They
 * are k distinct experts drawn with weights (1 + rank)^−X — the router skew's Zipf popularity
 * (structure.ts) — by sorting keys −ln(u)/w (weighted sampling without replacement).
 */
function hashRouteRows(ctx: FillContext, t: GgufTensorInfo, stream: number, layer: number): Generator<Uint8Array> {
  const k = t.dims[0]!;
  const nExpert = ctx.plan.shape.nExpert;
  const rank = expertRanks(ctx.plan.seed, layer, nExpert);
  const weight = Float64Array.from(rank, (r) => (1 + r) ** -ctx.plan.routerSkew);
  const keys = new Float64Array(nExpert);
  const order = Array.from({ length: nExpert }, (_, e) => e);
  return byRows(t, (dst, off, tok) => {
    const key = blockKey(stream, tok);
    for (let e = 0; e < nExpert; e++) keys[e] = -Math.log((word(key, e) + 0.5) / 4294967296) / weight[e]!;
    order.sort((a, b) => keys[a]! - keys[b]! || a - b);
    const view = new DataView(dst.buffer, dst.byteOffset + off, 4 * k);
    for (let j = 0; j < k; j++) view.setInt32(4 * j, order[j]!, true);
  });
}

/** The data of one planned tensor, in chunks of whole rows. */
export function tensorChunks(ctx: FillContext, planned: PlannedTensor, info: GgufTensorInfo): Iterable<Uint8Array> {
  const stream = streamKey(ctx.plan.seed, planned.name);
  const f = planned.fill;
  switch (f.kind) {
    case 'const':
      return constChunks(info, () => f.value);
    case 'values':
      return constChunks(info, (i) => f.values[i] ?? 0);
    case 'random':
      return byRows(info, randomRows(info, stream, f.std));
    case 'embedding':
      return embeddingRows(ctx, info, stream, f.rms);
    case 'router':
      return routerRows(ctx, info, stream, f.layer, f.std, f.inputScale);
    case 'routerBias': {
      const bias = routerBias(ctx.plan.seed, f.layer, info.dims[0]!, ctx.plan.routerSkew);
      const scale = f.scale ?? 1;
      return constChunks(info, (i) => scale * bias[i]!);
    }
    case 'hashRoute':
      return hashRouteRows(ctx, info, stream, f.layer);
    case 'output':
      return outputRows(ctx, info, stream);
  }
}
