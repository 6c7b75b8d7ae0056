// `bmoe-bench serve`: `bmoe serve` against llama.cpp's `llama-server` on the same GGUF, one server
// at a time (never both: they would share the cores), each driven over HTTP by the same scripts:
//   (a) two conversations with long system prompts, alternating turns, on 2 slots: time to first
//       token per turn, and follow-up turns against the first (what keeping each slot's KV buys);
//   (b) 1, 2, 4 concurrent clients on as many slots: generated tok/s, time between tokens;
//   (c) a long chat resumed after a restart: bmoe's --kv-dir saves it when its slot switches,
//       llama-server saves and restores it through its slot API; TTFT of the next turn.
// The report (a table with bmoe / llama-server ratios) is serve-bench-report.ts.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CgroupError, createMemoryCgroup, dropCaches, removeCgroup, runInCgroup } from './cgroup.js';
import { parseDoneEvent, TokenLineTimes } from './run-output.js';
import { llamaSlotAction, modelId, streamChat } from './serve-bench-client.js';
import {
  buildScripts,
  calibrate,
  gaps,
  gapStats,
  loadPrompt,
  probeMessages,
  pushReceivedRate,
  WARM_UP_MESSAGE,
  type ChatMessage,
  type Scripts,
} from './serve-bench-script.js';
import { bmoeServeFlags, llamaServerFlags, llamaServerTool, SIDES, startServer, type ServerConfig, type Side } from './serve-bench-servers.js';

export const SERVE_ROWS = ['a', 'b', 'c'] as const;
export type ServeRow = (typeof SERVE_ROWS)[number];

export interface ServeBenchOptions {
  model: string;
  /** argv prefix that runs `bmoe`. */
  bmoe: string[];
  /** The llama-server executable. Default: the one built from the pinned source. */
  llamaServer?: string;
  threads: number;
  /** Context per slot, tokens. */
  ctxSize: number;
  rows: readonly ServeRow[];
  /** Row (b): concurrent clients, one run each. Default [1, 2, 4]. */
  clients?: readonly number[];
  /** Row (b): requests per client. Default 3. */
  requests?: number;
  /**
   * Row (b): runs of each client count, the two servers taking turns (bmoe, llama-server, bmoe …),
   * so the VM's drift between runs falls on both alike. Default 1.
   */
  rounds?: number;
  /** Row (b): max_tokens. Default 64. */
  loadMaxTokens?: number;
  /** Rows (a), (c): max_tokens. Default 16. */
  maxTokens?: number;
  /** Row (a): turns per conversation. Default 3. */
  turns?: number;
  /** Row (a): system prompt tokens. Default 1000. */
  systemTokens?: number;
  /** Row (a): the client's pause after each answer, ms (a user reading it). Default 0. */
  pauseMs?: number;
  /** Row (c): tokens of the saved chat. Default 3000. */
  resumeTokens?: number;
  /** Run each server inside a memory cgroup of this many GiB (root). */
  memLimitGiB?: number;
  moeStream?: boolean;
  cacheMb?: number | 'auto';
  /** bmoe --no-repack (both servers repack by default; llama-server gets -nr inside a memory limit). */
  noRepack?: boolean;
  /** Drop the page cache before each server starts (root). */
  dropCaches?: boolean;
  /** Where the saved conversations go (a fresh temporary directory by default, removed after). */
  workDir?: string;
  /** Loading time allowed per server, ms. Default 10 min. */
  startTimeoutMs?: number;
  log?: (line: string) => void;
}

import { medianRound, type ChatTiming, type LoadRun, type ResumeRun, type ServeBenchResult, type SidePair, type TurnSample } from './serve-bench-result.js';
export * from './serve-bench-result.js';

type Ctx = Required<Pick<ServeBenchOptions, 'turns' | 'systemTokens' | 'pauseMs' | 'resumeTokens' | 'maxTokens' | 'loadMaxTokens' | 'requests' | 'startTimeoutMs'>> &
  ServeBenchOptions & {
    llamaServer: string;
    log: (line: string) => void;
    result: ServeBenchResult;
    scripts: Scripts | null;
  };

