// `bmoe run MODEL -p PROMPT -n N ...`: flags a llama.cpp user knows (-p, -n, -t, -c, --temp,
// --top-k, --top-p, --seed, --min-p, the penalties, --context-shift) plus the spec's streaming flags, mapped onto @bmoe/engine options.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { addConstraintOptions, constraintOptions, type ConstraintFlags } from '../constraint-flags.js';
import { addContextOptions, addGenerateOptions, addStreamingOptions, cliOption, modelCommand, prepareGeneration, SAMPLING_KEYS, tableOption, type ModelFlags } from '../model-options.js';

interface RunFlags extends ModelFlags, ConstraintFlags {
  prompt: string;
  chat?: boolean;
  chatml?: boolean;
  think: boolean;
  csv?: string;
  json?: boolean;
  promptCache?: string;
}

/** The `bmoe run` command: its flags in help (and README) order, the engine's from the option table. */
export function runCommand(program: Command): Command {
  const run = modelCommand(program, 'run', 'generate text from a GGUF model (raw prompt by default, like llama-completion -no-cnv)')
    .addOption(cliOption('-p, --prompt <text>', 'prompt text', 'required').makeOptionMandatory())
    .addOption(tableOption('maxTokens'));
  addContextOptions(run).addOption(cliOption('--chat', "format the prompt as one user message with the GGUF's chat template", 'raw prompt'));
  addGenerateOptions(run, ['chatml', 'think', ...SAMPLING_KEYS]);
  addConstraintOptions(run)
    .addOption(
      cliOption(
        '--prompt-cache <file>',
        "as llama-completion --prompt-cache: load the KV state saved in this file when it exists (the prompt's prefix it holds is not evaluated again) and save the prompt's and the generated tokens' state to it after the run; a file of another model or context size is an error naming it (llama-completion warns and ignores it)",
        'none',
      ),
    )
    .addOption(cliOption('--csv <file>', 'write one row of per-token metrics per token to this CSV file'))
    .addOption(cliOption('--json', 'print one JSON event per line instead of plain text'));
  return addStreamingOptions(run);
}

export function registerRun(program: Command, ctx: CliContext): void {
  runCommand(program).action(async function (this: Command, model: string, flags: RunFlags) {
    // The settings rule: streaming or resident, cache, lanes, threads (the flags given win).
    const { path, load, generate } = await prepareGeneration(this, model, flags);
    // Loaded on use: `bmoe --help` and usage errors stay fast and need no built dependencies.
    const { runGeneration } = await import('../run-loop.js');
    ctx.exitCode = await runGeneration({
      model: path,
      prompt: flags.prompt,
      // --chatml and --no-think imply --chat.
      chat: Boolean(flags.chat || flags.chatml || !flags.think),
      load,
      generate: { ...generate, ...constraintOptions(flags) },
      csv: flags.csv,
      json: Boolean(flags.json),
      promptCache: flags.promptCache,
    });
  });
}
