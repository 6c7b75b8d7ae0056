// The settings rule: how to load a model on this machine, so that a person with a model file is
// one command away from the best speed their memory allows. A pure function of the model's header
// facts, the machine's memory and cores, and what the user asked for explicitly; `bmoe run`,
// `bmoe chat`, `bmoe serve` and the phone demo all load through it.
//
// The rule (sizes in bytes, MiB = 2^20):
//   usable   = min(MemAvailable - floor,                    floor = 1 GiB, what cacheMb 'auto' leaves
//                  cgroup room - max(128 MiB, 10 % of its limit))   room = limit - (usage - inactive
//              page cache), over the process's memory cgroup and its ancestors; no cgroup on Android
//   overhead = 512 MiB                                       KV cache, compute buffers, Node itself
//   1. resident when file + projector + overhead <= usable (fastest), or when there are no experts
//      to stream (projector: the image projector loaded beside the model, if any; always resident)
//   2. otherwise stream the experts with
//        ceiling = min(usable - dense - projector - overhead, expert bytes)
//      a. ceiling >= one token's working set: cache 'auto' capped at the ceiling (the native side
//         takes what MemAvailable and the cgroup leave above 1 GiB at load time, never more)
//      b. otherwise no cache: every routed expert is read each token
//   overlap and route-ahead 'auto': whether hiding reads behind compute, or reading the predicted
//   experts ahead, pays depends on the disk, the cache, the cores and what else runs, so the rule
//   does not guess; the streamer times every combination and keeps the fastest (core-native
//   stream/decode_choice.h).
//   repack (ggml's repacked weight layouts, llama.cpp's default): on, except for a resident model
//   that does not fit (a repacked copy is anonymous memory the page cache cannot give back)
//   compute threads: min(4, cores) (phones' little cores and 2-core VMs regress beyond 4);
//   read lanes: 4, whatever the cores (lanes wait on flash, not on a core: 4 lanes roughly triple
//   a phone's flash bandwidth over one, and 2 → 4 lanes still gained 4–12 % on 2 shared cores).
// What the user gave wins: `threads` (-t) and the other context/model options are kept, and a
// given `stream` (--moe-stream or --no-moe-stream, with their flags) replaces the rule's choice.
import { stat } from 'node:fs/promises';
import { findProjector } from './projector.js';
import { inspectModel, type ModelHeaderInfo } from './inspect.js';
import type { LoadOptions } from './options/api.js';
import { NATIVE_CONSTANTS } from '@bmoe/core-native/contract';
import { optionRow } from './options/table.js';
import { readDeviceFacts, type DeviceFacts } from './system.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** The rule's constants, exported so docs, pages and tests quote one source. */
export const SETTINGS_RULE = {
  /** MemAvailable left to the rest of the system: the floor `cacheMb: 'auto'` keeps (C++). */
  floorBytes: NATIVE_CONSTANTS.cacheFloorMb * MiB,
  /** A memory cgroup's share kept as a margin, and the least margin. */
  cgroupMarginShare: 0.1,
  cgroupMarginMinBytes: 128 * MiB,
  /** KV cache, compute buffers and the Node process, beyond the weights. */
  overheadBytes: 512 * MiB,
  /** Compute threads at most. */
  maxThreads: 4,
  /** Read lanes when streaming. */
  ioThreads: 4,
} as const;

/** What the GGUF header says (ModelHeaderInfo has all of it). */
export interface ModelFacts {
  fileBytes: number;
  /** Bytes that stay resident when streaming (everything but the routed experts). */
  denseBytes: number;
  /** Bytes of the routed experts (0 for a dense model). */
  expertBytes: number;
  /** One token's routed working set (every MoE layer reads top-k experts). */
  workingSetBytes: number;
  /** The image projector loaded beside the model (LoadOptions.mmproj): always resident. Default 0. */
  projectorBytes?: number;
}

export type SettingsMode = 'resident' | 'stream';

