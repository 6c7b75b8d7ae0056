// `bmoe bench ...`: the bench's commands (`@bmoe/bench`: matrix, analyze, calibrate, targets,
// serve-load, soak) under the main CLI. Loaded on use, so `bmoe --help` does not pay for the
// bench's chart libraries. The bench never imports the CLI: it is handed this same `bmoe`
// executable to run its rows and servers with.
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import type { CliContext } from '../context.js';
import { resolveModelFlags } from '../hub/index.js';

export function registerBench(program: Command, ctx: CliContext): void {
  program
    .command('bench')
    .description('benchmarks: matrix | analyze | calibrate | targets | serve-load | soak (bmoe bench --help)')
    .argument('[args...]', 'bench command and its flags')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .passThroughOptions()
    .action(async (args: string[]) => {
      const { registerBenchCommands, CgroupError, ConfigError, AnalyzeError } = await import('@bmoe/bench');
      const self = [process.execPath, fileURLToPath(new URL('./bin.js', import.meta.url))];
      const sub = new Command('bmoe bench')
        .description("benchmarks: the spec's tables reproduced on this machine")
        .exitOverride()
        .showSuggestionAfterError(true);
      registerBenchCommands(sub, { bmoe: self });
      for (const c of sub.commands) c.exitOverride();
      try {
        await sub.parseAsync(args.length > 0 ? await resolveModelFlags(args) : ['--help'], { from: 'user' });
        ctx.exitCode = typeof process.exitCode === 'number' ? process.exitCode : 0;
      } catch (e) {
        if (e instanceof CgroupError || e instanceof ConfigError || e instanceof AnalyzeError) {
          process.stderr.write(`bmoe: error: ${e.message}\n`);
          ctx.exitCode = 2;
          return;
        }
        throw e;
      }
    });
}
