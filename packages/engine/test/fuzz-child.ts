// Runs fuzz cases (a model, an input, generate() options) in child processes, many per child:
// each case has its own time limit, the child's memory is watched, and a child that dies, hangs or
// grows too big is killed and blamed on the case it was running; a new child then goes on with the
// next case. What a case ended in (a result, an error, or how the child ended) is the caller's to
// judge (fuzz-grammar, fuzz-schema and fuzz-templates .test.ts).
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll } from 'vitest';
import { buildIfStale } from '../../../tooling/test-utils.mjs';
import { clip } from './fuzz-random.js';

const ENGINE_DIST = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;

/** The bound on a child's resident memory (its RSS watched, its peak reported after each case). */
export const RSS_LIMIT = 2 * 1024 ** 3;
/** The child's address space under prlimit, a safety net for the machine: far above RSS_LIMIT. */
const ADDRESS_SPACE_LIMIT = 16 * 1024 ** 3;

export interface ChildCase {
  /** The GGUF to load (kept loaded for the next case with the same path). */
  model: string;
  load: Record<string, unknown>;
  input: string | { role: string; content: string }[];
  options: Record<string, unknown>;
  /** Time from the case's start (its load included when it loads) to its result. */
  limitMs: number;
}

export interface ChildResult {
  ok: boolean;
  stage: 'load' | 'generate';
  code?: string | null;
  message?: string;
  tokens?: number;
  /** The whole case, its load (0 when the model was loaded already), its generate() (0 when the load failed). */
  ms: number;
  loadMs: number;
  generateMs: number;
  /** The child's peak RSS (VmHWM) after the case. */
  hwm: number;
}

export interface CaseOutcome {
  result: ChildResult | null;
  /** Set when the child did not report a result: why (killed past the limit, a signal, an exit). */
  failure: string | null;
  ms: number;
}

// The child: loads the engine, then runs the cases from argv[3] on, one JSON line before each
// ({start}) and one after ({done, ...result}). A thrown generate() (synchronously or by rejecting)
// is a result like any other.
const CHILD = `
const fs = await import('node:fs');
const { loadModel } = await import(process.argv[1]);
const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const say = (o) => process.stdout.write(JSON.stringify(o) + '\\n');
const hwm = () => { const m = /VmHWM:\\s+(\\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8')); return m ? Number(m[1]) * 1024 : process.memoryUsage().rss; };
const fail = (stage, e) => ({ ok: false, stage, code: e?.code ?? null, message: String(e?.message ?? e) });
let loaded = null;
for (let i = Number(process.argv[3]); i < cases.length; i++) {
  const c = cases[i];
  say({ start: i });
  const t0 = performance.now();
  let out;
  if (loaded && loaded.path !== c.model) { await loaded.model.close(); loaded = null; }
  let loadMs = 0;
  let t1 = t0;
  try {
    if (!loaded) { loaded = { path: c.model, model: await loadModel(c.model, c.load) }; loadMs = performance.now() - t0; }
    t1 = performance.now();
    try {
      const r = await (async () => loaded.model.createSession().generate(c.input, c.options).result)();
      out = { ok: true, stage: 'generate', tokens: r.generatedTokens };
    } catch (e) { out = fail('generate', e); }
  } catch (e) { out = fail('load', e); loadMs = performance.now() - t0; }
  const now = performance.now();
  say({ done: i, ...out, ms: now - t0, loadMs, generateMs: out.stage === 'generate' ? now - t1 : 0, hwm: hwm() });
}
if (loaded) await loaded.model.close();
`;

let prlimitChecked: boolean | null = null;
function havePrlimit(): boolean {
  prlimitChecked ??= spawnSync('prlimit', ['--version'], { stdio: 'ignore' }).status === 0;
  return prlimitChecked;
}

/** A process's resident set in bytes (0 once it is gone). */
export function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const STARTUP_LIMIT_MS = 30_000;

