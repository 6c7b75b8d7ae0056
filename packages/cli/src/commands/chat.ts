// `bmoe chat MODEL`: an interactive chat in the terminal, with the model, streaming and generation
// flags of `bmoe run` (`-n` caps each reply); the GGUF's own chat template unless --chatml.
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import {
  addContextOptions,
  addGenerateOptions,
  addStreamingOptions,
  cliOption,
  generateOptions,
  modelAndSettings,
  PENALTY_KEYS,
  tableOption,
  type ModelFlags,
} from '../model-options.js';

interface ChatFlags extends ModelFlags {
  system?: string;
}

/** The `bmoe chat` command: its flags in help order, the engine's from the option table. */
export function chatCommand(program: Command): Command {
  const chat = program
    .command('chat')
    .description('chat with a GGUF model in the terminal: replies streamed, thinking dimmed, Ctrl-C stops a reply, Ctrl-D leaves')
    .argument('<model>', 'GGUF model file, or hf:owner/repo[:QUANT] / an https URL (pulled first)')
    .addOption(tableOption('maxTokens', { help: 'tokens to generate at most in each reply' }));
  addContextOptions(chat);
  addGenerateOptions(chat, ['chatml'])
    .addOption(tableOption('think', { help: "turn the template's reasoning off (Qwen3 thinking; gpt-oss answers on its final channel) and hide any thinking" }))
    .addOption(cliOption('--system <text>', 'a system message put before the conversation', 'none'));
  addGenerateOptions(chat, ['temperature', 'topK', 'topP', 'seed', ...PENALTY_KEYS, 'contextShift']);
  return addStreamingOptions(chat);
}

export function registerChat(program: Command, ctx: CliContext): void {
  chatCommand(program).action(async function (this: Command, model: string, flags: ChatFlags) {
    // The settings rule: streaming or resident, cache, lanes, threads (the flags given win).
    const { path, settings } = await modelAndSettings(this, model, flags);
    // Loaded on use: `bmoe --help` and usage errors stay fast and need no built dependencies.
    const { runChat } = await import('../chat/repl.js');
    ctx.exitCode = await runChat({ model: path, load: settings.load, generate: generateOptions(this, flags), system: flags.system });
  });
}
