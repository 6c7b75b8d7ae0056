// The model picker's data: every GGUF in the models folder with its header facts (nothing is
// loaded) and the settings the demo would load it with on this device.
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { inspectModel } from '@bmoe/engine';
import { chooseSettings, type DemoSettings, type DeviceFacts } from './settings.js';

export interface ModelEntry {
  /** File name inside the models folder (what the picker sends back). */
  file: string;
  path: string;
  fileBytes: number;
  /** Header facts; null when the file is not a readable GGUF (then `error` says why). */
  architecture: string | null;
  name: string | null;
  layers: number | null;
  experts: number | null;
  expertsUsed: number | null;
  denseBytes: number | null;
  expertBytes: number | null;
  workingSetBytes: number | null;
  /** The settings a load would use; null when unreadable. */
  settings: DemoSettings | null;
  error: string | null;
}

/**
 * True for names the picker lists: `*.gguf`, not hidden, and not a later shard of a split model
 * (`*-00002-of-00003.gguf`: the first shard names the whole model).
 */
export function isModelFile(name: string): boolean {
  const shard = /-(\d{5,})-of-\d{5,}\.gguf$/.exec(name);
  return !name.startsWith('.') && name.toLowerCase().endsWith('.gguf') && (shard === null || Number(shard[1]) === 1);
}

/** The GGUFs directly inside `dir`, sorted by file name. A missing folder lists nothing. */
export async function listModels(dir: string, device: DeviceFacts): Promise<ModelEntry[]> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter(isModelFile).sort((a, b) => a.localeCompare(b));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: ModelEntry[] = [];
  for (const file of names) {
    const path = join(dir, file);
    const st = await stat(path).catch(() => null);
    if (!st?.isFile()) continue;
    out.push(await describeModelFile(path, device));
  }
  return out;
}

/** One GGUF's picker entry (header only; an unreadable file gives an entry with `error`). */
export async function describeModelFile(path: string, device: DeviceFacts): Promise<ModelEntry> {
  const file = basename(path);
  try {
    const info = await inspectModel(path);
    return {
      file,
      path,
      fileBytes: info.fileBytes,
      architecture: info.architecture,
      name: info.name,
      layers: info.layers,
      experts: info.experts,
      expertsUsed: info.expertsUsed,
      denseBytes: info.denseBytes,
      expertBytes: info.expertBytes,
      workingSetBytes: info.workingSetBytes,
      settings: chooseSettings(info, device),
      error: null,
    };
  } catch (err) {
    return {
      file,
      path,
      fileBytes: (await stat(path).catch(() => null))?.size ?? 0,
      architecture: null,
      name: null,
      layers: null,
      experts: null,
      expertsUsed: null,
      denseBytes: null,
      expertBytes: null,
      workingSetBytes: null,
      settings: null,
      error: err instanceof Error ? err.message : String(err),
    };
  }
}
