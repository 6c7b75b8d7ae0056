// `bmoe-bench waiting`: how the compute threads wait between graph pieces, measured. A streamed
// decode splits the graph at every MoE layer's routing, so the compute threads stop and start
// dozens of times per token while the read lanes run; how they wait decides whether they steal
// the cores from the lanes and from other processes (a phone is never idle).
// bmoe runs on ggml's own thread pool (every binary it ships; a checkout's build-pool/bmoe.node):
// its policy (BMOE_WAIT, compute/wait_policy) decides the waits at ggml's op barriers and the
// pool's polling between graphs: auto (the default: a bounded spin, sleeping once most waits
// outlast it), spin, or sleep. The OpenMP rows run the same addon built on OpenMP, as llama.cpp
// builds by default (a checkout's build/Release/bmoe.node, beside the reference tools), through
// BMOE_NATIVE_PATH, with OpenMP's own barrier (BMOE_WAIT=upstream): `libgomp` is llama.cpp's
// default (libgomp's spin 300000 times, then sleep), `passive` and `active` OMP_WAIT_POLICY's two.
// Each cell is `bmoe run --moe-stream` (serial, no route-ahead: --no-overlap --no-route-ahead, so
// auto's probe does not mix in other decode modes; repacking as bmoe's default unless --no-repack)
// under one policy, alone or beside one busy process; the cells are interleaved over rounds and
// each reports its median.
import { spawn, type ChildProcess } from 'node:child_process';
import { openmpAddonPath } from '@bmoe/engine';
import { percentile } from '@bmoe/engine/metrics';
import { parseDoneEvent } from './run-output.js';
import { runInCgroup } from './cgroup.js';

export const WAIT_POLICIES = ['libgomp', 'bmoe', 'passive', 'active', 'spin', 'sleep'] as const;
export type WaitPolicy = (typeof WAIT_POLICIES)[number];

export interface WaitingOptions {
  model: string;
  n: number;
  threads: number;
  lanes: number;
  cacheMb: number;
  rounds: number;
  prompt: string;
  /** Resident (the model held in memory, no lanes) instead of streamed. Default false. */
  resident?: boolean;
  /** Every run gets --no-repack (bmoe repacks by default), to compare with numbers from before. Default false. */
  noRepack?: boolean;
  bmoe: string[];
  /** The addon built on OpenMP for the OpenMP rows (openmpAddonPath(): a checkout's build/Release/bmoe.node). */
  openmpAddon: string;
  log: (line: string) => void;
}

export interface WaitingCell {
  policy: WaitPolicy;
  busy: boolean;
  /** s/token of each round (decode only). */
  secondsPerToken: number[];
}

// env's arguments: the unsets (-u) first, then the assignments (env takes no option after them).
// The OpenMP rows also get BMOE_NATIVE_PATH (waitingArgv).
const POLICY_ENV: Record<WaitPolicy, string[]> = {
  // llama.cpp's default build: OpenMP's barrier, libgomp's default (spin 300000 times, then sleep).
  libgomp: ['-u', 'OMP_WAIT_POLICY', 'BMOE_WAIT=upstream', 'GOMP_SPINCOUNT=300000'],
  // bmoe's default: nothing set (BMOE_WAIT auto, ggml's pool).
  bmoe: ['-u', 'BMOE_WAIT', '-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT'],
  // bmoe's default before the pool: OpenMP's barrier, passive.
  passive: ['-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=passive'],
  active: ['-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=active'],
  // bmoe's policy forced to one way (barriers and the pool's polling between graphs).
  spin: ['-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=spin'],
  sleep: ['-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=sleep'],
};

/** The rows that run the addon built on OpenMP. */
export const OPENMP_POLICIES: readonly WaitPolicy[] = ['libgomp', 'passive', 'active'];

/** argv running `bmoe run` under `policy`. */
export function waitingArgv(o: WaitingOptions, policy: WaitPolicy): string[] {
  const env = ['env', ...POLICY_ENV[policy], ...(OPENMP_POLICIES.includes(policy) ? [`BMOE_NATIVE_PATH=${o.openmpAddon}`] : [])];
  const stream = o.resident ? ['--no-moe-stream'] : ['--moe-stream', '--cache-mb', String(o.cacheMb), '--io-threads', String(o.lanes), '--no-overlap', '--no-route-ahead'];
  return [...env, ...o.bmoe, 'run', o.model, '-p', o.prompt, '-n', String(o.n), '-t', String(o.threads), '--json', ...stream, ...(o.noRepack ? ['--no-repack'] : [])];
}

