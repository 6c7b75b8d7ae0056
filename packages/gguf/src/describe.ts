// What a streaming engine needs to know about an MoE GGUF: which bytes are experts (streamed)
// and which are dense (kept resident), the size of one expert's slice per projection, and the
// working set one token touches. Works on a header read from disk (readGguf) or on a planned
// file that was never written (planModel), since both are GgufFile.

import { GgufError } from './errors.js';
import type { GgufFile, GgufTensorInfo } from './reader.js';
import { GgmlType, ggmlType, ggufValueTypeName } from './types.js';
import { kvArray, kvNumber, kvString } from './values.js';
import { EXPERT_TENSOR_PATTERN } from './expert-tensor.js';

/** Expert projections as named in tensor names; gate_up is Gemma 4's fused gate+up. */
export type ExpertProj = 'gate' | 'up' | 'down' | 'gate_up';

/** One 3-D expert tensor; expert e of it is the contiguous slice [offset + e·sliceBytes, +sliceBytes). */
export interface ExpertTensor {
  readonly layer: number;
  readonly proj: ExpertProj;
  readonly name: string;
  readonly type: GgmlType;
  /**
   * Absolute offset of the tensor's data in the file that holds it: the model file, or for a
   * split model the shard `shard` (offsets of different shards are not comparable).
   */
  readonly offset: number;
  /** The 0-based shard holding the tensor (0 for a single file). */
  readonly shard: number;
  readonly bytes: number;
  /** Bytes of one expert's slice (= ggml nb[2] = bytes / n_expert). */
  readonly sliceBytes: number;
  /** Number of experts in the tensor (its third dimension). */
  readonly experts: number;
}

/** Expert bytes of one MoE layer. */
export interface LayerExperts {
  readonly layer: number;
  /** Bytes of one expert's slice, per projection present in this layer. */
  readonly sliceBytes: Readonly<Partial<Record<ExpertProj, number>>>;
  /** Bytes of one expert, all projections. */
  readonly expertBytes: number;
  /** Bytes of all experts of this layer. */
  readonly totalBytes: number;
}

export interface ModelShape {
  readonly architecture: string;
  readonly name: string | undefined;
  /** <arch>.block_count */
  readonly layers: number;
  /** <arch>.expert_count (0 for a dense model) */
  readonly experts: number;
  /** <arch>.expert_used_count: the default top-k (max over layers if given per layer) */
  readonly expertsUsed: number;
  readonly embeddingLength: number;
  /**
   * Bytes of KV cache one token takes at llama.cpp's default f16 cache: each attention layer's K
   * and V widths (its `attn_k`/`attn_v` output sizes; recurrent layers hold none), × 2 bytes. An
   * estimate where the model has no such tensors (MLA): 2 × embedding per layer.
   */
  readonly kvBytesPerToken: number;
  readonly vocabSize: number;
  readonly contextLength: number | undefined;
  /** Bytes per ggml type name, over all tensors. */
  readonly quantTypes: Readonly<Record<string, number>>;
  /** All tensor data bytes (without alignment padding). */
  readonly totalBytes: number;
  /** Bytes that stay resident: everything that is not an expert weight (incl. expert biases/scales). */
  readonly denseBytes: number;
  /** Bytes of the 3-D expert weight tensors (streamed). */
  readonly expertBytes: number;
  /** Per-projection bytes of one expert slice; the maximum over layers where quant types differ. */
  readonly expertSliceBytes: Readonly<Partial<Record<ExpertProj, number>>>;
  /** Bytes of all experts of one layer; the maximum over layers. */
  readonly expertBytesPerLayer: number;
  /** Per-layer expert bytes, in layer order (MoE layers only). */
  readonly layerExperts: readonly LayerExperts[];
  /** Every expert tensor, in file order (shard by shard for a split model). */
  readonly expertTensors: readonly ExpertTensor[];
  /**
   * One token's routed working set: for every MoE layer, topK experts × one expert's bytes
   * (all projections). A global-LRU expert cache smaller than this hits nothing.
   * @param topK default: expertsUsed
   */
  workingSetBytes(topK?: number): number;
}

// The rule core-native's streamer applies too (generated from its contract/layout.mjs).
const EXPERT_RE = new RegExp(EXPERT_TENSOR_PATTERN);

/** Parse an expert weight tensor name: layer and projection, or undefined for anything else. */
export function parseExpertName(name: string): { layer: number; proj: ExpertProj } | undefined {
  const m = EXPERT_RE.exec(name);
  if (!m) return undefined;
  return { layer: Number(m[1]), proj: m[2] as ExpertProj };
}

function maxOf(v: number | readonly (number | bigint | boolean | string)[] | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'number') return v;
  let m: number | undefined;
  for (const x of v) if (typeof x === 'number' || typeof x === 'bigint') m = Math.max(m ?? 0, Number(x));
  return m;
}

