// The model picker's data: every GGUF in the models folder (and in its folders one level down)
// with its header facts (nothing is loaded), the settings the demo would load it with on this
// device, and the image projector it would load beside it.
//
// A vision model comes with a projector, `mmproj*.gguf` (its image encoder, named so on the hub);
// `bmoe serve` takes the one beside the model (`--mmproj auto`). The demo's folder holds many
// models, and a projector fits only its own model (llama.cpp refuses another width, and a text
// model would carry a useless encoder in RAM), so the demo gives a model the projector beside it
// only where that is unambiguous: in a folder of its own (`models/gemma-4/`), or in the models
// folder itself when that holds one model.
import type { Dirent } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { findProjector, inspectModel } from '@bmoe/engine';
import { chooseSettings, type DemoSettings, type DeviceFacts } from './settings.js';

/** The image projector a model is loaded with. */
export interface ProjectorEntry {
  /** Its name inside the models folder, e.g. `gemma-4/mmproj-F16.gguf`. */
  file: string;
  path: string;
  /** Its size: it is held in RAM beside the model. */
  bytes: number;
}

export interface ModelEntry {
  /** File name inside the models folder, `folder/name.gguf` one level down (what the picker sends back). */
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
  /** The projector loaded beside it (the model then takes images), or null. */
  projector: ProjectorEntry | null;
  error: string | null;
}

/** The picker's list: the models, and the projectors no model gets (the page says why). */
export interface ModelList {
  models: ModelEntry[];
  /** `mmproj*.gguf` files of the models folder itself while it holds several models. */
  unpairedProjectors: string[];
}

/** An image projector's name, as the hub names them (and as `bmoe serve --mmproj auto` finds them). */
export function isProjectorFile(name: string): boolean {
  return /^mmproj.*\.gguf$/i.test(name);
}

/**
 * True for names the picker lists: `*.gguf`, not hidden, and not a later shard of a split model
 * (`*-00002-of-00003.gguf`: the first shard names the whole model).
 */
export function isModelFile(name: string): boolean {
  const shard = /-(\d{5,})-of-\d{5,}\.gguf$/.exec(name);
  return !name.startsWith('.') && name.toLowerCase().endsWith('.gguf') && (shard === null || Number(shard[1]) === 1) && !isProjectorFile(name);
}

/** The GGUFs of `dir` and of its folders one level down, sorted by name. A missing folder lists nothing. */
export async function listModels(dir: string, device: DeviceFacts): Promise<ModelEntry[]> {
  return (await listModelsFolder(dir, device)).models;
}

/** listModels, with the projectors of the models folder that no model gets. */
export async function listModelsFolder(dir: string, device: DeviceFacts): Promise<ModelList> {
  const top = await entriesOf(dir);
  if (top === null) return { models: [], unpairedProjectors: [] };
  const models: ModelEntry[] = [];
  const topModels = await modelFiles(dir, top);
  // The models folder itself: its projector is a model's only when that model is alone there.
  const alone = topModels.length === 1;
  for (const file of topModels) models.push(await describeModelFile(join(dir, file), device, { file, projector: alone ? 'beside' : 'none' }));
  for (const sub of top.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name)) {
    const entries = await entriesOf(join(dir, sub));
    for (const name of entries === null ? [] : await modelFiles(join(dir, sub), entries)) {
      const file = `${sub}/${name}`;
      models.push(await describeModelFile(join(dir, sub, name), device, { file, projector: 'beside' }));
    }
  }
  models.sort((a, b) => a.file.localeCompare(b.file));
  const unpairedProjectors = alone || topModels.length === 0 ? [] : top.filter((e) => e.isFile() && isProjectorFile(e.name)).map((e) => e.name).sort();
  return { models, unpairedProjectors };
}

/** A folder's entries, or null when it is missing or not a folder. */
async function entriesOf(dir: string): Promise<Dirent[] | null> {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return null;
    throw err;
  }
}

/** The model files among a folder's entries (links followed), by name. */
async function modelFiles(dir: string, entries: Dirent[]): Promise<string[]> {
  const out: string[] = [];
  for (const e of entries) {
    if (!isModelFile(e.name) || e.isDirectory()) continue;
    const st = await stat(join(dir, e.name)).catch(() => null);
    if (st?.isFile()) out.push(e.name);
  }
  return out.sort((a, b) => a.localeCompare(b));
}

export interface DescribeOptions {
  /** The name the picker shows. Default: the file name. */
  file?: string;
  /**
   * 'beside': the `mmproj*.gguf` beside the model, as `bmoe serve` takes it (the hub's order when
   * there are several); 'none': no projector. Default 'beside'.
   */
  projector?: 'beside' | 'none';
}

/** One GGUF's picker entry (header only; an unreadable file gives an entry with `error`). */
export async function describeModelFile(path: string, device: DeviceFacts, opts: DescribeOptions = {}): Promise<ModelEntry> {
  const file = opts.file ?? basename(path);
  const projector = opts.projector === 'none' ? null : await projectorBeside(path, file);
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
      projector,
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
      projector: null,
      error: err instanceof Error ? err.message : String(err),
    };
  }
}

/** The projector beside the model at `path`, named like the model's `file` (same folder). */
async function projectorBeside(path: string, file: string): Promise<ProjectorEntry | null> {
  const found = await findProjector(path);
  if (found === null) return null;
  const folder = file.includes('/') ? file.slice(0, file.lastIndexOf('/') + 1) : '';
  return { file: `${folder}${basename(found)}`, path: found, bytes: (await stat(found).catch(() => null))?.size ?? 0 };
}