/** One process that keeps one core busy (the neighbour), until killed. */
function busyNeighbour(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

/** The median of the rounds (engine's percentile, as the summaries use); NaN for none. */
export const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : percentile([...xs].sort((a, b) => a - b), 50));

/**
 * The OpenMP addon the OpenMP rows run, or a one-line error: it exists in a source checkout after
 * the setup (the prebuilt packages ship only the pool build).
 */
export function requireOpenmpAddon(): string {
  const file = openmpAddonPath();
  if (!file) throw new Error("bmoe-bench waiting: the addon built on OpenMP (core-native's build/Release/bmoe.node) is not here; run it from a source checkout after `npm run setup`");
  return file;
}

export async function runWaiting(o: WaitingOptions): Promise<{ cells: WaitingCell[] }> {
  const cells: WaitingCell[] = [];
  for (const busy of [false, true]) for (const policy of WAIT_POLICIES) cells.push({ policy, busy, secondsPerToken: [] });
  for (let round = 0; round < o.rounds; round++) {
    for (const cell of cells) {
      const neighbour = cell.busy ? busyNeighbour() : null;
      try {
        const r = await runInCgroup(waitingArgv(o, cell.policy), null, 30 * 60_000);
        const done = r.code === 0 ? parseDoneEvent(r.stdout) : null;
        if (!done) throw new Error(`${cell.policy}${cell.busy ? ' (busy neighbour)' : ''}: exit ${r.code ?? r.signal}: ${r.stderr.trim().split('\n').pop() ?? ''}`);
        cell.secondsPerToken.push(done.summary.secondsPerToken);
        o.log(`round ${round + 1}: ${cell.policy}${cell.busy ? ', busy neighbour' : ''}: ${done.summary.secondsPerToken.toFixed(4)} s/token`);
      } finally {
        neighbour?.kill('SIGKILL');
      }
    }
  }
  return { cells };
}

const POLICY_LABEL: Record<WaitPolicy, string> = {
  libgomp: "OpenMP, libgomp's default as llama.cpp (BMOE_WAIT=upstream GOMP_SPINCOUNT=300000)",
  bmoe: "bmoe's default (ggml's pool, nothing set: BMOE_WAIT auto)",
  passive: 'OpenMP, BMOE_WAIT=upstream OMP_WAIT_POLICY=passive',
  active: 'OpenMP, BMOE_WAIT=upstream OMP_WAIT_POLICY=active',
  spin: "ggml's pool, BMOE_WAIT=spin",
  sleep: "ggml's pool, BMOE_WAIT=sleep",
};

export function waitingReport(r: { cells: WaitingCell[] }, o: WaitingOptions): string {
  const out = [
    `OpenMP rows: ${o.openmpAddon} (OMP_WAIT_POLICY / GOMP_SPINCOUNT decide their barriers and their waits between graphs); the others: bmoe's addon on ggml's pool; ` +
      `${o.threads} compute threads, ${o.resident ? 'resident' : `streamed: ${o.lanes} read lanes, cache ${o.cacheMb} MiB`}, ` +
      `${o.noRepack ? 'no repacking (--no-repack)' : "weights repacked (bmoe's default)"}, ${o.n} tokens, median of ${o.rounds} interleaved rounds.`,
    '',
    '| wait policy | neighbour | s/token (median) | rounds | vs libgomp default, same neighbour |',
    '|---|---|---|---|---|',
  ];
  for (const c of r.cells) {
    const base = r.cells.find((x) => x.busy === c.busy && x.policy === 'libgomp');
    const rel = base ? median(c.secondsPerToken) / median(base.secondsPerToken) : NaN;
    out.push(`| ${POLICY_LABEL[c.policy]} | ${c.busy ? 'one busy process' : 'idle'} | ${median(c.secondsPerToken).toFixed(4)} | ` +
      `${c.secondsPerToken.map((x) => x.toFixed(3)).join(', ')} | ${rel.toFixed(3)} |`);
  }
  return out.join('\n');
}
