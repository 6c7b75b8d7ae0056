// One error class for every malformed-file finding, so callers can tell "this file is bad" apart
// from I/O or programming errors, and so the message a user sees is always one line that names
// the file, the problem and where in the file it is.

export class GgufError extends Error {
  /** The file path as the caller gave it. */
  readonly path: string;
  /**
   * Byte offset in the file where the problem was found (or the byte that is missing); undefined
   * when the problem has no place, e.g. a key the file lacks.
   */
  readonly offset: number | undefined;

  constructor(path: string, offset: number | undefined, problem: string) {
    // Keep it one line: problems may embed names read from the file.
    const oneLine = problem.replace(/[\r\n]+/g, ' ');
    super(offset === undefined ? `${path}: ${oneLine}` : `${path}: ${oneLine} (at byte ${offset})`);
    this.name = 'GgufError';
    this.path = path;
    this.offset = offset;
  }
}
