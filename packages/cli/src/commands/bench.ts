// `bmoe bench ...`: the bench's commands (`@bmoe/bench`: matrix, analyze, calibrate, targets,
// serve-load, serve, soak) under the main CLI. `@bmoe/bench` is an optional peer of the CLI, so
// `npm install @bmoe/cli` does not install its chart libraries (vega, resvg) or the openai client:
// it is loaded on use, and where it is not installed the command says in one line how to get it
// (exit 2). The bench never imports the CLI: it is handed this same `bmoe` executable to run its
// rows and servers with.
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { EXIT_USAGE, type CliContext } from '../context.js';
import { resolveModelFlags } from '../hub/index.js';

type Bench = typeof import('@bmoe/bench');

/** The one line `bmoe bench` prints when `@bmoe/bench` is not installed. */
export const BENCH_MISSING =
  'bmoe: error: bmoe bench needs @bmoe/bench, which is not installed: npm install -g @bmoe/bench (or npm install @bmoe/bench next to @bmoe/cli)';

/** `@bmoe/bench`, or undefined when it cannot be found (any other load error is thrown). */
async function importBench(): Promise<Bench | undefined> {
  try {
    return await import('@bmoe/bench');
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    const notFound = code === 'ERR_MODULE_NOT_FOUND' && String((e as Error).message).includes("'@bmoe/bench'");
    if (notFound) return undefined;
    throw e;
  }
}

export function registerBench(program: Command, ctx: CliContext): void {
  program
    .command('bench')
    .description('benchmarks: matrix | analyze | calibrate | targets | serve-load | serve | soak (bmoe bench --help)')
    .argument('[args...]', 'bench command and its flags')
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .passThroughOptions()
    .action(async (args: string[]) => {
      const bench = await importBench();
      if (bench === undefined) {
        process.stderr.write(`${BENCH_MISSING}\n`);
        ctx.exitCode = EXIT_USAGE;
        return;
      }
      const { registerBenchCommands, CgroupError, ConfigError, AnalyzeError } = bench;
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
          ctx.exitCode = EXIT_USAGE;
          return;
        }
        throw e;
      }
    });
}
