// makeProjector: a synthetic multimodal projector (mmproj GGUF) for a text preset, the file
// llama.cpp's tools/mtmd loads beside the text model (`llama-mtmd-cli -m model --mmproj file`).
// Real layout, keys and tensor types of the kind's converter; a scaled-down vision tower
// (mmproj-shapes.ts) with random weights whose scales keep every activation finite and give
// image embeddings the RMS of the text model's token embeddings. Deterministic: the same options
// give the same bytes. Planned like a text model (plan.ts), written by the same streaming writer.

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { encode } from '../quant/index.js';
import type { GgufTensorInfo } from '../reader.js';
import { layoutGguf, writeGguf, type GgufLayout, type WriteOptions, type WriteResult } from '../writer.js';
import { gv, type GgufValue } from '../values.js';
import type { Draft } from './arch-parts.js';
import type { PlannedTensor } from './plan.js';
import type { Preset } from './preset-types.js';
import { getPreset } from './presets.js';
import { blockKey, gauss, streamKey } from './prng.js';
import { gemma4vKv, gemma4vTensors } from './mmproj-gemma4v.js';
import { qwen3vlKv, qwen3vlTensors } from './mmproj-qwen3vl.js';
import {
  GEMMA4V_VISION,
  MOSTLY_F16,
  PROJECTOR_TYPE,
  QWEN3VL_VISION,
  mmprojTensorType,
  presetsWithProjector,
  projectorKindOf,
  type ProjectorKind,
  type VisionShape,
} from './mmproj-shapes.js';

export { PROJECTOR_TYPE, presetsWithProjector, projectorKindOf, type ProjectorKind, type VisionShape } from './mmproj-shapes.js';

/** Options that determine a projector's bytes. */
export interface ProjectorOptions {
  /** The text preset the projector feeds: its architecture picks the kind, its n_embd the output width. */
  readonly preset: string;
  /** The kind; default (and the only one accepted): the preset's own (projectorKindOf). */
  readonly kind?: ProjectorKind;
  /** PRNG seed; default 1. */
  readonly seed?: number;
}

export interface MakeProjectorOptions extends ProjectorOptions, WriteOptions {
  /** Destination path; written as `<out>.partial` and renamed when complete. Parent dirs are created. */
  readonly out: string;
}

export interface ProjectorPlan {
  readonly preset: Preset;
  readonly kind: ProjectorKind;
  /** clip.projector_type (or clip.vision.projector_type) as llama.cpp names it. */
  readonly projectorType: string;
  readonly vision: VisionShape;
  /** The text model's n_embd: clip.vision.projection_dim, the width of every image embedding. */
  readonly projectionDim: number;
  readonly seed: number;
  readonly tensors: readonly PlannedTensor[];
  readonly layout: GgufLayout;
}

const KINDS: Readonly<Record<ProjectorKind, {
  vision: VisionShape;
  tensors: (v: VisionShape, nText: number) => Draft[];
  kv: (v: VisionShape) => [string, GgufValue][];
}>> = {
  qwen3vl: { vision: QWEN3VL_VISION, tensors: qwen3vlTensors, kv: qwen3vlKv },
  gemma4: { vision: GEMMA4V_VISION, tensors: gemma4vTensors, kv: gemma4vKv },
};

/** Validate options: the preset must have a projector kind, and `kind` (if given) must be it. */
function resolve(opts: ProjectorOptions): { preset: Preset; kind: ProjectorKind; seed: number } {
  const preset = getPreset(opts.preset);
  const own = projectorKindOf(preset);
  if (own === undefined) {
    throw new RangeError(`preset ${preset.name} (${preset.shape.arch}) has no projector; presets with one: ${presetsWithProjector().join(', ')}`);
  }
  if (opts.kind !== undefined && opts.kind !== own) {
    throw new RangeError(`projector kind ${JSON.stringify(opts.kind)} does not fit preset ${preset.name} (${preset.shape.arch}); its kind is ${own}`);
  }
  const seed = opts.seed ?? 1;
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`seed must be an integer in 0..2^32-1, got ${seed}`);
  return { preset, kind: own, seed };
}

