// State a command hands back to main(): commander ignores action return values.
export interface CliContext {
  /** The exit code main() resolves to when the command did not throw. */
  exitCode: number;
}

/** Exit code after Ctrl-C, as shells report a SIGINT death (128 + 2). */
export const EXIT_INTERRUPTED = 130;
