// State a command hands back to main() (commander ignores action return values), and the exit
// codes main() resolves to.
import type { Command } from 'commander';

export interface CliContext {
  /** The exit code main() resolves to when the command did not throw. */
  exitCode: number;
}

export const EXIT_OK = 0;
/** A failure: one line `bmoe: error: ...` on stderr (reportError). */
export const EXIT_FAILURE = 1;
/** A usage error: a bad or missing flag or argument. */
export const EXIT_USAGE = 2;
/** Exit code after Ctrl-C, as shells report a SIGINT death (128 + 2). */
export const EXIT_INTERRUPTED = 130;

/** A usage error on `cmd`: commander prints `error: <message>` (and a help hint), main() exits EXIT_USAGE. */
export function usageError(cmd: Command, message: string): never {
  return cmd.error(`error: ${message}`, { exitCode: EXIT_USAGE, code: 'bmoe.usage' });
}
