#!/usr/bin/env node
// bmoe-bench: matrix, analyze, calibrate, targets (also reachable as `bmoe bench`).
import { Command } from 'commander';
import { CgroupError } from './cgroup.js';
import { registerBenchCommands } from './commands.js';
import { ConfigError } from './configs.js';
import { AnalyzeError } from './analyze.js';

const program = new Command('bmoe-bench').description('bmoe benchmarks: the spec\'s tables reproduced on this machine, ratios measured side by side in one run');
registerBenchCommands(program);

program.parseAsync(process.argv).catch((e: unknown) => {
  const msg = e instanceof Error ? e.message : String(e);
  process.stderr.write(`bmoe-bench: error: ${msg}\n`);
  process.exit(e instanceof CgroupError || e instanceof ConfigError || e instanceof AnalyzeError ? 2 : 1);
});
