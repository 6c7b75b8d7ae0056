// A file a flag names (--grammar-file, --json-schema-file, -f): its bytes, or a usage error
// naming it and why it could not be read.
import { readFileSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';

/** The file's bytes; with `stdin`, '-' reads standard input. Unreadable: "cannot read PATH (CODE)". */
export function readFileArgument(path: string, opts: { stdin?: boolean } = {}): Buffer {
  const fromStdin = opts.stdin === true && path === '-';
  try {
    return readFileSync(fromStdin ? 0 : path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new InvalidArgumentError(`cannot read ${fromStdin ? 'standard input' : path} (${code})`);
  }
}
