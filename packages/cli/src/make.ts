// Writing a synthetic model with progress on stderr; shared by `make-model` and `demo`.
import { makeModel } from '@bmoe/gguf';
import { createProgress } from './progress.js';

export interface MadeModel {
  path: string;
  bytes: number;
  sha256: string;
}

export interface MakeSpec {
  preset: string;
  out: string;
  layers?: number;
  quant?: string;
  seed?: number;
  routerSkew?: number;
  signal?: AbortSignal;
}

export async function makeWithProgress(spec: MakeSpec, label: string): Promise<MadeModel> {
  const progress = createProgress(label);
  try {
    const res = await makeModel({ ...spec, onProgress: (done: number, total: number) => progress.update(done, total) });
    return { path: res.path, bytes: res.bytes, sha256: res.sha256 };
  } finally {
    progress.stop();
  }
}