export interface ChosenSettings {
  mode: SettingsMode;
  /** The options to load with: what was given, plus the rule's threads and streaming choice. */
  load: LoadOptions;
  /** True when the rule chose resident or streaming; false when the given `stream` did. */
  chosen: boolean;
  /** Memory the rule lets the model hold (see the rule above). */
  usableBytes: number;
  /** What bounds `usableBytes`: the machine's MemAvailable or the memory cgroup. */
  limitedBy: 'memory' | 'cgroup';
  /** The cache ceiling in MiB when the rule streams with a cache; null otherwise. */
  cacheCeilMb: number | null;
  /** The model does not fit even so (a dense model, or dense weights beyond what is usable). */
  tight: boolean;
  /** One line: what was chosen and why, e.g. "streaming experts (model 3.0 GiB + 512 MiB runtime > 1.7 GiB available in this memory cgroup), cache auto ≤ 772 MiB, 4 read lanes, 2 threads". */
  reason: string;
}

/** Bytes for people: MiB below 1 GiB, else GiB with one decimal. */
export function formatSize(bytes: number): string {
  return bytes >= GiB ? `${(bytes / GiB).toFixed(1)} GiB` : `${Math.round(bytes / MiB)} MiB`;
}

/** The memory the rule lets a model hold on `device`, and what bounds it. */
export function usableMemory(device: DeviceFacts): { bytes: number; limitedBy: 'memory' | 'cgroup' } {
  const system = device.memAvailableBytes - SETTINGS_RULE.floorBytes;
  const cg = device.cgroup;
  const inCgroup = cg ? cg.roomBytes - Math.max(SETTINGS_RULE.cgroupMarginMinBytes, Math.round(cg.limitBytes * SETTINGS_RULE.cgroupMarginShare)) : Infinity;
  return inCgroup < system ? { bytes: Math.max(0, inCgroup), limitedBy: 'cgroup' } : { bytes: Math.max(0, system), limitedBy: 'memory' };
}

