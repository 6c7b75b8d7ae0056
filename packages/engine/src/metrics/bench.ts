// The bench row record: what `bmoe-bench matrix` writes next to each row's per-token CSV and log
// (`<model>__<config>.metrics.json`), and all `bmoe-bench analyze` reads besides them. Device
// pressure lives here too, so the bench, the server and the demo name its readings the same way.
import { z } from 'zod';
import { runSummarySchema } from './summary.js';

const bytes = z.number().int().nonnegative();
const celsius = z.number().finite().nullable();

/**
 * Device pressure over one run: the process's peak RSS, the lowest system MemAvailable, CPU
 * temperature at the start and its maximum, the battery's maximum. null = unmeasured here
 * (the platform hides that reading), never 0.
 */
export const devicePressureSchema = z.strictObject({
  peakRssBytes: bytes.nullable(),
  memAvailableFloorBytes: bytes.nullable(),
  cpuTempStartC: celsius,
  cpuTempMaxC: celsius,
  batteryTempMaxC: celsius,
  /** Peak memory charged to the row's memory cgroup (page cache included); null without one. */
  cgroupPeakBytes: bytes.nullable(),
  /** Sensor samples taken during the row (besides the per-token records). */
  samples: z.number().int().nonnegative(),
});
export type DevicePressure = z.infer<typeof devicePressureSchema>;

/** One matrix row: one model × one configuration, run as its own process. */
export const benchRowSchema = z.strictObject({
  schema: z.literal('bmoe.bench.row/1'),
  model: z.strictObject({
    /** File name without `.gguf`: the `<model>` of the row's file names. */
    name: z.string(),
    path: z.string(),
    fileBytes: bytes,
    denseBytes: bytes,
    expertBytes: bytes,
    /** One token's routed working set. */
    workingSetBytes: bytes,
  }),
  config: z.strictObject({
    /** Slug: the `<config>` of the row's file names. */
    id: z.string(),
    /** Position of the row in its config set (the tables keep that order; absent in older records). */
    index: z.number().int().nonnegative().optional(),
    /** The row's label in the tables. */
    label: z.string(),
    /** The flag string as written in the config set (may hold `%` cache sizes). */
    flags: z.string(),
    /** The flags actually passed, cache sizes resolved to MiB for this model. */
    resolvedFlags: z.array(z.string()),
    /** `bmoe` = `bmoe run`; otherwise llama.cpp's own tool (no per-token CSV). */
    tool: z.enum(['bmoe', 'llama-completion']),
  }),
  /** The full command line of the row's process. */
  argv: z.array(z.string()),
  nPredict: z.number().int().positive(),
  prompt: z.string(),
  threads: z.number().int().positive(),
  memLimitBytes: bytes.nullable(),
  dropCaches: z.boolean(),
  startedAt: z.string(),
  finishedAt: z.string(),
  /** `ok`, or why the row produced no numbers (OOM-killed, exit code, timeout). */
  status: z.enum(['ok', 'oom-killed', 'failed']),
  error: z.string().nullable(),
  /** From the per-token CSV (bmoe rows); null for peer rows and failed rows. */
  summary: runSummarySchema.nullable(),
  /** Peer rows: llama.cpp's own eval rate (its `eval time` line). */
  peerTokensPerSecond: z.number().finite().nullable(),
  /** Bytes the process read from storage while loading (bmoe rows). */
  loadReadBytes: bytes.nullable(),
  pressure: devicePressureSchema,
  machine: z.strictObject({
    platform: z.string(),
    arch: z.string(),
    cpus: z.number().int().positive(),
    memTotalBytes: bytes.nullable(),
    kernel: z.string(),
  }),
});
export type BenchRow = z.infer<typeof benchRowSchema>;
