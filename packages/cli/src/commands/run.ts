// `bmoe run MODEL -p PROMPT -n N ...`: flags a llama.cpp user knows (-p, -n, -t, -c, --temp,
// --top-k, --top-p, --seed) plus the spec's streaming flags, mapped onto @bmoe/engine options.
import { Option, type Command } from 'commander';
import type { LoadOptions, StreamOptions } from '@bmoe/engine';
import type { CliContext } from '../context.js';
import { cacheMb, intRange, nonNegativeInt, nonNegativeNumber, positiveInt, probability, uint32 } from '../parse.js';

interface RunFlags {
  prompt: string;
  nPredict?: number;
  threads?: number;
  ctxSize?: number;
  batchSize?: number;
  ubatchSize?: number;
  chat?: boolean;
  chatml?: boolean;
  think: boolean;
  temp?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  csv?: string;
  json?: boolean;
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
const STREAM_FLAGS: ReadonlyArray<readonly [keyof RunFlags & keyof StreamOptions, string]> = [
  ['cacheMb', '--cache-mb'],
  ['cacheCeilMb', '--cache-ceil-mb'],
  ['ioThreads', '--io-threads'],
  ['overlap', '--overlap'],
  ['prefetch', '--prefetch'],
  ['odirect', '--no-odirect'],
  ['denseWeights', '--dense-weights'],
  ['forceCache', '--force-cache'],
];

export function registerRun(program: Command, ctx: CliContext): void {
  program
    .command('run')
    .description('generate text from a GGUF model (raw prompt by default, like llama-completion -no-cnv)')
    .argument('<model>', 'GGUF model file')
    .requiredOption('-p, --prompt <text>', 'prompt text')
    .option('-n, --n-predict <N>', 'tokens to generate (default 256)', positiveInt)
    .option('-t, --threads <N>', 'compute threads (default: min(4, cores))', intRange(1, 1024))
    .option('-c, --ctx-size <N>', 'context size in tokens (default 4096)', positiveInt)
    .option('-b, --batch-size <N>', 'logical batch for prompt processing (default 512)', positiveInt)
    .option('--ubatch-size <N>', 'physical micro-batch (default 512)', positiveInt)
    .option('--chat', "format the prompt as one user message with the GGUF's chat template")
    .option('--chatml', 'format the prompt as one user message with ChatML')
    .option('--no-think', 'ask the template to suppress reasoning (implies --chat)')
    .option('--temp <T>', 'temperature; 0 = greedy (default 0)', nonNegativeNumber)
    .option('--top-k <K>', 'top-k sampling; 0 = off (default 40)', nonNegativeInt)
    .option('--top-p <P>', 'top-p sampling (default 0.95)', probability)
    .option('--seed <S>', 'sampler seed (default 0)', uint32)
    .option('--csv <file>', 'write one row of per-token metrics per token to this CSV file')
    .option('--json', 'print one JSON event per line instead of plain text')
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
    .option('--force-cache', "accept a cache budget below one token's routed working set")
    .action(async function (this: Command, model: string, flags: RunFlags) {
      const load = loadOptions(this, flags);
      // Loaded on use: `bmoe --help` and usage errors stay fast and need no built dependencies.
      const { runGeneration } = await import('../generate.js');
      ctx.exitCode = await runGeneration({
        model,
        prompt: flags.prompt,
        chat: Boolean(flags.chat || flags.chatml || !flags.think),
        load,
        generate: {
          maxTokens: flags.nPredict,
          temperature: flags.temp,
          topK: flags.topK,
          topP: flags.topP,
          seed: flags.seed,
          chatml: Boolean(flags.chatml),
          think: flags.think,
        },
        csv: flags.csv,
        json: Boolean(flags.json),
      });
    });
}

function loadOptions(cmd: Command, flags: RunFlags): LoadOptions {
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