/** One child from case `from` on; resolves when it ends, with the case it was running (if any). */
function runChild(file: string, cases: readonly ChildCase[], from: number, outcomes: (CaseOutcome | undefined)[]): Promise<{ current: number | null; lastDone: number | null; failure: string | null }> {
  return new Promise((resolve) => {
    const node = [process.execPath, '--input-type=module', '-e', CHILD, ENGINE_DIST, file, String(from)];
    const [cmd, ...args] = havePrlimit() ? ['prlimit', `--as=${ADDRESS_SPACE_LIMIT}`, ...node] : node;
    const child = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let current: number | null = null;
    let lastDone: number | null = null;
    let started = performance.now();
    let killed: string | null = null;
    let pending = '';
    let stderr = '';
    const kill = (why: string): void => {
      killed ??= why;
      child.kill('SIGKILL');
    };
    let timer = setTimeout(() => kill(`no case started within ${STARTUP_LIMIT_MS / 1000} s`), STARTUP_LIMIT_MS);
    const watch = setInterval(() => {
      if (child.pid && rssOf(child.pid) > RSS_LIMIT) kill(`over ${RSS_LIMIT / 1024 ** 3} GiB of RSS`);
    }, 50);
    child.stdout.on('data', (d: Buffer) => {
      pending += d.toString();
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        let msg: { start?: number; done?: number } & Partial<ChildResult>;
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          continue; // not ours (a library writing to stdout)
        }
        clearTimeout(timer);
        if (msg.start !== undefined) {
          current = msg.start;
          started = performance.now();
          const limit = cases[current]!.limitMs;
          timer = setTimeout(() => kill(`still running after ${limit / 1000} s`), limit);
        } else if (msg.done !== undefined) {
          const { done, ...result } = msg;
          outcomes[done] = { result: result as ChildResult, failure: null, ms: performance.now() - started };
          current = null;
          lastDone = done;
        }
      }
    });
    child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-8000)));
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      clearInterval(watch);
      const tail = stderr
        .split('\n')
        .filter((l) => /assert|abort|error|terminate|what\(\)|alloc|fault|killed/i.test(l))
        .slice(-3)
        .join(' | ')
        .slice(0, 600);
      const how = killed ?? (signal ? `died by ${signal}` : status !== 0 ? `exited with status ${status}` : null);
      const failure = how && `${how}${tail ? ` (stderr: ${tail})` : ''}`;
      if (current !== null) outcomes[current] = { result: null, failure: failure ?? 'exited in the middle of the case', ms: performance.now() - started };
      resolve({ current, lastDone, failure });
    });
  });
}

/**
 * Runs `cases` in as few children as they allow, each case within its limit; the outcomes in the
 * cases' order. `dir` holds the file the cases are passed in.
 */
export async function runCases(dir: string, name: string, cases: readonly ChildCase[]): Promise<CaseOutcome[]> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(cases));
  const outcomes: (CaseOutcome | undefined)[] = new Array<CaseOutcome | undefined>(cases.length);
  let from = 0;
  while (from < cases.length) {
    const end = await runChild(file, cases, from, outcomes);
    // A child that fails after its last case (closing the model, exiting) fails that case.
    if (end.current === null && end.failure && end.lastDone !== null) {
      const o = outcomes[end.lastDone]!;
      outcomes[end.lastDone] = { ...o, failure: `after the case: ${end.failure}` };
    }
    const next = outcomes.findIndex((o, i) => i >= from && o === undefined);
    if (next < 0) break;
    // A child that ended before it started a case (at startup, say) fails the first one, so the run moves on.
    const stillborn = end.current === null && end.lastDone === null;
    if (stillborn) outcomes[next] = { result: null, failure: `the child ended before the case started: ${end.failure ?? 'exited'}`, ms: 0 };
    from = next + (stillborn ? 1 : 0);
  }
  return outcomes.map((o) => o ?? { result: null, failure: 'not run', ms: 0 });
}

/** What every outcome must be, whatever the case: a result or an error of one short line, within the limits. */
export function commonProblem(o: CaseOutcome): string | null {
  if (o.failure) return `${o.failure} (after ${Math.round(o.ms)} ms)`;
  const r = o.result;
  if (!r) return 'no result';
  if (r.hwm > RSS_LIMIT) return `peak RSS ${(r.hwm / 1024 ** 2).toFixed(0)} MiB, over ${RSS_LIMIT / 1024 ** 2} MiB`;
  if (r.ok) return null;
  const m = r.message ?? '';
  if (/\n/.test(m)) return `a multi-line error (${m.split('\n').length} lines): ${JSON.stringify(m.slice(0, 300))}`;
  if (m.length >= 400) return `an error of ${m.length} chars: ${JSON.stringify(m.slice(0, 300))}...`;
  if (/bad_alloc|std::bad_/.test(m)) return `an allocation failed (std::bad_alloc): ${m}`;
  return null;
}

