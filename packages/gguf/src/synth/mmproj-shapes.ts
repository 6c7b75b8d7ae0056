// What a synthetic projector (mmproj) is: which kind a text preset gets, the scaled-down vision
// tower of each kind, and the tensor types the converter gives an F16 mmproj. The tensors and
// keys of each kind are in mmproj-qwen3vl.ts and mmproj-gemma4v.ts; mmproj.ts writes the file.

import { GgmlType } from '../types.js';
import type { Arch, Preset } from './preset-types.js';
import { listPresets } from './presets.js';

/**
 * Projector kinds, named after the text family they feed:
 * - `qwen3vl`: clip projector type `qwen3vl_merger` (conversion/qwen3vl.py writes it for
 *   Qwen3-VL and for Qwen3.5 / Qwen3.6, whose text architecture is qwen35moe);
 * - `gemma4`: clip projector type `gemma4v` (conversion/gemma.py, Gemma4VisionAudioModel).
 */
export type ProjectorKind = 'qwen3vl' | 'gemma4';

/** Each kind's llama.cpp projector type (tools/mtmd/clip-impl.h, PROJECTOR_TYPE_NAMES). */
export const PROJECTOR_TYPE: Readonly<Record<ProjectorKind, string>> = {
  qwen3vl: 'qwen3vl_merger',
  gemma4: 'gemma4v',
};

/** The projector kind of each text architecture that has one (a real mmproj exists for it). */
const KIND_OF_ARCH: Readonly<Partial<Record<Arch, ProjectorKind>>> = {
  qwen35moe: 'qwen3vl',
  gemma4: 'gemma4',
};

/** The projector kind a preset gets, or undefined when its architecture has no vision tower. */
export function projectorKindOf(preset: Preset): ProjectorKind | undefined {
  return KIND_OF_ARCH[preset.shape.arch];
}

/** Names of the presets that have a projector kind, in listPresets() order. */
export function presetsWithProjector(): string[] {
  return listPresets()
    .filter((p) => projectorKindOf(p) !== undefined)
    .map((p) => p.name);
}

/**
 * A vision tower scaled down from the real one: the real layer structure, patch size and
 * preprocessing, with a narrow width and two layers, so a test image costs milliseconds.
 */
export interface VisionShape {
  /** vision hidden size (clip.vision.embedding_length) */
  readonly nEmbd: number;
  /** MLP width (clip.vision.feed_forward_length) */
  readonly nFf: number;
  readonly nLayer: number;
  readonly nHead: number;
  /** pixels per patch side; the real models' value */
  readonly patchSize: number;
  /** clip.vision.image_size: what the converter writes (see each kind) */
  readonly imageSize: number;
  readonly eps: number;
  readonly imageMean: readonly [number, number, number];
  readonly imageStd: readonly [number, number, number];
  /**
   * Rows of the learned position table: qwen3vl's is a square grid (interpolated to the image's
   * patch grid), gemma4v's a lookup per patch column and per patch row.
   */
  readonly nPos: number;
}

/**
 * Qwen3.5 / 3.6's vision tower (HF vision_config of Qwen3.6-35B-A3B: depth 27, hidden 1152,
 * intermediate 4304, 16 heads, patch 16, spatial_merge_size 2, 2304 position embeddings,
 * deepstack_visual_indexes []) at width 64: 2 heads of 32 (M-RoPE needs a head size divisible
 * by 4). The position grid is 16 × 16 instead of 48 × 48; the converter derives image_size from
 * it (√2304 · 16 = 768 for the real one).
 */
export const QWEN3VL_VISION: VisionShape = {
  nEmbd: 64, nFf: 256, nLayer: 2, nHead: 2, patchSize: 16, imageSize: 16 * 16, eps: 1e-6,
  imageMean: [0.5, 0.5, 0.5], imageStd: [0.5, 0.5, 0.5], nPos: 16 * 16,
};

/**
 * Gemma 4's vision tower (HF vision_config of gemma-4-26B-A4B: 27 layers, hidden 1152,
 * intermediate 4304, 16 heads of 72, patch 16, pooling_kernel_size 3, position_embedding_size
 * 10240) at width 64: 2 heads of 32 (the 2-D RoPE needs a head size divisible by 4). The position
 * tables keep the real 10240 rows: they bound the patch columns and rows of an image llama.cpp
 * accepts, not the width. image_size is the converter's constant 224 (unused for gemma4v). The
 * model maps pixels to [-1, 1] itself, so mean 0 and std 1.
 */
export const GEMMA4V_VISION: VisionShape = {
  nEmbd: 64, nFf: 256, nLayer: 2, nHead: 2, patchSize: 16, imageSize: 224, eps: 1e-6,
  imageMean: [0, 0, 0], imageStd: [1, 1, 1], nPos: 10240,
};

/**
 * The type conversion/base.py gives a tensor of an F16 mmproj (`--outtype f16`, as the
 * published mmproj-F16 files are made): patch embeddings F16 (MmprojModel.tensor_force_quant);
 * 1-D tensors, norms, position embeddings and names not ending in `.weight` F32; every other
 * weight F16.
 */
export function mmprojTensorType(name: string, dims: readonly number[]): GgmlType {
  if (name.includes('.patch_embd.weight')) return GgmlType.F16;
  if (dims.length <= 1 || name.endsWith('_norm.weight')) return GgmlType.F32;
  if (name === 'v.position_embd.weight' || !name.endsWith('.weight')) return GgmlType.F32;
  return GgmlType.F16;
}

/** general.file_type of an F16 file (LlamaFileType.MOSTLY_F16). */
export const MOSTLY_F16 = 1;
