// The ggml tensor types and GGUF value types, with the ids and block geometry of the pinned
// llama.cpp (ggml/include/ggml.h `enum ggml_type`, ggml/src/ggml-common.h block structs,
// gguf-py/gguf/constants.py GGMLQuantizationType / GGUFValueType). A GGUF file names its
// tensor types by these ids, so they are part of the file format: never renumber.

/** A ggml tensor type id as stored in a GGUF tensor info. */
export enum GgmlType {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  // 4 and 5 (Q4_2, Q4_3) were removed from ggml
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  // 31..33 (Q4_0_4_4 ...) and 36..38 (IQ4_NL_4_4 ...) are no longer allowed in GGUF files
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
  NVFP4 = 40,
  Q1_0 = 41,
  Q2_0 = 42,
}

/** Elements per block and bytes per block of one ggml type. */
export interface GgmlTypeInfo {
  readonly type: GgmlType;
  readonly name: string;
  /** Elements per quantization block (1 for plain element types). */
  readonly blockSize: number;
  /** Bytes per block. */
  readonly typeSize: number;
}

const QK_K = 256;

// [id, name, block size, bytes per block]; sizes are sizeof(block_*) in ggml-common.h.
const TABLE: ReadonlyArray<readonly [GgmlType, string, number, number]> = [
  [GgmlType.F32, 'F32', 1, 4],
  [GgmlType.F16, 'F16', 1, 2],
  [GgmlType.Q4_0, 'Q4_0', 32, 2 + 16],
  [GgmlType.Q4_1, 'Q4_1', 32, 2 + 2 + 16],
  [GgmlType.Q5_0, 'Q5_0', 32, 2 + 4 + 16],
  [GgmlType.Q5_1, 'Q5_1', 32, 2 + 2 + 4 + 16],
  [GgmlType.Q8_0, 'Q8_0', 32, 2 + 32],
  [GgmlType.Q8_1, 'Q8_1', 32, 2 + 2 + 32],
  [GgmlType.Q2_K, 'Q2_K', QK_K, 2 + 2 + QK_K / 16 + QK_K / 4],
  [GgmlType.Q3_K, 'Q3_K', QK_K, 2 + QK_K / 4 + QK_K / 8 + 12],
  [GgmlType.Q4_K, 'Q4_K', QK_K, 2 + 2 + QK_K / 2 + 12],
  [GgmlType.Q5_K, 'Q5_K', QK_K, 2 + 2 + QK_K / 2 + QK_K / 8 + 12],
  [GgmlType.Q6_K, 'Q6_K', QK_K, 2 + QK_K / 2 + QK_K / 4 + QK_K / 16],
  [GgmlType.Q8_K, 'Q8_K', QK_K, 4 + QK_K + (QK_K / 16) * 2],
  [GgmlType.IQ2_XXS, 'IQ2_XXS', QK_K, 2 + QK_K / 4],
  [GgmlType.IQ2_XS, 'IQ2_XS', QK_K, 2 + QK_K / 4 + QK_K / 32],
  [GgmlType.IQ3_XXS, 'IQ3_XXS', QK_K, 2 + QK_K / 4 + QK_K / 8],
  [GgmlType.IQ1_S, 'IQ1_S', QK_K, 2 + QK_K / 8 + QK_K / 16],
  [GgmlType.IQ4_NL, 'IQ4_NL', 32, 2 + 16],
  [GgmlType.IQ3_S, 'IQ3_S', QK_K, 2 + QK_K / 4 + QK_K / 8 + QK_K / 32 + 4],
  [GgmlType.IQ2_S, 'IQ2_S', QK_K, 2 + QK_K / 4 + QK_K / 16],
  [GgmlType.IQ4_XS, 'IQ4_XS', QK_K, 2 + 2 + QK_K / 2 + QK_K / 64],
  [GgmlType.I8, 'I8', 1, 1],
  [GgmlType.I16, 'I16', 1, 2],
  [GgmlType.I32, 'I32', 1, 4],
  [GgmlType.I64, 'I64', 1, 8],
  [GgmlType.F64, 'F64', 1, 8],
  [GgmlType.IQ1_M, 'IQ1_M', QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32],
  [GgmlType.BF16, 'BF16', 1, 2],
  [GgmlType.TQ1_0, 'TQ1_0', QK_K, 2 + 4 * 13],
  [GgmlType.TQ2_0, 'TQ2_0', QK_K, 2 + 64],
  [GgmlType.MXFP4, 'MXFP4', 32, 1 + 16],
  [GgmlType.NVFP4, 'NVFP4', 64, 4 + 32],
  [GgmlType.Q1_0, 'Q1_0', 128, 2 + 16],
  [GgmlType.Q2_0, 'Q2_0', 64, 2 + 16],
];

