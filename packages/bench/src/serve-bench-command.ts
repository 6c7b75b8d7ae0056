// `bmoe-bench serve` / `bmoe bench serve`: the flags, the markdown table (or JSON) on stdout,
// `--out` for the table, exit 1 when a side of a row failed.
import { existsSync, writeFileSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { engineFlag, int, invokedCommand, num, threadsFlag } from './flags.js';
import { loadPairs, serveBenchReport } from './serve-bench-report.js';
import { runServeBench, SERVE_ROWS, type ServeBenchResult, type ServeRow } from './serve-bench.js';
import { SIDES } from './serve-bench-servers.js';

/** `--rows a,c`: known rows, in run order. */
export function serveRows(v: string): ServeRow[] {
  const want = v.split(',').map((k) => k.trim()).filter(Boolean);
  const bad = want.filter((k) => !(SERVE_ROWS as readonly string[]).includes(k));
  if (bad.length > 0 || want.length === 0) throw new InvalidArgumentError(`unknown row ${bad.join(', ') || '(none)'}; rows: ${SERVE_ROWS.join(', ')}`);
  return SERVE_ROWS.filter((k) => want.includes(k));
}

/** `--clients 1,2,4`: distinct counts of 1 to 64, ascending. */
export function clientCounts(v: string): number[] {
  const parts = v.split(',').map((s) => s.trim()).filter(Boolean);
  const ns = parts.map((s) => Number(s));
  if (parts.length === 0 || ns.some((n, i) => !/^\d+$/.test(parts[i]!) || n < 1 || n > 64)) throw new InvalidArgumentError(`expected a comma-separated list of client counts from 1 to 64, got ${v}`);
  return [...new Set(ns)].sort((a, b) => a - b);
}

/** Sides that failed somewhere, as `row side` strings. */
export function failedSides(r: ServeBenchResult): string[] {
  const pairs = [
    ...(r.alternating ? [['(a)', r.alternating] as const] : []),
    ...loadPairs(r.load ?? []),
    ...(r.resume ? [['(c)', r.resume] as const] : []),
  ];
  return pairs.flatMap(([row, p]) => SIDES.filter((s) => p[s].error !== null).map((s) => `${row} ${s}`));
}

interface ServeBenchFlags {
  model: string;
  threads: number;
  ctxSize: number;
  rows: ServeRow[];
  clients: number[];
  requests: number;
  rounds: number;
  turns: number;
  systemTokens: number;
  pauseMs: number;
  resumeTokens: number;
  memLimit?: number;
  moeStream?: boolean;
  cacheMb?: number | 'auto';
  /** false with --no-repack (commander's negatable option). */
  repack?: boolean;
  dropCaches?: boolean;
  workDir?: string;
  out?: string;
  json?: boolean;
}

/** Adds `serve` to a command tree. */
export function registerServeBench(program: Command, bmoe: () => string[]): void {
  program
    .command('serve')
    .description('bmoe serve vs llama-server on one GGUF, one at a time, the same scripts over HTTP: (a) alternating conversations, (b) 1/2/4 concurrent clients, (c) a long chat resumed after a restart; ratios bmoe / llama-server')
    .requiredOption('--model <file>', 'GGUF both servers load')
    .addOption(threadsFlag(2, 'compute threads of each server'))
    .addOption(engineFlag('contextSize', { help: 'context per slot, tokens (bmoe serve -c N; llama-server -c N × slots, KV not unified)', default: 8192 }))
    .addOption(new Option('--rows <list>', 'rows to run, comma-separated').argParser(serveRows).default([...SERVE_ROWS], SERVE_ROWS.join(',')))
    .addOption(new Option('--clients <list>', 'row (b): concurrent clients, one run each (as many slots)').argParser(clientCounts).default([1, 2, 4], '1,2,4'))
    .option('--requests <N>', 'row (b): streamed requests per client, one after another', int(1), 3)
    .option('--rounds <N>', 'row (b): runs of each client count, the servers taking turns; the table gives the median round and every round', int(1), 1)
    .option('--turns <N>', 'row (a): turns of each conversation', int(2), 3)
    .option('--system-tokens <N>', "row (a): tokens of each conversation's system prompt", int(16), 1000)
    .option('--pause-ms <N>', 'row (a): the client waits this long after each answer before the next turn (a user reading it)', int(0), 0)
    .option('--resume-tokens <N>', 'row (c): tokens of the chat saved and resumed', int(64), 3000)
    .option('--mem-limit <GiB>', 'run each server inside a memory cgroup of this size (root)', num(0.25))
    .option('--moe-stream', 'bmoe streams experts (llama-server has no streaming: it maps the file)')
    .addOption(engineFlag('stream.cacheMb', { help: "bmoe's expert cache, MiB (with --moe-stream)", default: null }))
    .option('--no-repack', 'bmoe serve without weight repacking (--no-repack); by default both repack, as llama.cpp (llama-server gets -nr inside --mem-limit)')
    .option('--drop-caches', 'drop the page cache before each server starts (root)')
    .option('--work-dir <dir>', 'where the saved conversations of row (c) go (default: a temporary directory, removed after)')
    .option('--out <file.md>', 'write the markdown table here too')
    .option('--json', 'print the result as JSON instead of the table')
    .action(async (f: ServeBenchFlags) => {
      if (f.cacheMb !== undefined && !f.moeStream) throw new InvalidArgumentError('--cache-mb requires --moe-stream');
      if (!existsSync(f.model)) throw new Error(`--model ${f.model}: no such file`);
      const r = await runServeBench({
        model: f.model,
        bmoe: bmoe(),
        threads: f.threads,
        ctxSize: f.ctxSize,
        rows: f.rows,
        clients: f.clients,
        requests: f.requests,
        rounds: f.rounds,
        turns: f.turns,
        systemTokens: f.systemTokens,
        pauseMs: f.pauseMs,
        resumeTokens: f.resumeTokens,
        ...(f.memLimit === undefined ? {} : { memLimitGiB: f.memLimit }),
        moeStream: Boolean(f.moeStream),
        ...(f.cacheMb === undefined ? {} : { cacheMb: f.cacheMb }),
        noRepack: f.repack === false,
        dropCaches: Boolean(f.dropCaches),
        ...(f.workDir === undefined ? {} : { workDir: f.workDir }),
        log: (l) => void process.stderr.write(`${l}\n`),
      });
      const md = serveBenchReport(r, invokedCommand());
      if (f.out) writeFileSync(f.out, md);
      process.stdout.write(f.json ? `${JSON.stringify(r, null, 2)}\n` : md);
      const failed = failedSides(r);
      if (failed.length > 0) {
        process.stderr.write(`serve: failed: ${failed.join(', ')}\n`);
        process.exitCode = 1;
      }
    });
}