/** A temporary directory with the tiny-qwen3moe fixture, the built engine made current first (the children import it). */
export async function prepareFixture(prefix: string): Promise<{ dir: string; model: string }> {
  buildIfStale(fileURLToPath(new URL('../../gguf', import.meta.url)), 'index.js');
  buildIfStale(fileURLToPath(new URL('..', import.meta.url)), 'index.js');
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const model = join(dir, 'tiny-qwen3moe.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: model });
  return { dir, model };
}

/** The case indexes of a run: 0..count-1, or those BMOE_FUZZ_ONLY lists ("3,17"). */
export function caseIndexes(count: number): number[] {
  const only = process.env.BMOE_FUZZ_ONLY;
  if (only) return only.split(',').map((s) => Number(s.trim()));
  return Array.from({ length: count }, (_, i) => i);
}

/** `items` in runs of `size`. */
export function batches<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** A case of a fuzz test: what the child runs, what the report shows, and what else its result must be. */
export interface FuzzCase {
  index: number;
  shape: string;
  /** A fixed case's name (a random case is named by its seed and index). */
  fixed?: string;
  /** The generated input (a grammar, a schema, a template), shown clipped when the case fails. */
  input: string;
  child: ChildCase;
  /** A problem with a result that passed commonProblem, or null. */
  judge: (r: ChildResult) => string | null;
}

/**
 * Runs a group of cases (in children, see runCases) and judges each: the problems found, each
 * naming the seed, the case, its input and how to rerun it alone. `tally` counts the outcomes per
 * shape; BMOE_FUZZ_VERBOSE=1 prints every case.
 */
export async function runFuzzGroup(dir: string, name: string, seed: number, group: readonly FuzzCase[], tally: Map<string, number>): Promise<string[]> {
  const outcomes = await runCases(dir, name, group.map((c) => c.child));
  const problems: string[] = [];
  for (const [i, o] of outcomes.entries()) {
    const c = group[i]!;
    const r = o.result;
    const problem = commonProblem(o) ?? (r ? c.judge(r) : null);
    const what = problem ? 'FAILED' : r?.ok ? 'ok' : 'refused';
    tally.set(`${c.shape} ${what}`, (tally.get(`${c.shape} ${what}`) ?? 0) + 1);
    const said = r?.ok ? `ok, ${r.tokens} tokens` : (r?.message ?? o.failure);
    if (process.env.BMOE_FUZZ_VERBOSE) console.log(`${name} #${c.index} ${c.shape} ${Math.round(o.ms)} ms: ${said} <- ${clip(c.input, 160)}`);
    else if (o.ms > 5000 && !problem) console.log(`${name}: seed ${seed} case #${c.index} (${c.shape}) took ${Math.round(o.ms)} ms: ${said}`);
    const rerun = c.fixed ? '' : `\n    rerun: BMOE_FUZZ_SEED=${seed} BMOE_FUZZ_ONLY=${c.index}`;
    if (problem) problems.push(`${c.fixed ?? `seed ${seed} case #${c.index}`} (${c.shape}): ${problem}\n    input: ${clip(c.input)}${rerun}`);
  }
  return problems;
}

/** The tally as one line: "shape outcome n, ...". */
export function tallyLine(tally: Map<string, number>): string {
  return [...tally].sort().map(([k, v]) => `${k} ${v}`).join(', ');
}

/** A fuzz suite's fixture and outcome tally: the model made before its tests, the tally printed and the folder removed after. */
export interface FuzzSuite {
  dir: string;
  model: string;
  readonly tally: Map<string, number>;
}

/** Registers the suite's beforeAll/afterAll (call inside its describe); `knobs` names its environment variables. */
export function fuzzSuite(name: string, seed: number, count: number, knobs: string): FuzzSuite {
  const suite: FuzzSuite = { dir: '', model: '', tally: new Map() };
  beforeAll(async () => {
    Object.assign(suite, await prepareFixture(`bmoe-fuzz-${name}-`));
    console.log(`fuzz-${name}: seed ${seed}, ${count} cases (${knobs})`);
  });
  afterAll(async () => {
    console.log(`fuzz-${name} outcomes: ${tallyLine(suite.tally)}`);
    if (suite.dir) await rm(suite.dir, { recursive: true, force: true });
  });
  return suite;
}
