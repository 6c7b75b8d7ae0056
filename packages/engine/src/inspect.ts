// What the GGUF header alone says about a model (no native addon): what `bmoe info` prints and
// what Model.info extends. The expert/dense split and the working set come from @bmoe/gguf's
// describeModel, the one place that classifies tensors.
import { stat } from 'node:fs/promises';
import { GgufError, checkLlamaLimits, describeModel, readGgufModel, type GgufFile, type GgufModel } from '@bmoe/gguf';
import { BmoeError, messageOf } from './errors.js';
import { opt, optionError } from './options/errors.js';

export type ExpertProjection = 'gate' | 'up' | 'down' | 'gate_up';

/** One file of a model: the model file, or one shard of a split model. */
export interface ModelShardInfo {
  path: string;
  bytes: number;
}

export interface ModelHeaderInfo {
  /** The model file, or the first shard of a split model (how the model is named). */
  path: string;
  /** Bytes of all the model's files (every shard of a split model). */
  fileBytes: number;
  /** The model's files in order: the file itself, or every shard (`<prefix>-0000k-of-0000n.gguf`). */
  shards: ModelShardInfo[];
  architecture: string;
  name: string | null;
  layers: number;
  /** Experts per MoE layer (0 for a dense model). */
  experts: number;
  /** Top-k in force: the `nExpertUsed` asked for, or the model's own. */
  expertsUsed: number;
  /** The model's own top-k (`<arch>.expert_used_count`). */
  expertsUsedDefault: number;
  embeddingLength: number;
  /** KV cache bytes per token of context at the default f16 cache (every session holds contextSize of them). */
  kvBytesPerToken: number;
  vocabSize: number;
  contextLength: number | null;
  tensors: number;
  /** Tensor bytes per ggml type name, largest first. */
  quantTypes: Array<{ type: string; bytes: number }>;
  /** All tensor data bytes (of every shard). */
  totalBytes: number;
  /** Bytes that stay resident: everything but the routed expert weights. */
  denseBytes: number;
  /** Bytes of the routed expert weights (what streaming reads on demand). */
  expertBytes: number;
  /** Bytes of one expert's slice per projection (the largest over layers where quant types differ). */
  expertSliceBytes: Partial<Record<ExpertProjection, number>>;
  /** One token's routed working set at the top-k in force: every MoE layer reads k experts. */
  workingSetBytes: number;
  /** The same at the model's own top-k. */
  workingSetBytesDefault: number;
}

/**
 * Reads and validates the header (never the tensor data) of a model file or of a split model
 * given by its first shard (then of every shard: @bmoe/gguf readGgufModel). Missing, unreadable,
 * non-GGUF, truncated or absurd files, a missing shard or one of another model throw
 * BmoeError('E_MODEL') with one line naming the file, and so do
 * shapes the pinned llama.cpp would abort the process on (checkLlamaLimits: too many experts or
 * layers, a wrongly typed count, metadata too large to check, ...): `bmoe run`, `bmoe info`, the
 * server and the demo all come through here before anything native runs.
 */
export async function readModelFile(path: string): Promise<GgufModel> {
  try {
    const st = await stat(path);
    if (!st.isFile()) throw new BmoeError('E_MODEL', `${path}: not a regular file`);
  } catch (err) {
    if (err instanceof BmoeError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new BmoeError('E_MODEL', code === 'ENOENT' ? `${path}: no such file` : `${path}: ${messageOf(err)}`, { cause: err });
  }
  try {
    const file = await readGgufModel(path);
    checkLlamaLimits(file);
    return file;
  } catch (err) {
    // GgufError messages already start with the path.
    const msg = err instanceof GgufError ? messageOf(err) : `${path}: ${messageOf(err)}`;
    throw new BmoeError('E_MODEL', msg, { cause: err });
  }
}

/**
 * The header facts of a parsed model (readModelFile) or planned GGUF. `nExpertUsed` (default: the model's own top-k)
 * is checked against the expert count: throws BmoeError('E_OPTION') when out of range.
 */
export function headerInfo(file: GgufFile, nExpertUsed?: number | null): ModelHeaderInfo {
  let shape;
  try {
    shape = describeModel(file);
  } catch (err) {
    throw new BmoeError('E_MODEL', messageOf(err), { cause: err });
  }
  const k = nExpertUsed ?? shape.expertsUsed;
  if (nExpertUsed !== undefined && nExpertUsed !== null) {
    if (shape.experts === 0) {
      throw optionError`${opt('nExpertUsed')} needs a mixture-of-experts model, ${file.path} (${shape.architecture}) has no experts`;
    }
    if (!Number.isInteger(k) || k < 1 || k > shape.experts) {
      throw optionError`${opt('nExpertUsed')} must be an integer from 1 to the model's expert count (${shape.experts}), got ${k}`;
    }
  }
  return {
    path: file.path,
    fileBytes: file.fileSize,
    shards: (file.shards ?? [file]).map((f) => ({ path: f.path, bytes: f.fileSize })),
    architecture: shape.architecture,
    name: shape.name ?? null,
    layers: shape.layers,
    experts: shape.experts,
    expertsUsed: k,
    expertsUsedDefault: shape.expertsUsed,
    embeddingLength: shape.embeddingLength,
    kvBytesPerToken: shape.kvBytesPerToken,
    vocabSize: shape.vocabSize,
    contextLength: shape.contextLength ?? null,
    tensors: file.tensors.length,
    quantTypes: Object.entries(shape.quantTypes)
      .map(([type, bytes]) => ({ type, bytes }))
      .sort((a, b) => b.bytes - a.bytes),
    totalBytes: shape.totalBytes,
    denseBytes: shape.denseBytes,
    expertBytes: shape.expertBytes,
    expertSliceBytes: { ...shape.expertSliceBytes },
    workingSetBytes: shape.workingSetBytes(k),
    workingSetBytesDefault: shape.workingSetBytes(),
  };
}

/** Header facts of the model in `path`, without loading it. */
export async function inspectModel(path: string, options: { nExpertUsed?: number } = {}): Promise<ModelHeaderInfo> {
  return headerInfo(await readModelFile(path), options.nExpertUsed);
}
