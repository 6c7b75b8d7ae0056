// `bmoe-bench matrix` / `bmoe bench matrix`: the flags, the built-in bench model (made once with
// `bmoe make-model`), the memory limit, progress bars or plain lines, Ctrl-C as a clean stop.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { MultiBar, Presets } from 'cli-progress';
import { inspectModel, type BenchRow } from '@bmoe/engine';
import { runInCgroup } from './cgroup.js';
import { DEFAULT_BENCH_MODEL, loadConfigSet } from './configs.js';
import { DEFAULT_PROMPT, collect, int, invokedCommand, num, threadsFlag } from './flags.js';
import { runMatrix, type MatrixProgress } from './matrix.js';
import { modelCacheDir as cacheDir } from './runner.js';

/** `2` (GiB) or `60%` (of the largest model file). */
const memLimit = (v: string): string => {
  if (/^\d+(\.\d+)?%$/.test(v) && Number(v.slice(0, -1)) > 0) return v;
  if (Number.isFinite(Number(v)) && Number(v) >= 0.25) return v;
  throw new InvalidArgumentError(`expected GiB (≥ 0.25) or a share of the model file like 60%, got ${v}`);
};

interface MatrixFlags {
  model?: string[];
  n: number;
  configs: string;
  out: string;
  memLimit?: string;
  cooldown: number;
  dropCaches?: boolean;
  prompt: string;
  threads: number;
  retryFailed?: boolean;
  progress: boolean;
}