const MiB = 1024 * 1024;
const f1 = (x: number): string => x.toFixed(1);
/** An error's message, with its cause's when it has one. */
const message = (err: unknown): string => {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof Error ? `${err.message}: ${cause.message}` : err.message;
};
const timing = (s: { ttftMs: number; promptTokens: number | null; cachedTokens: number | null }): ChatTiming => ({ ttftMs: s.ttftMs, promptTokens: s.promptTokens, cachedTokens: s.cachedTokens });

export async function runServeBench(o: ServeBenchOptions): Promise<ServeBenchResult> {
  const ctx: Ctx = {
    turns: 3, systemTokens: 1000, pauseMs: 0, resumeTokens: 3000, maxTokens: 16, loadMaxTokens: 64, requests: 3, startTimeoutMs: 600_000,
    ...o,
    llamaServer: o.llamaServer ?? llamaServerTool(),
    log: o.log ?? (() => undefined),
    scripts: null,
    result: {
      model: o.model, threads: o.threads, ctxSize: o.ctxSize, memLimitGiB: o.memLimitGiB ?? null, moeStream: Boolean(o.moeStream),
      cacheMb: o.moeStream ? (o.cacheMb ?? null) : null, calibration: null, probeTokens: {}, pauseMs: o.pauseMs ?? 0,
      bmoeWait: process.env.BMOE_WAIT ?? null, ompWaitPolicy: process.env.OMP_WAIT_POLICY ?? null, gompSpinCount: process.env.GOMP_SPINCOUNT ?? null,
      llamaBatchInvariant: process.env.LLAMA_BATCH_INVARIANT ?? null,
      multiColumnDot: process.env.GGML_CPU_MULTI_COLUMN_DOT ?? null,
    },
  };
  const workDir = o.workDir ?? mkdtempSync(join(tmpdir(), 'bmoe-bench-serve-'));
  mkdirSync(workDir, { recursive: true });
  try {
    for (const row of SERVE_ROWS.filter((r) => o.rows.includes(r))) {
      if (row === 'a') ctx.result.alternating = await bothSides(ctx, 'a', () => serverConfig(ctx, 2), (side, c) => rowAlternating(ctx, side, c));
      if (row === 'b') {
        ctx.result.load = [];
        const n = o.rounds ?? 1;
        for (const k of o.clients ?? [1, 2, 4]) {
          const rounds: SidePair<LoadRun>[] = [];
          for (let i = 1; i <= n; i++) {
            rounds.push(await bothSides(ctx, n > 1 ? `b ${k}, round ${i}/${n}` : `b ${k}`, () => serverConfig(ctx, k), (side, c) => rowLoad(ctx, side, c)));
          }
          ctx.result.load.push({ clients: k, sides: medianRound(rounds), ...(n > 1 ? { rounds } : {}) });
          if (k === 1) ctx.result.runReference = await runReference(ctx);
        }
      }
      if (row === 'c') {
        const dirs = { bmoe: mkdtempSync(join(workDir, 'bmoe-kv-')), 'llama-server': mkdtempSync(join(workDir, 'llama-slots-')) };
        ctx.result.resume = await bothSides(ctx, 'c', (side) => serverConfig(ctx, 1, dirs[side]), (side, c) => rowResume(ctx, side, c));
      }
    }
  } finally {
    if (o.workDir === undefined) rmSync(workDir, { recursive: true, force: true });
  }
  return ctx.result;
}

/**
 * The side's run of one row, bmoe first; a side that fails has its error and the other still runs
 * (a refused cgroup or page-cache drop ends the bench).
 */
