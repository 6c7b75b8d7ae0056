// @bmoe/gguf — GGUF reader, streaming GGUF writer, ggml quantization codecs and synthetic MoE
// models with the real models' shapes. This is the package's only public entry point.

export { GgufError } from './errors.js';
export {
  GgmlType,
  GgufValueType,
  ggmlType,
  ggmlTypeByName,
  ggmlTypeInfo,
  ggmlTypes,
  ggufValueTypeName,
  rowBytes,
  tensorBytes,
  type GgmlTypeInfo,
} from './types.js';
export { gv, kvArray, kvNumber, kvString, type GgufValue, type GgufBigIntType, type GgufNumberType } from './values.js';
export { readGguf, MAX_KV, MAX_TENSORS, type GgufEntry, type GgufFile, type GgufShard, type GgufTensorInfo, type ReadOptions } from './reader.js';
export { readGgufModel, splitPath, splitPrefix, SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT, type GgufModel } from './split.js';
export { layoutSplit, parseSplitSize, writeGgufSplit, type SplitWriteResult } from './split-write.js';
export { rewriteGguf } from './rewrite.js';
export { DEFAULT_MAX_ITEMS, DEFAULT_MAX_STRING_BYTES, MAX_KEY_BYTES, MAX_STRING_ITEMS } from './metadata.js';
export { checkLlamaLimits, LLAMA_MAX_EXPERTS, LLAMA_MAX_LAYERS } from './llama-limits.js';
export {
  layoutGguf,
  writeGguf,
  type GgufLayout,
  type GgufSpec,
  type GgufTensorSpec,
  type TensorProducer,
  type WriteOptions,
  type WriteResult,
} from './writer.js';
export {
  describeModel,
  parseExpertName,
  type ExpertProj,
  type ExpertTensor,
  type LayerExperts,
  type ModelShape,
} from './describe.js';

// Quantization codecs (encoders follow ggml's reference layouts; decoders ggml's dequantizers).
export { codecTypes, decode, encode } from './quant/index.js';
export { f16ToF32, f32ToF16, encodeF16, decodeF16, encodeF32, decodeF32 } from './quant/f16.js';
export { encodeQ8_0, decodeQ8_0, QK8_0, Q8_0_BLOCK_BYTES } from './quant/q8_0.js';
export { encodeQ5_0, decodeQ5_0, QK5_0, Q5_0_BLOCK_BYTES } from './quant/q5_0.js';
export { encodeQ4_K, decodeQ4_K, Q4_K_BLOCK_BYTES } from './quant/q4_k.js';
export { encodeQ6_K, decodeQ6_K, Q6_K_BLOCK_BYTES } from './quant/q6_k.js';
export { encodeMXFP4, decodeMXFP4, MXFP4_BLOCK_BYTES, MXFP4_VALUES } from './quant/mxfp4.js';

// Synthetic models.
export { getPreset, listPresets, presets } from './synth/presets.js';
export type {
  Arch,
  ArchShape,
  Deepseek4Shape,
  Gemma4Shape,
  GptOssShape,
  Preset,
  QuantMix,
  Qwen3MoeShape,
  Qwen35MoeShape,
  Tuning,
} from './synth/preset-types.js';
export { planModel, type ModelPlan, type PlanOptions, type PlannedTensor } from './synth/plan.js';
export type { Fill } from './synth/arch-parts.js';
export { makeModel, plantedSuccessors, type MakeModelOptions, type MadeModel } from './synth/make-model.js';
export { routerBias, expertRanks } from './synth/fill.js';
export { buildVocab, TokenType, type SynthVocab, type VocabStyle } from './synth/tokenizer.js';
export { QWEN3_TEMPLATE, HARMONY_TEMPLATE, GEMMA4_TEMPLATE, QWEN35_TEMPLATE, DEEPSEEK4_TEMPLATE } from './synth/templates.js';

// Multimodal projectors (mmproj) for the text presets, and test images.
export {
  makeProjector,
  planProjector,
  presetsWithProjector,
  projectorKindOf,
  PROJECTOR_TYPE,
  type MakeProjectorOptions,
  type ProjectorKind,
  type ProjectorOptions,
  type ProjectorPlan,
  type VisionShape,
} from './synth/mmproj.js';
export {
  imageFormatFromPath,
  makeTestImage,
  testImagePixels,
  type ImageFormat,
  type MakeTestImageOptions,
  type TestImageOptions,
} from './synth/image.js';
