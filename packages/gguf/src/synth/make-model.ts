// makeModel: stream a planned synthetic model to disk with bounded memory.

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeGgufSplit } from '../split-write.js';
import { writeGguf, type WriteResult } from '../writer.js';
import { buildFillContext, tensorChunks } from './fill.js';
import { planModel, type ModelPlan, type PlanOptions } from './plan.js';
import type { GgufTensorInfo } from '../reader.js';

export interface MakeModelOptions extends PlanOptions {
  /** Destination path; written as `<out>.partial` and renamed when complete. Parent dirs are created. */
  readonly out: string;
  /** Abort the write; the partial file is removed and nothing is left at `out`. */
  readonly signal?: AbortSignal;
  /** Progress in bytes of the final file. */
  readonly onProgress?: (doneBytes: number, totalBytes: number) => void;
  /**
   * Write the model as shards of at most this many tensor bytes each, laid out as
   * `llama-gguf-split --split-max-size` would: `<out without .gguf>-00001-of-0000N.gguf`, ...
   * Default: one file at `out`.
   */
  readonly splitMaxBytes?: number;
}

/**
 * What was written: `path` is the file (the first shard of a split model), `bytes` the total,
 * `sha256` the hash of the file (of the shards concatenated in order), `shards` every file.
 */
export interface MadeModel extends WriteResult {
  readonly shards: readonly WriteResult[];
}

function checkFeasible(plan: ModelPlan): void {
  const hasRouterBias = plan.tensors.some((t) => t.fill.kind === 'routerBias' || t.fill.kind === 'hashRoute');
  if (plan.routerSkew > 0 && !hasRouterBias && plan.preset.tuning.sharedDirection <= 0) {
    throw new RangeError(`preset ${plan.preset.name} cannot carry a router skew (no router bias and no shared direction)`);
  }
}

/**
 * Generate a synthetic model file. The same options always produce the same bytes (and so the
 * same sha256); memory use is bounded by one chunk of a few MB plus the small planted tables,
 * whatever the file size.
 */
export async function makeModel(opts: MakeModelOptions): Promise<MadeModel> {
  const plan = planModel(opts, opts.out);
  checkFeasible(plan);
  if (opts.signal?.aborted) {
    const r: unknown = opts.signal.reason;
    throw r instanceof Error ? r : new Error('makeModel aborted');
  }
  await mkdir(dirname(opts.out), { recursive: true });
  const ctx = buildFillContext(plan);
  const produce = (info: GgufTensorInfo, i: number): Iterable<Uint8Array> => tensorChunks(ctx, plan.tensors[i]!, info);
  const write = { signal: opts.signal, onProgress: opts.onProgress };
  if (opts.splitMaxBytes !== undefined) {
    return writeGgufSplit(opts.out.replace(/\.gguf$/, ''), plan.layout, opts.splitMaxBytes, produce, write);
  }
  const made = await writeGguf(opts.out, plan.layout, produce, write);
  return { ...made, shards: [made] };
}

/** The planted successor pairs of a model: succ[t] for every real (non-padding) token t. */
export function plantedSuccessors(opts: PlanOptions): ReadonlyArray<readonly [number, number]> {
  return buildFillContext(planModel(opts)).successors.succ;
}
