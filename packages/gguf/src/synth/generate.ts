// makeModel: stream a planned synthetic model to disk with bounded memory.

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeGguf, type WriteResult } from '../writer.js';
import { buildFillContext, tensorChunks } from './fill.js';
import { planModel, type ModelPlan, type PlanOptions } from './plan.js';

export interface MakeModelOptions extends PlanOptions {
  /** Destination path; written as `<out>.partial` and renamed when complete. Parent dirs are created. */
  readonly out: string;
  /** Abort the write; the partial file is removed and nothing is left at `out`. */
  readonly signal?: AbortSignal;
  /** Progress in bytes of the final file. */
  readonly onProgress?: (doneBytes: number, totalBytes: number) => void;
}

export type MadeModel = WriteResult;

function checkFeasible(plan: ModelPlan): void {
  const hasRouterBias = plan.tensors.some((t) => t.fill.kind === 'routerBias');
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
  return writeGguf(opts.out, plan.layout, (info, i) => tensorChunks(ctx, plan.tensors[i]!, info), {
    signal: opts.signal,
    onProgress: opts.onProgress,
  });
}

/** The planted successor pairs of a model: succ[t] for every real (non-padding) token t. */
export function plantedSuccessors(opts: PlanOptions): ReadonlyArray<readonly [number, number]> {
  return buildFillContext(planModel(opts)).successors.succ;
}
