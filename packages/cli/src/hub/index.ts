// Model references for every command that takes a model: `hf:owner/repo[:QUANT]`,
// `hf:owner/repo/path/file.gguf` or an http(s) URL instead of a local GGUF path. This module is
// cheap to import; the download machinery (and @huggingface/hub) loads only when a reference is used.
import { isModelRef } from './ref.js';
import type { PullOptions, PullResult } from './pull.js';

export { isModelRef, parseModelRef, PullError, type ModelRef } from './ref.js';
export { modelsDir } from './models-dir.js';
export { pulledProjector } from './manifest.js';
export type { PullOptions, PullResult } from './pull.js';

/** Downloads what a reference names into the models folder (files present and verified are skipped). */
export async function pullModel(ref: string, opts: PullOptions = {}): Promise<PullResult> {
  const pull = await import('./pull.js');
  return pull.pullModel(ref, opts);
}

/**
 * A MODEL argument as run, chat, serve and bench take it: a local path comes back unchanged; a
 * reference is pulled first and the local path of its first file comes back. A reference an
 * earlier pull recorded, with its files intact, is used without asking the hub (works offline).
 */
export async function resolveModelArg(arg: string, opts: Omit<PullOptions, 'preferLocal'> = {}): Promise<string> {
  if (!isModelRef(arg)) return arg;
  return (await pullModel(arg, { ...opts, preferLocal: true })).path;
}

/** Bench arguments with every `--model REF` (or `--model=REF`) pulled and replaced by its local path. */
export async function resolveModelFlags(args: readonly string[], opts: Omit<PullOptions, 'preferLocal'> = {}): Promise<string[]> {
  const out = [...args];
  for (let i = 0; i < out.length && out[i] !== '--'; i++) {
    const a = out[i]!;
    if (a === '--model' && i + 1 < out.length) out[i + 1] = await resolveModelArg(out[++i]!, opts);
    else if (a.startsWith('--model=')) out[i] = `--model=${await resolveModelArg(a.slice('--model='.length), opts)}`;
  }
  return out;
}
