// @bmoe/cli: `main(argv)` runs the bmoe command line and resolves to its exit code.
// Exit codes: 0 ok, 1 failure (one line `bmoe: error: ...`), 2 usage error, 130 interrupted.
import { CommanderError } from 'commander';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type CliContext } from './context.js';
import { buildProgram } from './program.js';
import { reportError } from './report-error.js';

export { EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE } from './context.js';
export { reportError } from './report-error.js';

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

export { findLlamaTool, runLlamaCompletion, runLlamaMtmd, stripCompletionOutput, type LlamaCompletionOptions, type LlamaMtmdOptions } from './llama-tools.js';
