// `bmoe chat MODEL`: an interactive chat in the terminal, with the model, streaming and generation
// flags of `bmoe run` (`-n` caps each reply); the GGUF's own chat template unless --chatml. A
// vision model (its projector loaded: --mmproj) takes pictures: `/image PATH`, or a dropped file.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import { addContextOptions, addGenerateOptions, addStreamingOptions, cliOption, modelCommand, prepareGeneration, SAMPLING_KEYS, tableOption, type ModelFlags } from '../model-options.js';

interface ChatFlags extends ModelFlags {
  system?: string;
  session?: string;
}

/** The `bmoe chat` command: its flags in help order, the engine's from the option table. */
export function chatCommand(program: Command): Command {
  const chat = modelCommand(program, 'chat', 'chat with a GGUF model in the terminal: replies streamed, thinking dimmed, Ctrl-C stops a reply, Ctrl-D leaves; /image PATH (or a file dropped on the terminal) shows a vision model a picture')
    .addOption(tableOption('maxTokens', { help: 'tokens to generate at most in each reply' }));
  addContextOptions(chat);
  addGenerateOptions(chat, ['chatml'])
    .addOption(tableOption('think', { help: "turn the template's reasoning off (Qwen3 thinking; gpt-oss answers on its final channel) and hide any thinking" }))
    .addOption(cliOption('--system <text>', 'a system message put before the conversation (resuming a --session: the saved one unless given)', 'none'))
    .addOption(
      cliOption(
        '--session <file>',
        'resume the conversation saved in this file when it exists (its KV cache too: what it holds is not evaluated again), and save it there on leaving (Ctrl-D, /exit)',
        'none',
      ),
    );
  addGenerateOptions(chat, SAMPLING_KEYS);
  return addStreamingOptions(chat);
}

export function registerChat(program: Command, ctx: CliContext): void {
  chatCommand(program).action(async function (this: Command, model: string, flags: ChatFlags) {
    // The settings rule: streaming or resident, cache, lanes, threads (the flags given win).
    const { path, load, generate } = await prepareGeneration(this, model, flags);
    // Loaded on use: `bmoe --help` and usage errors stay fast and need no built dependencies.
    const { runChat } = await import('../chat/repl.js');
    ctx.exitCode = await runChat({ model: path, load, generate, system: flags.system, session: flags.session });
  });
}