/** The keys every mmproj has (MmprojModel.set_gguf_parameters), in the converter's order. */
function commonKv(v: VisionShape, nText: number): [string, GgufValue][] {
  return [
    ['general.file_type', gv.u32(MOSTLY_F16)],
    ['clip.has_vision_encoder', gv.bool(true)],
    ['clip.vision.projection_dim', gv.u32(nText)],
    ['clip.vision.image_size', gv.u32(v.imageSize)],
    ['clip.vision.patch_size', gv.u32(v.patchSize)],
    ['clip.vision.embedding_length', gv.u32(v.nEmbd)],
    ['clip.vision.feed_forward_length', gv.u32(v.nFf)],
    ['clip.vision.block_count', gv.u32(v.nLayer)],
    ['clip.vision.attention.head_count', gv.u32(v.nHead)],
    ['clip.vision.image_mean', gv.f32s(v.imageMean)],
    ['clip.vision.image_std', gv.f32s(v.imageStd)],
  ];
}

/** Plan a projector: everything about the file except its tensor bytes. */
export function planProjector(opts: ProjectorOptions, path?: string): ProjectorPlan {
  const { preset, kind, seed } = resolve(opts);
  const k = KINDS[kind];
  const nText = preset.shape.nEmbd;
  const tensors: PlannedTensor[] = k.tensors(k.vision, nText).map((d) => ({
    name: d.name,
    dims: d.dims,
    type: d.type ?? mmprojTensorType(d.name, d.dims),
    fill: d.fill,
    layer: d.layer,
  }));
  const kv: [string, GgufValue][] = [
    ['general.architecture', gv.str('clip')],
    ['general.type', gv.str('mmproj')],
    ['general.name', gv.str(`bmoe synthetic ${preset.name} projector`)],
    ['general.quantization_version', gv.u32(2)],
    ...commonKv(k.vision, nText),
    ...k.kv(k.vision),
    // Provenance, as in synthetic text models.
    ['bmoe.synthetic.preset', gv.str(preset.name)],
    ['bmoe.synthetic.seed', gv.u32(seed)],
    ['bmoe.synthetic.projector', gv.str(kind)],
  ];
  const layout = layoutGguf({ kv, tensors }, path ?? `<planned ${preset.name} projector>`);
  return { preset, kind, projectorType: PROJECTOR_TYPE[kind], vision: k.vision, projectionDim: nText, seed, tensors, layout };
}

const CHUNK_ELEMENTS = 1 << 18;

/**
 * A projector tensor's data in chunks of whole rows: the float rows fill.ts makes for the same
 * fills (row r of a random tensor is gaussians of blockKey(streamKey(seed, name), r)).
 */
function* projectorChunks(seed: number, planned: PlannedTensor, info: GgufTensorInfo): Generator<Uint8Array> {
  const ne0 = info.dims[0]!;
  const rows = info.dims.slice(1).reduce((a, b) => a * b, 1);
  const stream = streamKey(seed, planned.name);
  const f = planned.fill;
  const per = Math.max(1, Math.floor(CHUNK_ELEMENTS / ne0));
  for (let r0 = 0; r0 < rows; r0 += per) {
    const nr = Math.min(per, rows - r0);
    const x = new Float32Array(nr * ne0);
    for (let j = 0; j < nr; j++) {
      const key = blockKey(stream, r0 + j);
      for (let i = 0; i < ne0; i++) {
        const at = (r0 + j) * ne0 + i;
        switch (f.kind) {
          case 'const':
            x[j * ne0 + i] = f.value;
            break;
          case 'values':
            x[j * ne0 + i] = f.values[at] ?? 0;
            break;
          case 'random':
            x[j * ne0 + i] = f.std * gauss(key, i);
            break;
          default:
            throw new Error(`internal: projector tensor ${planned.name} has fill ${f.kind}`);
        }
      }
    }
    yield encode(info.type, x);
  }
}

/**
 * Write a synthetic projector for a text preset (see planProjector). Pair it with a text model of
 * the same preset (any seed: the projector depends only on the preset's n_embd and its own seed).
 */
export async function makeProjector(opts: MakeProjectorOptions): Promise<WriteResult> {
  const plan = planProjector(opts, opts.out);
  if (opts.signal?.aborted) {
    const r: unknown = opts.signal.reason;
    throw r instanceof Error ? r : new Error('makeProjector aborted');
  }
  await mkdir(dirname(opts.out), { recursive: true });
  return writeGguf(opts.out, plan.layout, (info, i) => projectorChunks(plan.seed, plan.tensors[i]!, info), {
    signal: opts.signal,
    onProgress: opts.onProgress,
  });
}