async function bothSides<T>(ctx: Ctx, row: string, config: (side: Side) => ServerConfig, run: (side: Side, config: ServerConfig) => Promise<Session<T>>): Promise<SidePair<T>> {
  const out: Partial<SidePair<T>> = {};
  for (const side of SIDES) {
    const c = config(side);
    const flags = side === 'bmoe' ? bmoeServeFlags(c) : llamaServerFlags(c);
    try {
      const s = await run(side, c);
      out[side] = { flags, result: s.value, error: null, peakMiB: s.peakMiB };
    } catch (err) {
      // No root for the cgroup or the page cache: nothing can be measured as asked.
      if (err instanceof CgroupError) throw err;
      ctx.log(`serve: (${row}) ${side}: failed: ${message(err)}`);
      out[side] = { flags, result: null, error: message(err), peakMiB: null };
    }
  }
  return out as SidePair<T>;
}

function serverConfig(ctx: Ctx, parallel: number, saveDir?: string): ServerConfig {
  return {
    threads: ctx.threads, ctxSize: ctx.ctxSize, parallel, moeStream: Boolean(ctx.moeStream), cacheMb: ctx.cacheMb,
    noRepack: Boolean(ctx.noRepack), limited: ctx.memLimitGiB !== undefined, ...(saveDir === undefined ? {} : { saveDir }),
  };
}

interface Session<T> {
  value: T;
  peakMiB: number | null;
}

/**
 * One server process: started (page cache dropped first when asked), warmed up (with `probe`, the
 * calibration probe, whose counts size the scripts the first time; then a short request), `fn`,
 * stopped. A server the OOM killer ended fails the row.
 */
async function session<T>(ctx: Ctx, side: Side, config: ServerConfig, probe: boolean, fn: (url: string, model: string) => Promise<T>): Promise<Session<T>> {
  if (ctx.dropCaches) dropCaches();
  const server = await startServer({
    side, model: ctx.model, config, bmoe: ctx.bmoe, llamaServer: ctx.llamaServer, startTimeoutMs: ctx.startTimeoutMs,
    ...(ctx.memLimitGiB === undefined ? {} : { memLimitBytes: Math.round(ctx.memLimitGiB * 1024 * MiB) }),
  });
  ctx.log(`serve: ${side} at ${server.url}: ${server.flags.join(' ')}`);
  let value: T;
  try {
    const model = await modelId(server.url);
    // The probe first: the short warm-up then takes its place in the slot, so a server with
    // --kv-dir saves the probe now, not while the row's first request waits.
    const p = probe ? await streamChat(server.url, model, probeMessages(), 1) : null;
    const warm = await streamChat(server.url, model, [{ role: 'user', content: WARM_UP_MESSAGE }], 1);
    if (p) {
      if (warm.promptTokens === null || p.promptTokens === null) throw new Error(`${side} sent no usage.prompt_tokens`);
      ctx.result.probeTokens[side] ??= p.promptTokens;
      ctx.result.calibration ??= calibrate(warm.promptTokens, p.promptTokens);
    }
    value = await fn(server.url, model);
  } catch (err) {
    // A server that ended on its own (a crash, the OOM killer) is the reason, not the request.
    const died = !server.running();
    const exit = await server.stop();
    if (exit.oomKilled) throw new Error(`${side} was killed by the OOM killer (${message(err)})`);
    if (died) throw new Error(`${message(err)}; ${side} had exited (code ${exit.code}, signal ${exit.signal}): ${server.stderrTail().slice(-2).join(' | ')}`);
    throw err;
  }
  const exit = await server.stop();
  if (exit.oomKilled) throw new Error(`${side} was killed by the OOM killer`);
  return { value, peakMiB: exit.peakBytes === null ? null : exit.peakBytes / MiB };
}

function scripts(ctx: Ctx): Scripts {
  if (ctx.scripts) return ctx.scripts;
  if (!ctx.result.calibration) throw new Error('no server answered the calibration probe');
  ctx.scripts = buildScripts(ctx.result.calibration, { systemTokens: ctx.systemTokens, turns: ctx.turns, resumeTokens: ctx.resumeTokens });
  return ctx.scripts;
}

