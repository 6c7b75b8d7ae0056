// Engine option errors name engine options ("stream.ioThreads must be ..."); on the command line
// the user typed flags, so name those instead. The error carries which options it is about (an
// OptionError's parts, keys of the option table): no parsing of message text.
import { describeOptionError, flagName } from '@bmoe/engine/options';

/** An engine option error in CLI words ("--io-threads must be ..."); null for any other error. */
export function flagMessage(err: unknown): string | null {
  return describeOptionError(err, flagName);
}