/** Compute threads from the cores, and the read lanes. */
export function coreSettings(cores: number): { threads: number; ioThreads: number } {
  return { threads: Math.min(SETTINGS_RULE.maxThreads, Math.max(1, Math.floor(cores))), ioThreads: SETTINGS_RULE.ioThreads };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "cache auto ≤ 772 MiB", "cache 500 MiB", "no cache" for a stream block (the table's default where unset). */
function cacheWords(s: NonNullable<LoadOptions['stream']>): string {
  const cacheMb = s.cacheMb ?? (optionRow('stream.cacheMb').default as number);
  if (cacheMb === 'auto') return `cache auto${s.cacheCeilMb === undefined ? '' : ` ≤ ${s.cacheCeilMb} MiB`}`;
  return cacheMb === 0 ? 'no cache' : `cache ${cacheMb} MiB`;
}

/** What a stream block's overlap means: measured (auto, the default), forced on, or off. */
function overlapWords(overlap: boolean | 'auto' | undefined): string {
  const o = overlap ?? (optionRow('stream.overlap').default as boolean | 'auto');
  return o === 'auto' ? 'overlap auto' : o ? 'reads overlapped with compute' : 'no overlap';
}

/** What a stream block's route-ahead means, as overlapWords. */
function aheadWords(routeAhead: boolean | 'auto' | undefined): string {
  const a = routeAhead ?? (optionRow('stream.routeAhead').default as boolean | 'auto');
  return a === 'auto' ? 'route-ahead auto' : a ? 'route-ahead' : 'no route-ahead';
}

/** "4 read lanes, overlap auto, route-ahead auto, 2 threads" for a stream block. */
function laneWords(s: NonNullable<LoadOptions['stream']>, threads: number): string {
  const lanes = s.ioThreads ?? (optionRow('stream.ioThreads').default as number);
  const extra = [overlapWords(s.overlap), aheadWords(s.routeAhead), s.prefetch ? `prefetch ${s.prefetch}` : ''].filter(Boolean);
  return [plural(lanes, 'read lane'), ...extra, plural(threads, 'thread')].join(', ');
}

/**
 * The settings to load `model` with on `device` (see the rule at the top of this file). `given`
 * holds what the user asked for explicitly; it is kept, and a given `stream` decides streaming.
 */
export function chooseSettings(model: ModelFacts, device: DeviceFacts, given: LoadOptions = {}): ChosenSettings {
  const usable = usableMemory(device);
  const cores = coreSettings(device.cores);
  const threads = given.threads ?? cores.threads;
  const { stream: givenStream, ...rest } = given;
  const base: LoadOptions = { ...rest, threads };
  const where = `${formatSize(usable.bytes)} available${usable.limitedBy === 'cgroup' ? ' in this memory cgroup' : ''}`;
  const projector = model.projectorBytes ?? 0;
  const need = `model ${formatSize(model.fileBytes)}${projector > 0 ? ` + projector ${formatSize(projector)}` : ''} + ${formatSize(SETTINGS_RULE.overheadBytes)} runtime`;
  const fits = model.fileBytes + projector + SETTINGS_RULE.overheadBytes <= usable.bytes;
  const common = { usableBytes: usable.bytes, limitedBy: usable.limitedBy };

  // Repacked weights are anonymous copies: a resident model bigger than memory keeps the mapping.
  const noCopy = !fits && given.repack === undefined;
  const copyWords = noCopy ? ', no repacking (a repacked copy would not fit)' : '';
  if (givenStream !== undefined) {
    const streaming = givenStream.moeStream === true;
    const resident = !streaming && noCopy ? { repack: false } : {};
    return {
      ...common,
      mode: streaming ? 'stream' : 'resident',
      load: { ...base, ...resident, stream: givenStream },
      chosen: false,
      cacheCeilMb: null,
      tight: !fits,
      reason: streaming
        ? `streaming experts (as asked), ${cacheWords(givenStream)}, ${laneWords(givenStream, threads)}`
        : `holding the model resident (as asked; ${need} ${fits ? '≤' : '>'} ${where}), ${plural(threads, 'thread')}${copyWords}`,
    };
  }
  if (fits || model.expertBytes === 0) {
    return {
      ...common,
      mode: 'resident',
      load: noCopy ? { ...base, repack: false } : base,
      chosen: true,
      cacheCeilMb: null,
      tight: !fits,
      reason: fits
        ? `holding the model resident (${need} ≤ ${where}), ${plural(threads, 'thread')}`
        : `holding the model resident (a dense model: nothing to stream, though ${need} > ${where}), ${plural(threads, 'thread')}${copyWords}`,
    };
  }
  return streamSettings(model, usable.bytes, threads, cores.ioThreads, base, `${need} > ${where}`, common);
}

/** Rule 2: stream, with cache 'auto' under a ceiling when one token's working set fits. */
function streamSettings(
  model: ModelFacts,
  usable: number,
  threads: number,
  ioThreads: number,
  base: LoadOptions,
  why: string,
  common: Pick<ChosenSettings, 'usableBytes' | 'limitedBy'>,
): ChosenSettings {
  // The projector stays resident beside the dense weights.
  const room = usable - model.denseBytes - (model.projectorBytes ?? 0) - SETTINGS_RULE.overheadBytes;
  const ceilMb = Math.floor(Math.max(0, Math.min(room, model.expertBytes)) / MiB);
  const tight = room < 0;
  if (ceilMb > 0 && ceilMb * MiB >= model.workingSetBytes) {
    const stream = { moeStream: true, cacheMb: 'auto', cacheCeilMb: ceilMb, ioThreads, overlap: 'auto', routeAhead: 'auto' } as const;
    return { ...common, mode: 'stream', load: { ...base, stream }, chosen: true, cacheCeilMb: ceilMb, tight, reason: `streaming experts (${why}), ${cacheWords(stream)}, ${laneWords(stream, threads)}` };
  }
  const stream = { moeStream: true, cacheMb: 0, ioThreads, overlap: 'auto', routeAhead: 'auto' } as const;
  const noCache = tight
    ? `no cache (the dense weights alone, ${formatSize(model.denseBytes)}, leave no room)`
    : `no cache (${formatSize(Math.max(0, room))} left after the dense weights is below one token's ${formatSize(model.workingSetBytes)} working set)`;
  return {
    ...common,
    mode: 'stream',
    load: { ...base, stream },
    chosen: true,
    cacheCeilMb: null,
    tight,
    reason: `streaming experts (${why}), ${noCache}, ${laneWords(stream, threads)}`,
  };
}

/** What `chooseSettingsFor` read to decide: the model's header and this machine's facts. */
export interface SettingsDecision {
  settings: ChosenSettings;
  model: ModelHeaderInfo;
  device: DeviceFacts;
}

/**
 * The rule applied to a model file on this machine: reads the GGUF header (nothing is loaded; a
 * missing or malformed file throws the same one-line E_MODEL error loadModel would) and the
 * device facts (readDeviceFacts), then chooseSettings. `bmoe run`, `chat` and `serve` call this
 * with the flags given, load with `settings.load` and print `settings.reason`.
 */
export async function chooseSettingsFor(path: string, given: LoadOptions = {}, device: DeviceFacts = readDeviceFacts()): Promise<SettingsDecision> {
  const model = await inspectModel(path, given.nExpertUsed === undefined ? {} : { nExpertUsed: given.nExpertUsed });
  const projectorBytes = await projectorSize(path, given.mmproj);
  return { settings: chooseSettings({ ...model, projectorBytes }, device, given), model, device };
}

/** The parallel-slot rule's constants. */
export const PARALLEL_RULE = {
  /** Slots at most by default (llama-server's default for --parallel auto). */
  maxSlots: 4,
  /** The share of the memory left after the model that the slots' KV caches may take. */
  kvShare: 0.5,
} as const;

/**
 * How many conversations a server keeps at once (`--parallel` unset): every slot holds
 * `contextSize` tokens of KV cache, so as many as fit in half the memory the model leaves
 * (`leftBytes`: usable memory minus the weights it holds and the cache ceiling), at least 1, at
 * most PARALLEL_RULE.maxSlots. Pure.
 */
export function chooseParallel(kvBytesPerToken: number, contextSize: number, leftBytes: number): { parallel: number; reason: string } {
  const perSlot = Math.max(1, kvBytesPerToken * contextSize);
  const fit = Math.floor((Math.max(0, leftBytes) * PARALLEL_RULE.kvShare) / perSlot);
  const parallel = Math.min(PARALLEL_RULE.maxSlots, Math.max(1, fit));
  const why =
    fit >= PARALLEL_RULE.maxSlots
      ? `the most by default; ${formatSize(perSlot)} of KV each`
      : `${formatSize(perSlot)} of KV each, ${formatSize(Math.max(0, leftBytes))} left after the model${fit < 1 ? ', one slot at least' : ''}`;
  return { parallel, reason: `${plural(parallel, 'slot')} (${why})` };
}

/**
 * The memory a model leaves once loaded with `chosen`: usable memory minus what it holds
 * (resident: the file; streamed: the dense weights and the cache ceiling) and the runtime overhead.
 */
export function memoryLeft(model: ModelFacts, chosen: ChosenSettings): number {
  const held = chosen.mode === 'resident' ? model.fileBytes : model.denseBytes + (chosen.cacheCeilMb ?? 0) * MiB;
  return chosen.usableBytes - held - SETTINGS_RULE.overheadBytes;
}

/** The bytes of the projector `mmproj` resolves to for the model at `path` (0 for none or a file that is not there: the load says why). */
async function projectorSize(path: string, mmproj: string | undefined): Promise<number> {
  const file = mmproj === 'none' ? null : mmproj === undefined || mmproj === 'auto' ? await findProjector(path) : mmproj;
  if (file === null) return 0;
  try {
    return (await stat(file)).size;
  } catch {
    return 0;
  }
}
