// The bench's command tree, shared by the `bmoe-bench` bin and `bmoe bench` (the CLI passes its
// own `bmoe` command so rows run the very CLI the user invoked; the bin finds one, see runner.ts).
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { analyzeRow, loadMatrixDir, summaryMarkdown } from './analyze.js';
import { calibrate, calibrationReport } from './calibrate.js';
import { DEFAULT_BENCH_MODEL } from './configs.js';
import { DEFAULT_PROMPT, engineFlag, int, invokedCommand, num, SHORT_PROMPT, threadsFlag } from './flags.js';
import { imageBenchReport, runImageBench } from './image-bench.js';
import { registerMatrix } from './matrix-command.js';
import { findBmoeCommand, modelCacheDir as cacheDir } from './runner.js';
import { registerServeBench } from './serve-bench-command.js';
import { registerServeLoad } from './serve-load.js';
import { registerSoak } from './soak-command.js';
import { requireOpenmpAddon, runWaiting, waitingReport } from './waiting.js';
import { DEFAULT_ROWS, ROW_KEYS, runTargets, type RowKey } from './targets.js';
import { targetsReport } from './targets-report.js';

export interface BenchCommandOptions {
  /** argv prefix that runs `bmoe`. Default: findBmoeCommand() (BMOE_CLI, else `bmoe` on PATH), looked up when a command needs it. */
  bmoe?: string[];
}

export function registerBenchCommands(program: Command, opts: BenchCommandOptions = {}): Command {
  const bmoe = (): string[] => opts.bmoe ?? findBmoeCommand();
  registerMatrix(program, bmoe);
  registerAnalyze(program);
  registerCalibrate(program, bmoe);
  registerTargets(program, bmoe);
  registerWaiting(program, bmoe);
  registerImage(program, bmoe);
  registerServeLoad(program);
  registerServeBench(program, bmoe);
  registerSoak(program, bmoe);
  return program;
}

function registerAnalyze(program: Command): void {
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
}

function registerImage(program: Command, bmoe: () => string[]): void {
  program
    .command('image')
    .description('image prompt evaluation (projector encoder + the image through every layer), resident vs streamed (cache 0, partial) in a memory cgroup, on a real-shape preset with a generated projector')
    .option('--preset <name>', 'text preset with a projector kind (qwen3.6-35b-a3b, gemma-4-26b-a4b, mini-qwen35moe, tiny-gemma4)', 'qwen3.6-35b-a3b')
    .option('--layers <N>', "layers of the text model (every other dimension the preset's)", int(1), 4)
    .option('--width <px>', 'image width', int(16), 1024)
    .option('--height <px>', 'image height', int(16), 768)
    .addOption(threadsFlag(2))
    .option('--rounds <N>', 'interleaved rounds (each row reports its median)', int(1), 3)
    .option('--mem-limit <GiB>', 'memory cgroup of the streamed rows', num(0.25), 2)
    .option('--cache-percent <P>', "the partial cache's share of the expert bytes, percent", num(1), 25)
    .option('--prompt <text>', 'the text after the image', 'Describe this picture.')
    .option('--work-dir <dir>', 'where the model, its projector and the image are made (kept)', join(cacheDir(), 'image'))
    .option('--drop-caches', 'drop the page cache before every row (root)')
    .option('--out <file>', 'write the markdown report here too')
    .action(async (o: { preset: string; layers: number; width: number; height: number; threads: number; rounds: number; memLimit: number; cachePercent: number; prompt: string; workDir: string; dropCaches?: boolean; out?: string }) => {
      const opts = { ...o, bmoe: bmoe(), memLimitGiB: o.memLimit, dropCaches: o.dropCaches ?? false, log: (l: string) => process.stderr.write(`${l}\n`) };
      const md = imageBenchReport(await runImageBench(opts), opts);
      process.stdout.write(md);
      if (o.out) writeFileSync(o.out, md);
    });
}

function registerCalibrate(program: Command, bmoe: () => string[]): void {
  program
    .command('calibrate')
    .description("find the --router-skew at which a synthetic Qwen3-30B-A3B hits the cache like the spec's phone runs (53 % / 76 %)")
    .option('--layers <N>', 'layers of the calibration model', int(1), 4)
    .option('--n <N>', 'tokens per generation', int(2), 256)
    .addOption(threadsFlag(4))
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
      const report = calibrationReport(r, invokedCommand());
      if (o.out) writeFileSync(o.out, report);
      process.stdout.write(report);
    });
}

/** `--rows a,b`: known row keys, in run order. */
function rowKeys(v: string): RowKey[] {
  const want = v.split(',').map((k) => k.trim()).filter(Boolean);
  const bad = want.filter((k) => !(ROW_KEYS as readonly string[]).includes(k));
  if (bad.length > 0 || want.length === 0) throw new InvalidArgumentError(`unknown row ${bad.join(', ') || '(none)'}; rows: ${ROW_KEYS.join(', ')}`);
  return ROW_KEYS.filter((k) => want.includes(k));
}