export function describeModel(file: GgufFile): ModelShape {
  const arch = kvString(file.kv, 'general.architecture');
  if (!arch) throw new GgufError(file.path, undefined, 'no general.architecture in the metadata');
  // Shape values are counts: a float or negative one is a corrupt header, named as such.
  const count = (key: string, v: number | undefined): number | undefined => {
    if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0)) {
      const t = file.kv.get(key)?.type;
      throw new GgufError(file.path, file.entries?.get(key)?.offset, `${key} is ${v} (${t === undefined ? 'no type' : ggufValueTypeName(t)}), expected a non-negative integer`);
    }
    return v;
  };
  const num = (k: string): number | undefined => count(`${arch}.${k}`, kvNumber(file.kv, `${arch}.${k}`));
  const numOrArr = (k: string): number | undefined => count(`${arch}.${k}`, maxOf(num(k) ?? kvArray(file.kv, `${arch}.${k}`)));

  const layers = num('block_count') ?? 0;
  const experts = num('expert_count') ?? 0;
  const expertsUsed = numOrArr('expert_used_count') ?? 0;
  const embd = num('embedding_length') ?? 0;
  const tokens = kvArray(file.kv, 'tokenizer.ggml.tokens');
  const tokEmbd = file.tensors.find((t) => t.name === 'token_embd.weight');
  // A tokenizer table over the read budget is described (entries), not loaded: its length is known.
  const vocabSize = tokens?.length ?? file.entries?.get('tokenizer.ggml.tokens')?.length ?? num('vocab_size') ?? tokEmbd?.dims[1] ?? 0;

  const quantTypes: Record<string, number> = {};
  let totalBytes = 0;
  let expertBytes = 0;
  const expertTensors: ExpertTensor[] = [];
  const byLayer = new Map<number, { slice: Partial<Record<ExpertProj, number>>; total: number }>();
  const sorted: GgufTensorInfo[] = [...file.tensors].sort((a, b) => (a.shard ?? 0) - (b.shard ?? 0) || a.offset - b.offset);
  for (const t of sorted) {
    const tn = ggmlType(t.type).name;
    quantTypes[tn] = (quantTypes[tn] ?? 0) + t.bytes;
    totalBytes += t.bytes;
    const e = parseExpertName(t.name);
    if (!e) continue;
    const n = t.dims.length === 3 ? t.dims[2]! : 1;
    if (n <= 0 || t.bytes % n !== 0) throw new GgufError(file.shards?.[t.shard ?? 0]?.path ?? file.path, t.offset, `expert tensor ${t.name} does not split into ${n} equal slices`);
    const sliceBytes = t.bytes / n;
    expertBytes += t.bytes;
    expertTensors.push({ layer: e.layer, proj: e.proj, name: t.name, type: t.type, offset: t.offset, shard: t.shard ?? 0, bytes: t.bytes, sliceBytes, experts: n });
    const l = byLayer.get(e.layer) ?? { slice: {}, total: 0 };
    l.slice[e.proj] = (l.slice[e.proj] ?? 0) + sliceBytes;
    l.total += t.bytes;
    byLayer.set(e.layer, l);
  }

  const layerExperts: LayerExperts[] = [...byLayer.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([layer, l]) => ({
      layer,
      sliceBytes: l.slice,
      expertBytes: Object.values(l.slice).reduce((a, b) => a + (b ?? 0), 0),
      totalBytes: l.total,
    }));
  const expertSliceBytes: Partial<Record<ExpertProj, number>> = {};
  for (const l of layerExperts) {
    for (const [p, b] of Object.entries(l.sliceBytes) as [ExpertProj, number][]) {
      expertSliceBytes[p] = Math.max(expertSliceBytes[p] ?? 0, b);
    }
  }
  const expertBytesPerLayer = layerExperts.reduce((m, l) => Math.max(m, l.totalBytes), 0);

  return {
    architecture: arch,
    name: kvString(file.kv, 'general.name'),
    layers,
    experts,
    expertsUsed,
    embeddingLength: embd,
    kvBytesPerToken: kvBytesPerToken(file.tensors, layers, embd),
    vocabSize,
    contextLength: num('context_length'),
    quantTypes,
    totalBytes,
    denseBytes: totalBytes - expertBytes,
    expertBytes,
    expertSliceBytes,
    expertBytesPerLayer,
    layerExperts,
    expertTensors,
    workingSetBytes: (topK = expertsUsed): number => workingSet(layerExperts, experts, topK),
  };
}

/** ModelShape.workingSetBytes: every MoE layer reads top-k of its experts. */
function workingSet(layers: readonly { expertBytes: number }[], experts: number, topK: number): number {
  if (!Number.isInteger(topK) || topK < 0) throw new RangeError(`topK must be a non-negative integer, got ${topK}`);
  const k = experts > 0 ? Math.min(topK, experts) : topK;
  return layers.reduce((s, l) => s + k * l.expertBytes, 0);
}

/** ModelShape.kvBytesPerToken: the K and V projections' output widths over the layers, in f16. */
function kvBytesPerToken(tensors: readonly GgufTensorInfo[], layers: number, embd: number): number {
  let width = 0;
  let attention = 0;
  for (const t of tensors) {
    const m = /^blk\.\d+\.attn_([kv])\.weight$/.exec(t.name);
    if (!m || t.dims.length < 2) continue;
    width += t.dims[1]!;
    if (m[1] === 'k') attention++;
  }
  return 2 * (attention > 0 ? width : 2 * embd * layers);
}