/** Row (a): two conversations on 2 slots, turns alternating A1 B1 A2 B2 …, each answer appended. */
function rowAlternating(ctx: Ctx, side: Side, config: ServerConfig): Promise<Session<TurnSample[]>> {
  return session(ctx, side, config, true, async (url, model) => {
    const convs = scripts(ctx).alternating;
    const history: ChatMessage[][] = convs.map((c) => [{ role: 'system', content: c.system }]);
    const turns: TurnSample[] = [];
    for (let t = 0; t < ctx.turns; t++) {
      for (let c = 0; c < convs.length; c++) {
        const h = history[c]!;
        h.push({ role: 'user', content: convs[c]!.users[t]! });
        const r = await streamChat(url, model, h, ctx.maxTokens);
        h.push({ role: 'assistant', content: r.content });
        turns.push({ conversation: c + 1, turn: t + 1, ...timing(r) });
        if (ctx.pauseMs > 0) await sleep(ctx.pauseMs);
        ctx.log(`serve: (a) ${side} conversation ${c + 1} turn ${t + 1}: TTFT ${r.ttftMs.toFixed(1)} ms, cached ${r.cachedTokens ?? '?'} of ${r.promptTokens ?? '?'} prompt tokens`);
      }
    }
    return turns;
  });
}

/** Row (b): `k` clients on `k` slots, each sending its requests one after another. */
async function rowLoad(ctx: Ctx, side: Side, config: ServerConfig): Promise<Session<LoadRun>> {
  const k = config.parallel;
  const s = await session(ctx, side, config, true, async (url, model) => {
    let completed = 0;
    let failed = 0;
    let tokens = 0;
    let firstError: string | null = null;
    const t0 = performance.now();
    const perClient = await Promise.all(
      Array.from({ length: k }, async (_, c) => {
        const clientGaps: number[] = [];
        for (let r = 0; r < ctx.requests; r++) {
          try {
            const x = await streamChat(url, model, [{ role: 'user', content: loadPrompt(c, r) }], ctx.loadMaxTokens);
            clientGaps.push(...gaps(x.tokenTimesMs));
            tokens += x.completionTokens ?? x.tokenTimesMs.length;
            completed++;
          } catch (err) {
            failed++;
            firstError ??= message(err);
          }
        }
        return gapStats(clientGaps);
      }),
    );
    const wallSeconds = (performance.now() - t0) / 1000;
    const run: LoadRun = { clients: k, completed, failed, firstError, wallSeconds, tokens, tokensPerSecond: tokens / wallSeconds, perClient };
    ctx.log(`serve: (b) ${side} ${k} client${k === 1 ? '' : 's'}: ${run.tokensPerSecond.toFixed(1)} tok/s, ${completed} completed, ${failed} failed`);
    return run;
  });
  if (s.value.failed > 0) throw new Error(`${s.value.failed} of ${s.value.failed + s.value.completed} requests failed: ${s.value.firstError}`);
  return s;
}

/**
 * Row (b)'s reference: one client through `bmoe serve` against `bmoe run --chat` on the same model,
 * flags, user message and max_tokens (the same chat template and the same parse of the answer as
 * the served chat request), in 2 × `requests` pairs taking turns in ABBA order (serve first in even
 * pairs, the run first in odd ones, the server idle during the runs) so that a drift of the
 * machine's speed falls on both alike; the run's token lines are timed as this process reads them.
 */
