// @bmoe/engine: load a GGUF MoE model, open sessions, stream tokens with per-token metrics.
// The metrics schema is re-exported here and also available alone as `@bmoe/engine/metrics`.
export { loadModel, type EmbedOptions, type Embeddings, type Model, type ModelInfo, type Pooling, type TokenizeOptions } from './model.js';
export type { Session } from './session.js';
export type { ProjectorInfo } from './projector.js';
export { findProjector, readProjector } from './projector.js';
export { MAX_IMAGE_BYTES, MAX_IMAGE_PIXELS } from './images.js';
export type {
  AssistantMessage,
  ChatMessage,
  ContentPart,
  ImageSource,
  MessageDelta,
  ToolCall,
  ToolCallDelta,
  ToolChoice,
  ToolDefinition,
} from './messages.js';
export { StopMatcher } from './stop.js';
export { commonPrefix, MIN_EVALUATED_TOKENS, reusedPrefix } from './prefix.js';
export type { Generation, GenerationResult, PromptTokenLogprob, StopReason, TokenEvent, TokenLogprob } from './running-generation.js';
export type { GenerateOptions, LoadOptions, SessionOptions, StreamOptions, ResolvedLoadOptions, ResolvedStreamOptions } from './options/api.js';
export { defaultThreads } from './options/api.js';
export { headerInfo, inspectModel, type ExpertProjection, type ModelHeaderInfo, type ModelShardInfo } from './inspect.js';
export { isNativeAvailable } from './native.js';
export { buildNative, llamaCompletionArgs, llamaToolPath, localNativeBuild, nativeBuild, openmpAddonPath, prebuiltBinary, readCeiling, type LlamaCompletionRun, type LocalNativeBuild, type NativeBuild, type PrebuiltBinary, type ReadCeiling, type ReadCeilingOptions } from './native-tools.js';
export {
  readMemAvailableBytes,
  readDeviceSensors,
  readCpuTemperatureC,
  readBatteryTemperatureC,
  readDeviceFacts,
  readCgroupMemory,
  findMemoryCgroup,
  type CgroupMemory,
  type DeviceFacts,
  type DeviceSensors,
  type SensorPaths,
} from './system.js';
export {
  chooseParallel,
  chooseSettings,
  chooseSettingsFor,
  memoryLeft,
  PARALLEL_RULE,
  coreSettings,
  formatSize,
  usableMemory,
  SETTINGS_RULE,
  type ChosenSettings,
  type ModelFacts,
  type SettingsDecision,
  type SettingsMode,
} from './settings.js';
export { BmoeError, type BmoeErrorCode } from './errors.js';
export * from './metrics/index.js';
