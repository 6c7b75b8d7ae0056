// @bmoe/cli: `main(argv)` runs the bmoe command line and resolves to its exit code.
// Exit codes: 0 ok, 1 failure (one line `bmoe: error: ...`), 2 usage error, 130 interrupted.
import { CommanderError } from 'commander';
import { flagMessage } from './option-names.js';
import type { CliContext } from './context.js';
import { buildProgram } from './program.js';

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** Runs the CLI on `argv` (the user's arguments, without `node` and the script path). */
export async function main(argv: readonly string[]): Promise<number> {
  const ctx: CliContext = { exitCode: EXIT_OK };
  const program = buildProgram(ctx);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ctx.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander already printed its one-line message (or the help / version text).
      // Bare `bmoe` shows the help as commander's 'commander.help': a usage error, like a missing argument.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT_OK;
      if (err.code === 'commander.help' && argv[0] === 'help') return EXIT_OK;
      return EXIT_USAGE;
    }
    reportError(err);
    return EXIT_FAILURE;
  }
}

/** One line on stderr; the stack only with BMOE_DEBUG=1. */
export function reportError(err: unknown): void {
  // Option errors from the engine: speak in flags.
  const message = flagMessage(err) ?? (err instanceof Error ? err.message : String(err));
  process.stderr.write(`bmoe: error: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  if (process.env.BMOE_DEBUG === '1' && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
}

export { findLlamaTool, runLlamaCompletion, stripCompletionOutput, type LlamaCompletionOptions } from './llama-tools.js';
