#!/usr/bin/env node
// bmoe-bench: benchmark commands. `targets` measures the expert-streaming targets in one run.
import { Command, InvalidArgumentError } from 'commander';
import { runTargets, targetsReport } from './targets.js';
import { CgroupError } from './cgroup.js';

const num = (min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number ≥ ${min}, got ${v}`);
  return n;
};

const program = new Command('bmoe-bench').description('bmoe benchmarks (ratios measured side by side in one run)');
program
  .command('targets')
  .description('streaming vs mmap vs resident on one model, under a memory limit, with the disk ceiling')
  .requiredOption('--model <file>', 'GGUF to measure')
  .option('--mem-limit <GiB>', 'memory cgroup limit for the limited rows', num(0.25), 2)
  .option('--n <N>', 'tokens per row', num(2), 64)
  .option('-t, --threads <N>', 'compute threads', num(1), 2)
  .option('--cache-mb <N>', 'cache of the cached rows, MiB', num(1), 1000)
  .option('--io-threads <N>', 'read lanes', num(1), 4)
  .option('--drop-caches', 'drop the page cache before every row (root)')
  .option('--prompt <text>', 'prompt', 'The quick brown fox jumps over the lazy dog')
  .action(async (o: { model: string; memLimit: number; n: number; threads: number; cacheMb: number; ioThreads: number; dropCaches?: boolean; prompt: string }) => {
    const opts = {
      model: o.model,
      memLimitGiB: o.memLimit,
      n: o.n,
      threads: o.threads,
      cacheMb: o.cacheMb,
      lanes: o.ioThreads,
      dropCaches: o.dropCaches ?? false,
      prompt: o.prompt,
      log: (l: string) => process.stderr.write(`${l}\n`),
    };
    const r = await runTargets(opts);
    process.stdout.write(`${targetsReport(r, opts)}\n`);
  });

program.parseAsync(process.argv).catch((e: unknown) => {
  const msg = e instanceof Error ? e.message : String(e);
  process.stderr.write(`bmoe-bench: error: ${msg}\n`);
  process.exit(e instanceof CgroupError ? 2 : 1);
});
