// The model and expert-streaming flags shared by `bmoe run` and `bmoe serve`: one definition, one
// mapping onto @bmoe/engine's LoadOptions, so both commands accept and check them identically.
import { Option, type Command } from 'commander';
import type { LoadOptions, StreamOptions } from '@bmoe/engine';
import { cacheMb, intRange, nonNegativeInt, positiveInt } from './parse.js';

export interface ModelFlags {
  threads?: number;
  ctxSize?: number;
  batchSize?: number;
  ubatchSize?: number;
  repack?: boolean;
  nr?: boolean;
  moeStream?: boolean;
  cacheMb?: number | 'auto';
  cacheCeilMb?: number;
  ioThreads?: number;
  overlap?: boolean;
  prefetch?: number;
  nExpertUsed?: number;
  odirect: boolean;
  denseWeights?: 'mmap' | 'anon';
  forceCache?: boolean;
}

/** Streaming flags and the StreamOptions key each sets. */
const STREAM_FLAGS: ReadonlyArray<readonly [keyof ModelFlags & keyof StreamOptions, string]> = [
  ['cacheMb', '--cache-mb'],
  ['cacheCeilMb', '--cache-ceil-mb'],
  ['ioThreads', '--io-threads'],
  ['overlap', '--overlap'],
  ['prefetch', '--prefetch'],
  ['odirect', '--no-odirect'],
  ['denseWeights', '--dense-weights'],
  ['forceCache', '--force-cache'],
];

/** Adds the context flags (-t, -c, -b, --ubatch-size, --repack/--nr) to a command. */
export function addContextOptions(cmd: Command): Command {
  return cmd
    .option('-t, --threads <N>', 'compute threads (default: min(4, cores))', intRange(1, 1024))
    .option('-c, --ctx-size <N>', 'context size in tokens (default 4096)', positiveInt)
    .option('-b, --batch-size <N>', 'logical batch for prompt processing (default 512)', positiveInt)
    .option('--ubatch-size <N>', 'physical micro-batch (default 512)', positiveInt);
}

/** Adds the weight and expert-streaming flags (--repack, --moe-stream, --cache-mb, ...) to a command. */
export function addStreamingOptions(cmd: Command): Command {
  return cmd
    .option('--repack', "let ggml repack weights (faster, but rounds differently from -nr and from streaming)")
    .addOption(new Option('--nr', 'no weight repacking (the default; as llama.cpp -nr)').conflicts('repack'))
    .option('--moe-stream', 'stream routed experts from flash instead of holding the model resident')
    .option('--cache-mb <N|auto>', "expert cache budget in MiB, 0 = none, 'auto' = from MemAvailable (default 0)", cacheMb)
    .option('--cache-ceil-mb <N>', "cap for --cache-mb auto, in MiB", positiveInt)
    .option('--io-threads <N>', 'parallel read lanes (default 4)', intRange(1, 64))
    .option('--overlap', "hide each layer's expert reads behind its expert compute")
    .option('--prefetch <N>', 'speculative read-ahead depth; 0 = off (default 0)', nonNegativeInt)
    .option('--n-expert-used <K>', "override the model's top-k routing (lossy)", positiveInt)
    .option('--no-odirect', 'read experts through the page cache instead of O_DIRECT')
    .addOption(new Option('--dense-weights <how>', 'hold non-expert weights in the mapping or anonymous memory (default mmap)').choices(['mmap', 'anon']))
    .option('--force-cache', "accept a cache budget below one token's routed working set");
}

/** The flags as LoadOptions; a streaming flag without --moe-stream is a usage error (exit 2). */
export function loadOptions(cmd: Command, flags: ModelFlags): LoadOptions {
  const given = (key: string): boolean => cmd.getOptionValueSource(key) === 'cli';
  const load: LoadOptions = {
    threads: flags.threads,
    contextSize: flags.ctxSize,
    batchSize: flags.batchSize,
    ubatchSize: flags.ubatchSize ?? (flags.batchSize !== undefined ? Math.min(512, flags.batchSize) : undefined),
    repack: Boolean(flags.repack),
    nExpertUsed: flags.nExpertUsed,
  };
  const stray = STREAM_FLAGS.find(([key]) => given(key));
  if (!flags.moeStream) {
    if (stray) cmd.error(`error: ${stray[1]} requires --moe-stream`, { exitCode: 2, code: 'bmoe.usage' });
    return load;
  }
  if (flags.cacheCeilMb !== undefined && flags.cacheMb !== 'auto') {
    cmd.error('error: --cache-ceil-mb applies only to --cache-mb auto', { exitCode: 2, code: 'bmoe.usage' });
  }
  const stream: StreamOptions = { moeStream: true };
  for (const [key] of STREAM_FLAGS) if (given(key)) Object.assign(stream, { [key]: flags[key] });
  return { ...load, stream };
}
