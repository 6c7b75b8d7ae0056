// `bmoe-bench` as a function: `main(argv)` parses and runs one command and resolves to the exit
// code (0 ok, 1 failure, 2 refused: no permission, bad config set, nothing to analyze). The
// executable (bin.ts) is one line around it.
import { Command } from 'commander';
import { AnalyzeError } from './analyze.js';
import { CgroupError } from './cgroup.js';
import { registerBenchCommands, type BenchCommandOptions } from './commands.js';
import { ConfigError } from './configs.js';

/** `argv` as process.argv: [node, script, ...args]; `opts.bmoe` as in registerBenchCommands. */
export async function main(argv: readonly string[], opts: BenchCommandOptions = {}): Promise<number> {
  const program = new Command('bmoe-bench').description("bmoe benchmarks: the spec's tables reproduced on this machine, ratios measured side by side in one run");
  registerBenchCommands(program, opts);
  try {
    await program.parseAsync([...argv]);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    process.stderr.write(`bmoe-bench: error: ${e instanceof Error ? e.message : String(e)}\n`);
    return e instanceof CgroupError || e instanceof ConfigError || e instanceof AnalyzeError ? 2 : 1;
  }
}