/** A command that times `bmoe run` on one model (targets, waiting): --model, --n, -t, --io-threads, --prompt. */
function measureCommand(program: Command, name: string, description: string, tokens: { help: string; default: number }): Command {
  return program
    .command(name)
    .description(description)
    .requiredOption('--model <file>', 'GGUF to measure')
    .option('--n <N>', tokens.help, int(2), tokens.default)
    .addOption(threadsFlag(2))
    .addOption(engineFlag('stream.ioThreads'))
    .option('--prompt <text>', 'prompt', SHORT_PROMPT);
}

function registerTargets(program: Command, bmoe: () => string[]): void {
  measureCommand(program, 'targets', 'streaming vs mmap vs resident on one model, under a memory limit, with the disk ceiling', { help: 'tokens per row', default: 64 })
    .option('--mem-limit <GiB>', 'memory cgroup limit for the limited rows', num(0.25), 2)
    // The `cached` rows' cache, beside the `stream0` rows' none: a size (the row names and the
    // peak-RSS bound read it as MiB), not 0 and not 'auto'.
    .addOption(engineFlag('stream.cacheMb', { help: 'cache of the cached rows, MiB', default: 1000, min: 1, noAuto: true }))
    .option('--drop-caches', 'drop the page cache before every row (root)')
    .option('--rows <keys>', `rows to run, comma-separated (${ROW_KEYS.join(', ')}); llama: llama-completion at its defaults (repack on, no limit) against repack (bmoe's defaults), peer: llama-completion -nr under the limit, edge-stream0: BigMoeOnEdge (--edge-cli) with stream0's settings; default: all but edge-stream0`, rowKeys, [...DEFAULT_ROWS])
    .option('--baseline-n <N>', 'tokens for the mmap baseline and peer (llama-completion -nr, limited) rows (default: --n)', int(1))
    .option('--edge-cli <file>', "BigMoeOnEdge's bmoe-cli for the edge-stream0 row: the peer engine on the same file, cache 0, serial, interleaved with stream0 (default: bmoe-cli on PATH)")
    .option('--rounds <N>', 'interleaved rounds of resident with prebuilt and resident-top1, of repack with llama and all-repack and, when an -auto row is asked for, of its family (stream0*, cached*), each row its median round (other rows run once)', int(1), 3)
    .option('--timeout-min <N>', 'time limit per row, minutes', int(1), 30)
    .action(async (o: { model: string; memLimit: number; n: number; threads: number; cacheMb: number; ioThreads: number; dropCaches?: boolean; prompt: string; rows: RowKey[]; baselineN?: number; edgeCli?: string; rounds: number; timeoutMin: number }) => {
      const topts = {
        model: o.model,
        memLimitGiB: o.memLimit,
        n: o.n,
        threads: o.threads,
        cacheMb: o.cacheMb,
        lanes: o.ioThreads,
        dropCaches: o.dropCaches ?? false,
        prompt: o.prompt,
        rows: o.rows,
        baselineN: o.baselineN,
        edgeCli: o.edgeCli,
        rounds: o.rounds,
        timeoutMin: o.timeoutMin,
        bmoe: bmoe(),
        log: (l: string) => process.stderr.write(`${l}\n`),
      };
      const r = await runTargets(topts);
      process.stdout.write(`${targetsReport(r, topts)}\n`);
    });
}

function registerWaiting(program: Command, bmoe: () => string[]): void {
  measureCommand(program, 'waiting', "how the compute threads wait (bmoe's policy BMOE_WAIT on ggml's pool against OpenMP's OMP_WAIT_POLICY), streamed with lanes running, alone and beside a busy process", { help: 'tokens per run', default: 48 })
    // The report states the cache in MiB: a size, not 'auto'.
    .addOption(engineFlag('stream.cacheMb', { help: 'expert cache, MiB', noAuto: true }))
    .option('--rounds <N>', 'interleaved rounds (each cell reports its median)', int(1), 3)
    .option('--resident', 'hold the model resident (no streaming): the waits between graph nodes alone')
    .option('--no-repack', "every run without weight repacking (bmoe run --no-repack; repacking is bmoe's default), to compare with numbers from before")
    .action(async (o: { model: string; n: number; threads: number; ioThreads: number; cacheMb: number; rounds: number; prompt: string; resident?: boolean; repack?: boolean }) => {
      const wopts = {
        model: o.model, n: o.n, threads: o.threads, lanes: o.ioThreads, cacheMb: o.cacheMb, rounds: o.rounds, prompt: o.prompt,
        resident: o.resident === true, noRepack: o.repack === false, bmoe: bmoe(), openmpAddon: requireOpenmpAddon(),
        log: (l: string) => process.stderr.write(`${l}\n`),
      };
      const r = await runWaiting(wopts);
      process.stdout.write(`${waitingReport(r, wopts)}\n`);
    });
}
