// The session files of `bmoe chat --session FILE` and `bmoe run --prompt-cache FILE`: the engine's
// `session.save()` / `session.load()` write and read them (KV cache, tokens, conversation); this
// holds what the CLI adds around them: whether a file is there to resume from, a check, before
// anything runs, that a new file can be written where it is asked for, and the one line a save
// prints.
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { formatMiB } from '../format.js';

/**
 * Whether `path` names something to resume from: false only when nothing is there (ENOENT); a
 * file that is there but unusable (a directory, unreadable, damaged) is left to session.load(),
 * whose error names it.
 */
export async function stateExists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    return true;
  }
}

/**
 * Throws a one-line error naming `path` when a new file cannot be created there (its directory is
 * missing or not writable): said before the model loads, not after a conversation or a run.
 */
export async function checkWritable(path: string, what: string): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    if (!(await stat(dir)).isDirectory()) throw new Error(`${dir} is not a directory`);
    await access(dir, constants.W_OK);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? `no directory ${dir}` : (err as Error).message;
    throw new Error(`${path}: cannot write the ${what} there (${why})`);
  }
}

/** `saved FILE (N tokens, X MiB)`. */
export function savedLine(path: string, saved: { bytes: number; tokens: number }): string {
  return `saved ${path} (${saved.tokens} token${saved.tokens === 1 ? '' : 's'}, ${formatMiB(saved.bytes)})`;
}
