// Writing a synthetic model with progress on stderr; shared by `make-model` and `demo`.
import { makeModel } from '@bmoe/gguf';
import { createProgress } from './progress.js';

export interface MadeModel {
  /** The file, or the first shard of a split model. */
  path: string;
  /** All bytes written (every shard). */
  bytes: number;
  /** The file's hash (a split model's: of its shards concatenated in order). */
  sha256: string;
  /** Every file written, in order (one unless split). */
  shards: Array<{ path: string; bytes: number; sha256: string }>;
}

export interface MakeSpec {
  preset: string;
  out: string;
  layers?: number;
  quant?: string;
  seed?: number;
  routerSkew?: number;
  /** Write shards of at most this many tensor bytes (llama-gguf-split's --split-max-size). */
  splitMaxBytes?: number;
  signal?: AbortSignal;
}

export async function makeWithProgress(spec: MakeSpec, label: string): Promise<MadeModel> {
  const progress = createProgress(label);
  try {
    const res = await makeModel({ ...spec, onProgress: (done: number, total: number) => progress.update(done, total) });
    return { path: res.path, bytes: res.bytes, sha256: res.sha256, shards: res.shards.map((s) => ({ path: s.path, bytes: s.bytes, sha256: s.sha256 })) };
  } finally {
    progress.stop();
  }
}
