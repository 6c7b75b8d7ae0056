// The bench's command tree, shared by the `bmoe-bench` bin and `bmoe bench` (the CLI passes its
// own `bmoe` command so rows run the very CLI the user invoked; the bin finds one, see runner.ts).
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { MultiBar, Presets } from 'cli-progress';
import { analyzeRow, loadMatrixDir, summaryMarkdown } from './analyze.js';
import { calibrate, calibrationReport } from './calibrate.js';
import { DEFAULT_BENCH_MODEL, loadConfigSet } from './configs.js';
import { runInCgroup } from './cgroup.js';
import { runMatrix, type MatrixProgress } from './matrix.js';
import { findBmoeCommand, modelCacheDir as cacheDir } from './runner.js';
import { registerServeLoad } from './serve-load.js';
import { registerSoak } from './soak-command.js';
import { runTargets, targetsReport } from './targets.js';

const num = (min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number ≥ ${min}, got ${v}`);
  return n;
};
const int = (min: number) => (v: string): number => {
  const n = num(min)(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`expected a whole number ≥ ${min}, got ${v}`);
  return n;
};
/** `2` (GiB) or `60%` (of the largest model file). */
const memLimit = (v: string): string => {
  if (/^\d+(\.\d+)?%$/.test(v) && Number(v.slice(0, -1)) > 0) return v;
  if (Number.isFinite(Number(v)) && Number(v) >= 0.25) return v;
  throw new InvalidArgumentError(`expected GiB (≥ 0.25) or a share of the model file like 60%, got ${v}`);
};
const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

const DEFAULT_PROMPT = 'Write an essay about the history of computing, from the abacus to the smartphone.';

export interface BenchCommandOptions {
  /** argv prefix that runs `bmoe`. Default: findBmoeCommand() (BMOE_CLI, else `bmoe` on PATH), looked up when a command needs it. */
  bmoe?: string[];
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

function progressFor(enabled: boolean): MatrixProgress {
  const log = (l: string): void => void process.stderr.write(`${l}\n`);
  if (!enabled) {
    return {
      rowStart: (i, total, stem) => log(`[${i + 1}/${total}] ${stem}`),
      token: () => undefined,
      rowEnd: (stem, row, skipped) => {
        if (skipped) log(`[skip] ${stem}: complete already`);
        else if (row) log(`  ${row.status === 'ok' ? `${(row.summary?.tokensPerSecond ?? row.peerTokensPerSecond ?? 0).toFixed(2)} tok/s` : `${row.status}: ${row.error ?? ''}`}`);
      },
      log,
    };
  }
  const bars = new MultiBar({ format: ' {bar} {value}/{total} {what}', hideCursor: true, clearOnComplete: false, stopOnComplete: false, etaBuffer: 32 }, Presets.shades_grey);
  let rowsBar: ReturnType<MultiBar['create']> | null = null;
  let tokBar: ReturnType<MultiBar['create']> | null = null;
  let done = 0;
  return {
    rowStart: (i, total, stem, n) => {
      rowsBar ??= bars.create(total, done, { what: 'rows' });
      rowsBar.setTotal(total);
      tokBar?.stop();
      if (tokBar) bars.remove(tokBar);
      tokBar = bars.create(n, 0, { what: `tokens ${stem}` });
      void i;
    },
    token: (index) => tokBar?.update(index + 1),
    rowEnd: (stem, row, skipped) => {
      done++;
      rowsBar?.update(done);
      const what = skipped ? 'complete already' : row?.status === 'ok' ? `${(row.summary?.tokensPerSecond ?? row.peerTokensPerSecond ?? 0).toFixed(2)} tok/s` : `${row?.status}: ${row?.error ?? ''}`;
      bars.log(`${stem}: ${what}\n`);
    },
    log: (l) => bars.log(`${l}\n`),
  };
}

export function registerBenchCommands(program: Command, opts: BenchCommandOptions = {}): Command {
  const bmoe = (): string[] => opts.bmoe ?? findBmoeCommand();

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
    .option('-t, --threads <N>', 'compute threads', int(1), 4)
    .option('--retry-failed', 'rerun rows recorded as failed or OOM-killed')
    .option('--no-progress', 'plain log lines instead of progress bars')
    .action(async (o: { model?: string[]; n: number; configs: string; out: string; memLimit?: string; cooldown: number; dropCaches?: boolean; prompt: string; threads: number; retryFailed?: boolean; progress: boolean }) => {
      const configs = loadConfigSet(o.configs);
      const progress = progressFor(o.progress && Boolean(process.stderr.isTTY));
      const models = o.model ?? [await defaultModel(bmoe(), progress.log)];
      for (const m of models) if (!existsSync(m)) throw new Error(`--model ${m}: no such file`);
      let memLimitBytes: number | null = null;
      if (o.memLimit !== undefined) {
        memLimitBytes = o.memLimit.endsWith('%')
          ? Math.floor((Number(o.memLimit.slice(0, -1)) / 100) * Math.max(...models.map((m) => statSync(m).size)))
          : Math.floor(Number(o.memLimit) * 2 ** 30);
      }
      mkdirSync(o.out, { recursive: true });
      writeFileSync(join(o.out, 'command.txt'), `${['bmoe-bench', ...process.argv.slice(2).filter((a) => a !== 'bench')].join(' ')}\n`);
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
          memLimitBytes,
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
    });

  program
    .command('analyze')
    .description("summary.md with the spec's tables (throughput, device pressure) and plots (SVG + PNG) from a matrix directory")
    .argument('<dir>', 'matrix output directory')
    .option('--no-plots', 'tables only')
    .action(async (dir: string, o: { plots: boolean }) => {
      const rows = loadMatrixDir(dir);
      const cmdFile = join(dir, 'command.txt');
      const command = existsSync(cmdFile) ? readFileSync(cmdFile, 'utf8').trim() : undefined;
      // Loaded on use: the chart libraries are the heaviest part of the bench.
      const { writePlots } = await import('./plots.js');
      const plots = o.plots ? await writePlots(dir, rows, (p) => mkdirSync(p, { recursive: true })) : undefined;
      const md = summaryMarkdown(rows, { command, plots });
      writeFileSync(join(dir, 'summary.md.part'), md);
      renameSync(join(dir, 'summary.md.part'), join(dir, 'summary.md'));
      process.stdout.write(md);
      const failed = rows.map(analyzeRow).filter((r) => r.status !== 'ok');
      process.stderr.write(`wrote ${join(dir, 'summary.md')}${plots ? ` and ${Object.values(plots).flat().length} plots` : ''}${failed.length ? ` (${failed.length} rows without numbers)` : ''}\n`);
    });

  program
    .command('calibrate')
    .description("find the --router-skew at which a synthetic Qwen3-30B-A3B hits the cache like the spec's phone runs (53 % / 76 %)")
    .option('--layers <N>', 'layers of the calibration model', int(1), 4)
    .option('--n <N>', 'tokens per generation', int(2), 256)
    .option('-t, --threads <N>', 'compute threads', int(1), 4)
    .option('--grid <list>', 'comma-separated skews of the first pass', '0,0.5,1,1.5,2,3')
    .option('--refine <N>', 'refinement rounds', int(0), 2)
    .option('--work-dir <dir>', 'where calibration models are written', join(cacheDir(), 'calibrate'))
    .option('--keep-models', 'keep the calibration models')
    .option('--prompt <text>', 'prompt', DEFAULT_PROMPT)
    .option('--out <file>', 'write the markdown report here too')
    .action(async (o: { layers: number; n: number; threads: number; grid: string; refine: number; workDir: string; keepModels?: boolean; prompt: string; out?: string }) => {
      const grid = o.grid.split(',').map((s) => num(0)(s.trim()));
      const r = await calibrate({
        preset: DEFAULT_BENCH_MODEL.preset,
        layers: o.layers,
        n: o.n,
        threads: o.threads,
        prompt: o.prompt,
        workDir: o.workDir,
        keepModels: Boolean(o.keepModels),
        grid,
        refine: o.refine,
        bmoe: bmoe(),
        log: (l) => void process.stderr.write(`${l}\n`),
      });
      const report = calibrationReport(r, ['bmoe-bench', ...process.argv.slice(2).filter((a) => a !== 'bench')].join(' '));
      if (o.out) writeFileSync(o.out, report);
      process.stdout.write(report);
    });

  program
    .command('targets')
    .description('streaming vs mmap vs resident on one model, under a memory limit, with the disk ceiling')
    .requiredOption('--model <file>', 'GGUF to measure')
    .option('--mem-limit <GiB>', 'memory cgroup limit for the limited rows', num(0.25), 2)
    .option('--n <N>', 'tokens per row', int(2), 64)
    .option('-t, --threads <N>', 'compute threads', int(1), 2)
    .option('--cache-mb <N>', 'cache of the cached rows, MiB', int(1), 1000)
    .option('--io-threads <N>', 'read lanes', int(1), 4)
    .option('--drop-caches', 'drop the page cache before every row (root)')
    .option('--prompt <text>', 'prompt', 'The quick brown fox jumps over the lazy dog')
    .action(async (o: { model: string; memLimit: number; n: number; threads: number; cacheMb: number; ioThreads: number; dropCaches?: boolean; prompt: string }) => {
      const topts = {
        model: o.model,
        memLimitGiB: o.memLimit,
        n: o.n,
        threads: o.threads,
        cacheMb: o.cacheMb,
        lanes: o.ioThreads,
        dropCaches: o.dropCaches ?? false,
        prompt: o.prompt,
        bmoe: bmoe(),
        log: (l: string) => process.stderr.write(`${l}\n`),
      };
      const r = await runTargets(topts);
      process.stdout.write(`${targetsReport(r, topts)}\n`);
    });

  registerServeLoad(program);
  registerSoak(program, bmoe);
  return program;
}
