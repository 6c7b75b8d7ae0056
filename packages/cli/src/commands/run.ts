// `bmoe run MODEL -p PROMPT -n N ...`: flags a llama.cpp user knows (-p, -n, -t, -c, --temp,
// --top-k, --top-p, --seed) plus the spec's streaming flags, mapped onto @bmoe/engine options.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { addContextOptions, addStreamingOptions, loadOptions, type ModelFlags } from '../model-options.js';
import { nonNegativeInt, nonNegativeNumber, positiveInt, probability, uint32 } from '../parse.js';

interface RunFlags extends ModelFlags {
  prompt: string;
  nPredict?: number;
  chat?: boolean;
  chatml?: boolean;
  think: boolean;
  temp?: number;
  topK?: number;
  topP?: number;
  seed?: number;
  csv?: string;
  json?: boolean;
}

export function registerRun(program: Command, ctx: CliContext): void {
  const run = program
    .command('run')
    .description('generate text from a GGUF model (raw prompt by default, like llama-completion -no-cnv)')
    .argument('<model>', 'GGUF model file')
    .requiredOption('-p, --prompt <text>', 'prompt text')
    .option('-n, --n-predict <N>', 'tokens to generate (default 256)', positiveInt);
  addContextOptions(run)
    .option('--chat', "format the prompt as one user message with the GGUF's chat template")
    .option('--chatml', 'format the prompt as one user message with ChatML')
    .option('--no-think', 'ask the template to suppress reasoning (implies --chat)')
    .option('--temp <T>', 'temperature; 0 = greedy (default 0)', nonNegativeNumber)
    .option('--top-k <K>', 'top-k sampling; 0 = off (default 40)', nonNegativeInt)
    .option('--top-p <P>', 'top-p sampling (default 0.95)', probability)
    .option('--seed <S>', 'sampler seed (default 0)', uint32)
    .option('--csv <file>', 'write one row of per-token metrics per token to this CSV file')
    .option('--json', 'print one JSON event per line instead of plain text');
  addStreamingOptions(run)
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