const BY_ID = new Map<number, GgmlTypeInfo>(
  TABLE.map(([type, name, blockSize, typeSize]) => [type, { type, name, blockSize, typeSize }]),
);
const BY_NAME = new Map<string, GgmlTypeInfo>([...BY_ID.values()].map((t) => [t.name, t]));

/** Geometry of a ggml type id, or undefined when the id is not a type a GGUF file may use. */
export function ggmlTypeInfo(type: number): GgmlTypeInfo | undefined {
  return BY_ID.get(type);
}

/** Geometry of a known ggml type; throws on an id outside the table (a programming error). */
export function ggmlType(type: GgmlType): GgmlTypeInfo {
  const info = BY_ID.get(type);
  if (!info) throw new Error(`unknown ggml type ${type}`);
  return info;
}

/** The ggml type with this name ("Q4_K", "f16", ...; case-insensitive). */
export function ggmlTypeByName(name: string): GgmlTypeInfo | undefined {
  return BY_NAME.get(name.toUpperCase());
}

/** All ggml types GGUF files may use, in id order. */
export function ggmlTypes(): GgmlTypeInfo[] {
  return [...BY_ID.values()];
}

/**
 * Bytes of a tensor of this type and shape (ggml order, ne0 first), as ggml_nbytes computes it
 * for a contiguous tensor. Throws when ne0 is not a multiple of the block size (ggml refuses such
 * tensors). Callers that parse untrusted shapes range-check with bigints first (see reader.ts).
 */
export function tensorBytes(type: GgmlType, dims: readonly number[]): number {
  const info = ggmlType(type);
  const ne0 = dims[0] ?? 1;
  if (ne0 % info.blockSize !== 0) {
    throw new Error(`${info.name} rows need a multiple of ${info.blockSize} elements, got ${ne0}`);
  }
  let rows = 1;
  for (let i = 1; i < dims.length; i++) rows *= dims[i] ?? 1;
  return (ne0 / info.blockSize) * info.typeSize * rows;
}

/** Bytes of one row (ne0 elements) of this type. */
export function rowBytes(type: GgmlType, ne0: number): number {
  const info = ggmlType(type);
  if (ne0 % info.blockSize !== 0) {
    throw new Error(`${info.name} rows need a multiple of ${info.blockSize} elements, got ${ne0}`);
  }
  return (ne0 / info.blockSize) * info.typeSize;
}

/** GGUF metadata value types (gguf-py GGUFValueType). */
export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** Bytes of one scalar of a fixed-size GGUF value type (0 for STRING/ARRAY). */
export function ggufScalarSize(t: GgufValueType): number {
  switch (t) {
    case GgufValueType.UINT8:
    case GgufValueType.INT8:
    case GgufValueType.BOOL:
      return 1;
    case GgufValueType.UINT16:
    case GgufValueType.INT16:
      return 2;
    case GgufValueType.UINT32:
    case GgufValueType.INT32:
    case GgufValueType.FLOAT32:
      return 4;
    case GgufValueType.UINT64:
    case GgufValueType.INT64:
    case GgufValueType.FLOAT64:
      return 8;
    default:
      return 0;
  }
}

const VALUE_TYPE_NAMES: Readonly<Record<GgufValueType, string>> = {
  [GgufValueType.UINT8]: 'uint8',
  [GgufValueType.INT8]: 'int8',
  [GgufValueType.UINT16]: 'uint16',
  [GgufValueType.INT16]: 'int16',
  [GgufValueType.UINT32]: 'uint32',
  [GgufValueType.INT32]: 'int32',
  [GgufValueType.FLOAT32]: 'float32',
  [GgufValueType.BOOL]: 'bool',
  [GgufValueType.STRING]: 'string',
  [GgufValueType.ARRAY]: 'array',
  [GgufValueType.UINT64]: 'uint64',
  [GgufValueType.INT64]: 'int64',
  [GgufValueType.FLOAT64]: 'float64',
};

/** The name of a GGUF value type ("uint32", "float32", "array", ...). */
export function ggufValueTypeName(t: GgufValueType): string {
  return VALUE_TYPE_NAMES[t] ?? `type ${String(t)}`;
}
