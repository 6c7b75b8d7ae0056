// How the CLI reports a failure: one line on stderr, in flags when it is about an engine option.
// Used by main() and by the chat, which reports a failed reply and goes on.
import { flagMessage } from './option-names.js';

/** One line on stderr; the stack only with BMOE_DEBUG=1. */
export function reportError(err: unknown): void {
  // Option errors from the engine: speak in flags.
  const message = flagMessage(err) ?? (err instanceof Error ? err.message : String(err));
  process.stderr.write(`bmoe: error: ${message.replace(/\s*\n\s*/g, ' ').trim()}\n`);
  if (process.env.BMOE_DEBUG === '1' && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
}
