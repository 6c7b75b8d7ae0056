// `bmoe-bench waiting`: how the compute threads wait between graph pieces, measured. A streamed
// decode splits the graph at every MoE layer's routing, so the compute threads stop and start
// dozens of times per token while the read lanes run; how they wait decides whether they steal
// the cores from the lanes and from other processes (a phone is never idle).
// bmoe's barrier policy (BMOE_WAIT, in the addon) decides how they wait at ggml's op barriers:
// auto (the default: a bounded spin, sleeping once most waits outlast it), spin, sleep, or upstream
// (ggml's own barrier: under OpenMP `omp barrier`, whose waiting OMP_WAIT_POLICY / GOMP_SPINCOUNT
// decide). Between graphs OpenMP's threads wait as OMP_WAIT_POLICY says (the loader sets passive
// when neither variable is set). The policies: `libgomp` is llama.cpp's default build (upstream,
// libgomp's spin 300000 times then sleep), `bmoe` what bmoe does when nobody says (auto),
// `passive` bmoe's previous default, `active` OpenMP spinning, `spin` / `sleep` bmoe's barrier forced.
// Each cell is `bmoe run --moe-stream` (serial, no route-ahead: --no-overlap --no-route-ahead, so
// auto's probe does not mix in other decode modes; repacking as bmoe's default unless --no-repack)
// under one policy, alone or beside one busy process; the cells are interleaved over rounds and
// each reports its median.
import { spawn, type ChildProcess } from 'node:child_process';
import { nativeBuild } from '@bmoe/engine';
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
  log: (line: string) => void;
}

export interface WaitingCell {
  policy: WaitPolicy;
  busy: boolean;
  /** s/token of each round (decode only). */
  secondsPerToken: number[];
}

// env's arguments: the unsets (-u) first, then the assignments (env takes no option after them).
const POLICY_ENV: Record<WaitPolicy, string[]> = {
  // llama.cpp's default build: OpenMP's barrier, libgomp's default (spin 300000 times, then sleep).
  libgomp: ['-u', 'OMP_WAIT_POLICY', 'BMOE_WAIT=upstream', 'GOMP_SPINCOUNT=300000'],
  // bmoe's default: nothing set (BMOE_WAIT auto; the loader sets OMP_WAIT_POLICY=passive).
  bmoe: ['-u', 'BMOE_WAIT', '-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT'],
  // bmoe's previous default: OpenMP's barrier, passive.
  passive: ['-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=passive'],
  active: ['-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=upstream', 'OMP_WAIT_POLICY=active'],
  // bmoe's barrier forced to one way; OpenMP as bmoe's default (passive between graphs).
  spin: ['-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=spin'],
  sleep: ['-u', 'OMP_WAIT_POLICY', '-u', 'GOMP_SPINCOUNT', 'BMOE_WAIT=sleep'],
};

/** argv running `bmoe run` under `policy`. */
export function waitingArgv(o: WaitingOptions, policy: WaitPolicy): string[] {
  const env = ['env', ...POLICY_ENV[policy]];
  const stream = o.resident ? ['--no-moe-stream'] : ['--moe-stream', '--cache-mb', String(o.cacheMb), '--io-threads', String(o.lanes), '--no-overlap', '--no-route-ahead'];
  return [...env, ...o.bmoe, 'run', o.model, '-p', o.prompt, '-n', String(o.n), '-t', String(o.threads), '--json', ...stream, ...(o.noRepack ? ['--no-repack'] : [])];
}

/** One process that keeps one core busy (the neighbour), until killed. */
function busyNeighbour(): ChildProcess {
  return spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
}

/** The median of the rounds (engine's percentile, as the summaries use); NaN for none. */
export const median = (xs: readonly number[]): number => (xs.length === 0 ? NaN : percentile([...xs].sort((a, b) => a - b), 50));

export async function runWaiting(o: WaitingOptions): Promise<{ cells: WaitingCell[]; openmp: boolean }> {
  const build = await nativeBuild();
  const openmp = /OPENMP = 1/.test(build.system);
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
  return { cells, openmp };
}

const POLICY_LABEL: Record<WaitPolicy, string> = {
  libgomp: "libgomp's default, as llama.cpp (BMOE_WAIT=upstream GOMP_SPINCOUNT=300000)",
  bmoe: "bmoe's default (nothing set: BMOE_WAIT auto)",
  passive: "BMOE_WAIT=upstream OMP_WAIT_POLICY=passive (bmoe's previous default)",
  active: 'BMOE_WAIT=upstream OMP_WAIT_POLICY=active',
  spin: 'BMOE_WAIT=spin',
  sleep: 'BMOE_WAIT=sleep',
};

export function waitingReport(r: { cells: WaitingCell[]; openmp: boolean }, o: WaitingOptions): string {
  const out = [
    `OpenMP in this build: ${r.openmp ? "yes (OMP_WAIT_POLICY / GOMP_SPINCOUNT decide the upstream rows' barriers, and every row's waits between graphs)" : "no (ggml's own thread pool: upstream is its barrier; OMP_WAIT_POLICY / GOMP_SPINCOUNT have no effect)"}; ` +
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
