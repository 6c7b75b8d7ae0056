// The demo's one decision: how to load a model on this device. A pure function of the model's
// header facts and the device's RAM and cores, so the rule is unit-tested and the model picker
// can show, for every GGUF in the folder, exactly the settings a load would use.
//
// The rule (all sizes in bytes, MiB = 2^20):
//   reserve  = max(2 GiB, 35 % of MemTotal)       what Android and the other apps keep
//   usable   = MemTotal - reserve                  what the demo may hold at most
//   overhead = 512 MiB                             KV cache, compute buffers and Node itself
//   1. resident  when file + overhead <= usable (no expert streaming; fastest)
//   2. otherwise stream the experts (--moe-stream, 4 read lanes) with
//        ceiling = usable - dense - overhead, at most the expert bytes
//      a. ceiling >= one token's working set: cache 'auto' capped at the ceiling (auto takes what
//         MemAvailable leaves above 1 GiB at load time, never more than the ceiling)
//      b. otherwise no cache (cache 0): every routed expert is read each token
//   overlap (hide reads behind compute) is on when the cache is warm-capable (ceiling >= two
//   tokens' working sets, so most lookups can hit) and the device has two cores beyond the compute
//   threads for the read lanes (on this 2-core VM overlap lost: lanes and compute shared cores).
//   compute threads: min(4, cores) (big.LITTLE phones regress beyond 4).
import { loadOptionFlags, type LoadOptions } from '@bmoe/engine/options';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** The rule's constants, exported so the docs, the page and the tests quote one source. */
export const RULE = {
  /** The least RAM left to Android and other apps. */
  reserveMinBytes: 2 * GiB,
  /** The share of MemTotal left to Android and other apps (when larger than the minimum). */
  reserveShare: 0.35,
  /** KV cache (demo context), compute buffers and the Node process, beyond the weights. */
  overheadBytes: 512 * MiB,
  /** Parallel read lanes when streaming. */
  ioThreads: 4,
  /** Compute threads at most. */
  maxThreads: 4,
  /** Context size the demo loads with (tokens). */
  contextSize: 4096,
  /** A cache is warm-capable when it holds this many tokens' working sets. */
  warmWorkingSets: 2,
  /** Overlap needs this many cores beyond the compute threads. */
  overlapSpareCores: 2,
} as const;

/** What the GGUF header says (see `inspectModel` in @bmoe/engine). */
export interface ModelFacts {
  fileBytes: number;
  /** Bytes that stay resident when streaming (everything but the routed experts). */
  denseBytes: number;
  /** Bytes of the routed experts (0 for a dense model). */
  expertBytes: number;
  /** One token's routed working set (every MoE layer reads top-k experts). */
  workingSetBytes: number;
}

/** What the device offers. */
export interface DeviceFacts {
  /** MemTotal of /proc/meminfo. */
  memTotalBytes: number;
  /** Online CPU cores. */
  cores: number;
}

export type DemoMode = 'resident' | 'stream';

export interface DemoSettings {
  mode: DemoMode;
  /** Exactly what the demo passes to the server as its load options. */
  load: LoadOptions;
  /** RAM the demo may hold (MemTotal minus the reserve). */
  usableBytes: number;
  /** Cache ceiling in MiB when streaming with a cache; null otherwise. */
  cacheCeilMb: number | null;
  /** The model will not leave the reserve alone even streamed (dense weights too big). */
  tight: boolean;
  /** One sentence: why these settings. */
  reason: string;
}

/** Bytes for people: MiB below 1 GiB, else GiB with one decimal. */
export function formatSize(bytes: number): string {
  return bytes >= GiB ? `${(bytes / GiB).toFixed(1)} GiB` : `${Math.round(bytes / MiB)} MiB`;
}

/** RAM the demo may hold on `device`: MemTotal minus what Android and the other apps keep. */
export function usableBytes(device: DeviceFacts): number {
  const reserve = Math.max(RULE.reserveMinBytes, Math.round(device.memTotalBytes * RULE.reserveShare));
  return Math.max(0, device.memTotalBytes - reserve);
}

/** The settings the demo loads `model` with on `device` (see the rule at the top of this file). */
export function chooseSettings(model: ModelFacts, device: DeviceFacts): DemoSettings {
  const usable = usableBytes(device);
  const threads = Math.max(1, Math.min(RULE.maxThreads, Math.floor(device.cores)));
  const base: LoadOptions = { threads, contextSize: RULE.contextSize };

  const fitsResident = model.fileBytes + RULE.overheadBytes <= usable;
  if (fitsResident || model.expertBytes === 0) {
    const tight = !fitsResident;
    return {
      mode: 'resident',
      load: base,
      usableBytes: usable,
      cacheCeilMb: null,
      tight,
      reason: tight
        ? `dense model of ${formatSize(model.fileBytes)}: nothing to stream, and it does not fit the ${formatSize(usable)} the phone can spare`
        : `${formatSize(model.fileBytes)} (+${formatSize(RULE.overheadBytes)} runtime) fits the ${formatSize(usable)} the phone can spare: held resident`,
    };
  }

  const room = usable - model.denseBytes - RULE.overheadBytes;
  const ceiling = Math.max(0, Math.min(room, model.expertBytes));
  const ceilMb = Math.floor(ceiling / MiB);
  const tight = room < 0;
  const spareCores = device.cores - threads >= RULE.overlapSpareCores;
  if (ceilMb > 0 && ceilMb * MiB >= model.workingSetBytes) {
    const warm = ceiling >= RULE.warmWorkingSets * model.workingSetBytes;
    const overlap = warm && spareCores;
    return {
      mode: 'stream',
      load: { ...base, stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: ceilMb, ioThreads: RULE.ioThreads, overlap } },
      usableBytes: usable,
      cacheCeilMb: ceilMb,
      tight,
      reason:
        `${formatSize(model.fileBytes)} (+${formatSize(RULE.overheadBytes)} runtime) is more than the ${formatSize(usable)} the phone can spare: ` +
        `dense ${formatSize(model.denseBytes)} resident, ` +
        `experts streamed through a cache of up to ${ceilMb} MiB` +
        (overlap ? ', reads overlapped with compute' : warm ? ' (no overlap: too few spare cores)' : ' (no overlap: cache too small to stay warm)'),
    };
  }
  return {
    mode: 'stream',
    load: { ...base, stream: { moeStream: true, cacheMb: 0, ioThreads: RULE.ioThreads, overlap: false } },
    usableBytes: usable,
    cacheCeilMb: null,
    tight,
    reason:
      `${formatSize(model.fileBytes)} (+${formatSize(RULE.overheadBytes)} runtime) is more than the ${formatSize(usable)} the phone can spare, ` +
      `and no room is left for an expert cache: ` +
      `every routed expert is read from flash each token` +
      (tight ? `; the dense weights alone (${formatSize(model.denseBytes)}) exceed it` : ''),
  };
}

/** The same load options as `bmoe run` / `bmoe serve` flags (what to type to reproduce a run), from the engine's option table. */
export function runFlags(load: LoadOptions): string[] {
  return loadOptionFlags(load);
}
