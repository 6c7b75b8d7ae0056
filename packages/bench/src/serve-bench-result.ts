// What `bmoe-bench serve` measures: each row's samples per server, and the whole result the
// report (serve-bench-report.ts) and `--json` print. Types, and the pure pick of row (b)'s median round.
import type { Calibration, GapStats } from './serve-bench-script.js';
import type { Side } from './serve-bench-servers.js';

export interface TurnSample {
  /** 1 or 2. */
  conversation: number;
  /** 1-based. */
  turn: number;
  ttftMs: number;
  promptTokens: number | null;
  cachedTokens: number | null;
}

export interface LoadRun {
  clients: number;
  completed: number;
  failed: number;
  firstError: string | null;
  wallSeconds: number;
  /** Generated tokens (usage) of the completed requests. */
  tokens: number;
  tokensPerSecond: number;
  /** Each client's gaps between chunks carrying tokens. */
  perClient: GapStats[];
}

export interface ChatTiming {
  ttftMs: number;
  promptTokens: number | null;
  cachedTokens: number | null;
}

export interface ResumeRun {
  /** The chat built in one request (a full prefill). */
  build: ChatTiming;
  /** Its next turn after the restart. */
  resume: ChatTiming;
  /** llama-server's restore and save times (its answers' timings); null for bmoe (inside its requests). */
  restoreMs: number | null;
  saveMs: number | null;
}

export interface SideRun<T> {
  /** The flags the server got (besides model, host and port); row (c): of both its processes. */
  flags: string[];
  result: T | null;
  /** Why this side has no result. */
  error: string | null;
  /** Peak memory of its cgroup, MiB (with a memory limit). */
  peakMiB: number | null;
}

export type SidePair<T> = Record<Side, SideRun<T>>;

export interface LoadRows {
  clients: number;
  sides: SidePair<LoadRun>;
  rounds?: SidePair<LoadRun>[];
}

/** bmoe / llama-server aggregate tok/s of a round; null when a side has no result. */
export function roundRatio(p: SidePair<LoadRun>): number | null {
  const b = p.bmoe.result?.tokensPerSecond;
  const l = p['llama-server'].result?.tokensPerSecond;
  return b === undefined || l === undefined || !(l > 0) ? null : b / l;
}

/**
 * The round whose ratio is the median (the upper middle of an even count, as the report's medians,
 * so the rows it shows and the median ratio it gives are the same round's); the first when none has one.
 */
export function medianRound(rounds: readonly SidePair<LoadRun>[]): SidePair<LoadRun> {
  const rated = rounds.filter((r) => roundRatio(r) !== null).sort((a, b) => roundRatio(a)! - roundRatio(b)!);
  return rated.length > 0 ? rated[Math.floor(rated.length / 2)]! : rounds[0]!;
}

export interface ServeBenchResult {
  model: string;
  threads: number;
  ctxSize: number;
  memLimitGiB: number | null;
  moeStream: boolean;
  cacheMb: number | 'auto' | null;
  /** bmoe's barrier policy as bmoe serve got it from the environment (null: unset, i.e. auto). */
  bmoeWait: string | null;
  /** OMP_WAIT_POLICY / GOMP_SPINCOUNT as both servers got them from the environment (null: unset). */
  ompWaitPolicy: string | null;
  gompSpinCount: string | null;
  /** LLAMA_BATCH_INVARIANT as set in the environment (null: unset, so llama-server got 0: upstream's kernels, peer-env.ts). */
  llamaBatchInvariant: string | null;
  /** GGML_CPU_MULTI_COLUMN_DOT as set in the environment (null: unset, so llama-server got 0: upstream's one column at a time, peer-env.ts). */
  multiColumnDot: string | null;
  /** From the first server's warm-up: how the filler text was sized. */
  calibration: Calibration | null;
  /** Prompt tokens of the calibration probe as each server counted it (they share the GGUF's tokenizer). */
  probeTokens: Partial<Record<Side, number>>;
  alternating?: SidePair<TurnSample[]>;
  /** Row (a): the client's pause between an answer and the next turn, ms. */
  pauseMs: number;
  /**
   * Row (b), per client count: `sides` is the round whose ratio of aggregate tok/s (bmoe / llama-server)
   * is the median of the rounds' (the only one with `rounds` 1); `rounds`: every round, in run order.
   */
  load?: LoadRows[];
  /**
   * Row (b)'s reference (runReference below), tok/s: each stream's rate from first to last token as
   * received (the server's SSE chunks; the run's `--json` lines: `delivered`), the runs' decode medians.
   */
  runReference?: { flags: string[]; servedTokensPerSecond: number[]; deliveredTokensPerSecond: number[]; medianTokensPerSecond: number[]; error: string | null };
  resume?: SidePair<ResumeRun>;
}