/** The matrix's built-in model: the spec's Qwen3-30B-A3B shape, fewer layers, calibrated routing. Made once. */
async function defaultModel(bmoe: string[], log: (l: string) => void): Promise<string> {
  const d = DEFAULT_BENCH_MODEL;
  const path = join(cacheDir(), `bench-${d.preset}-${d.layers}l-${d.quant}-skew${d.routerSkew}.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir(), { recursive: true });
  log(`making the default bench model ${path} (${d.preset}, ${d.layers} layers, ${d.quant}, router skew ${d.routerSkew}) …`);
  const r = await runInCgroup(
    [...bmoe, 'make-model', '--preset', d.preset, '--layers', String(d.layers), '--quant', d.quant, '--router-skew', String(d.routerSkew), '--out', path],
    null,
    3600_000,
  );
  if (r.code !== 0) throw new Error(`make-model failed: ${r.stderr.trim().split('\n').pop() ?? ''}`);
  return path;
}

/** `--mem-limit` in bytes: GiB, or a share of the largest model (all its shards); null without the flag. */
async function memLimitBytes(spec: string | undefined, models: readonly string[]): Promise<number | null> {
  if (spec === undefined) return null;
  if (!spec.endsWith('%')) return Math.floor(Number(spec) * 2 ** 30);
  const sizes = await Promise.all(models.map(async (m) => (await inspectModel(m)).fileBytes));
  return Math.floor((Number(spec.slice(0, -1)) / 100) * Math.max(...sizes));
}

/** What a finished row says on its progress line: tok/s, or its status and error. */
const rowOutcome = (row: BenchRow | null): string =>
  row?.status === 'ok' ? `${(row.summary?.tokensPerSecond ?? row.peerTokensPerSecond ?? 0).toFixed(2)} tok/s` : `${row?.status}: ${row?.error ?? ''}`;

/** One line per row on stderr (no TTY, or --no-progress). */
function plainProgress(): MatrixProgress {
  const log = (l: string): void => void process.stderr.write(`${l}\n`);
  return {
    rowStart: (i, total, stem) => log(`[${i + 1}/${total}] ${stem}`),
    token: () => undefined,
    rowEnd: (stem, row, skipped) => {
      if (skipped) log(`[skip] ${stem}: complete already`);
      else if (row) log(`  ${rowOutcome(row)}`);
    },
    log,
  };
}

/** A bar of rows and a bar of the running row's tokens, lines logged above them. */
function barProgress(): MatrixProgress {
  const bars = new MultiBar({ format: ' {bar} {value}/{total} {what}', hideCursor: true, clearOnComplete: false, stopOnComplete: false, etaBuffer: 32 }, Presets.shades_grey);
  let rowsBar: ReturnType<MultiBar['create']> | null = null;
  let tokBar: ReturnType<MultiBar['create']> | null = null;
  let done = 0;
  return {
    rowStart: (_i, total, stem, n) => {
      rowsBar ??= bars.create(total, done, { what: 'rows' });
      rowsBar.setTotal(total);
      tokBar?.stop();
      if (tokBar) bars.remove(tokBar);
      tokBar = bars.create(n, 0, { what: `tokens ${stem}` });
    },
    token: (index) => tokBar?.update(index + 1),
    rowEnd: (stem, row, skipped) => {
      done++;
      rowsBar?.update(done);
      bars.log(`${stem}: ${skipped ? 'complete already' : rowOutcome(row)}\n`);
    },
    log: (l) => bars.log(`${l}\n`),
  };
}

async function matrixAction(o: MatrixFlags, bmoe: () => string[]): Promise<void> {
  const configs = loadConfigSet(o.configs);
  const progress = o.progress && Boolean(process.stderr.isTTY) ? barProgress() : plainProgress();
  const models = o.model ?? [await defaultModel(bmoe(), progress.log)];
  for (const m of models) if (!existsSync(m)) throw new Error(`--model ${m}: no such file`);
  const limit = await memLimitBytes(o.memLimit, models);
  mkdirSync(o.out, { recursive: true });
  writeFileSync(join(o.out, 'command.txt'), `${invokedCommand()}\n`);
  const ac = new AbortController();
  const onSigint = (): void => ac.abort();
  process.on('SIGINT', onSigint);
  try {
    const r = await runMatrix({
      models,
      configs,
      out: o.out,
      n: o.n,
      threads: o.threads,
      prompt: o.prompt,
      memLimitBytes: limit,
      cooldownSeconds: o.cooldown,
      dropCaches: Boolean(o.dropCaches),
      retryFailed: Boolean(o.retryFailed),
      bmoe,
      signal: ac.signal,
      progress,
    });
    process.stderr.write('\n');
    if (r.interrupted) {
      process.stderr.write(`interrupted: ${r.ran.length + r.skipped.length} complete rows in ${o.out}; run the same command again to resume\n`);
      process.exitCode = 130;
      return;
    }
    process.stderr.write(`${r.ran.length} rows run, ${r.skipped.length} complete already, ${r.failed.length} failed → ${o.out} (next: bmoe-bench analyze ${o.out})\n`);
  } finally {
    process.off('SIGINT', onSigint);
  }
}

export function registerMatrix(program: Command, bmoe: () => string[]): void {
  program
    .command('matrix')
    .description("run every config row on every model, one process per row: <model>__<config>.csv / .log / .metrics.json (resumable)")
    .option('--model <file>', 'GGUF to measure (repeatable; default: the built-in bench model, made once)', collect)
    .option('--n <N>', 'tokens per row', int(2), 256)
    .option('--configs <spec|spec-mib|smoke|FILE>', 'config set: a built-in name or a JSON file of {id,label,flags,tool}', 'spec')
    .option('--out <dir>', 'output directory', 'bench-out')
    .option('--mem-limit <GiB|N%>', 'run each row in a memory cgroup of this size (GiB, or a share of the model file)', memLimit)
    .option('--cooldown <S>', 'seconds to wait between rows', num(0), 0)
    .option('--drop-caches', 'drop the page cache before each row (root)')
    .option('--prompt <text>', 'prompt', DEFAULT_PROMPT)
    .addOption(threadsFlag(4))
    .option('--retry-failed', 'rerun rows recorded as failed or OOM-killed')
    .option('--no-progress', 'plain log lines instead of progress bars')
    .action((o: MatrixFlags) => matrixAction(o, bmoe));
}