async function runReference(ctx: Ctx): Promise<NonNullable<ServeBenchResult['runReference']>> {
  const config = serverConfig(ctx, 1);
  const flags = bmoeServeFlags(config).filter((f, i, all) => f !== '--parallel' && all[i - 1] !== '--parallel');
  const runs: number[] = [];
  const delivered: number[] = [];
  const served: number[] = [];
  const runOnce = async (prompt: string, r: number): Promise<void> => {
    const argv = [...ctx.bmoe, 'run', ctx.model, '--chat', '-p', prompt, '-n', String(ctx.loadMaxTokens), '--json', ...flags];
    const cg = ctx.memLimitGiB === undefined ? null : createMemoryCgroup(Math.round(ctx.memLimitGiB * 1024 * MiB), `bmoe-bench-run-${process.pid}-${r}`);
    try {
      const lines = new TokenLineTimes();
      const out = await runInCgroup(argv, cg, ctx.startTimeoutMs, { onStdout: (s) => lines.push(s, performance.now()) });
      const done = parseDoneEvent(out.stdout);
      if (!done) throw new Error(`bmoe run printed no summary (exit ${out.code}): ${out.stderr.trim().split('\n').slice(-1)[0] ?? ''}`);
      runs.push(done.summary.medianTokensPerSecond);
      pushReceivedRate(delivered, lines.times);
    } finally {
      if (cg) removeCgroup(cg);
    }
  };
  try {
    await session(ctx, 'bmoe', config, false, async (url, model) => {
      const serveOnce = async (prompt: string): Promise<void> => {
        const x = await streamChat(url, model, [{ role: 'user', content: prompt }], ctx.loadMaxTokens);
        pushReceivedRate(served, x.tokenTimesMs);
      };
      for (let r = 0; r < 2 * ctx.requests; r++) {
        const prompt = loadPrompt(0, r);
        if (r % 2 === 0) await serveOnce(prompt);
        await runOnce(prompt, r);
        if (r % 2 === 1) await serveOnce(prompt);
      }
    });
    ctx.log(`serve: (b) one client vs bmoe run --chat, in ABBA pairs, tok/s: serve ${served.map(f1)} · run delivered ${delivered.map(f1)} · run decodes ${runs.map(f1)}`);
    return { flags, servedTokensPerSecond: served, deliveredTokensPerSecond: delivered, medianTokensPerSecond: runs, error: null };
  } catch (err) {
    if (err instanceof CgroupError) throw err;
    return { flags, servedTokensPerSecond: served, deliveredTokensPerSecond: delivered, medianTokensPerSecond: runs, error: message(err) };
  }
}

const SLOT_FILE = 'bench-resume.bin';

/**
 * Row (c): the chat built in one request, then another conversation takes the only slot (bmoe
 * saves the first to --kv-dir then; llama-server is told to save it first), the server restarts
 * on the same directory, and the chat's next turn is sent (llama-server restores the slot first,
 * timed as part of the turn).
 */
async function rowResume(ctx: Ctx, side: Side, config: ServerConfig): Promise<Session<ResumeRun>> {
  let saveMs: number | null = null;
  const first = await session(ctx, side, config, true, async (url, model) => {
    const script = scripts(ctx).resume;
    const build = await streamChat(url, model, script.build, ctx.maxTokens);
    ctx.log(`serve: (c) ${side} built the chat: ${build.promptTokens ?? '?'} prompt tokens, TTFT ${build.ttftMs.toFixed(1)} ms`);
    if (side === 'llama-server') {
      const saved = await llamaSlotAction(url, 'save', SLOT_FILE);
      if (!saved.tokens) throw new Error('llama-server saved no tokens of slot 0');
      saveMs = saved.ms;
    }
    await streamChat(url, model, script.other, ctx.maxTokens);
    return build;
  });
  let restoreMs: number | null = null;
  const second = await session(ctx, side, config, false, async (url, model) => {
    const script = scripts(ctx).resume;
    const messages: ChatMessage[] = [...script.build, { role: 'assistant', content: first.value.content }, { role: 'user', content: script.next }];
    const t0 = performance.now();
    if (side === 'llama-server') {
      const restored = await llamaSlotAction(url, 'restore', SLOT_FILE);
      if (!restored.tokens) throw new Error(`llama-server restored no tokens from ${SLOT_FILE}`);
      restoreMs = restored.ms;
    }
    const r = await streamChat(url, model, messages, ctx.maxTokens, t0);
    ctx.log(`serve: (c) ${side} resumed after a restart: TTFT ${r.ttftMs.toFixed(1)} ms, cached ${r.cachedTokens ?? '?'} of ${r.promptTokens ?? '?'} prompt tokens`);
    return r;
  });
  const peaks = [first.peakMiB, second.peakMiB].filter((p): p is number => p !== null);
  return { value: { build: timing(first.value), resume: timing(second.value), restoreMs, saveMs }, peakMiB: peaks.length > 0 ? Math.max(...peaks) : null };
}
