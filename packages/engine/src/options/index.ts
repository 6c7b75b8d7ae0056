// @bmoe/engine/options: the option table and what is derived from it that needs no zod and
// nothing native (the CLI builds its flags from it at startup; the demo turns options into flags).
export {
  OPTION_TABLE,
  optionRow,
  findOption,
  optionByFlag,
  optionRows,
  leafKey,
  getPath,
  setPath,
  contractField,
  flagSets,
  boolFlagFor,
  type ApiKeysOf,
  type ContractField,
  type NativeKey,
  type NativeKeysOf,
  type NativeParams,
  type OptionGroup,
  type OptionKey,
  type OptionRow,
} from './table.js';
export { checkValue, parseValue, show, type ValueSpec, type IntSpec, type NumberSpec, type BoolSpec, type EnumSpec, type StringSpec } from './values.js';
export {
  OptionError,
  OptionRef,
  apiName,
  flagName,
  describeOptionError,
  opt,
  optionError,
  renderParts,
  type OptionErrorPart,
  type OptionNamer,
} from './errors.js';
export { loadOptionFlags, generateOptionFlags } from './flags.js';
export { nativeContextParams, nativeGenerateParams, nativeModelParams, nativePrepareOptions } from './native.js';
export type { GenerateOptions, LoadOptions, SessionOptions, StreamOptions, ResolvedLoadOptions, ResolvedStreamOptions, ResolvedGenerateOptions } from './api.js';
