// One error type for everything the engine rejects, so callers (the CLI, the server) can print a
// single readable line and map `code` to an exit status or an HTTP status without parsing text.

/** What went wrong, coarsely. Stable strings: callers switch on them. */
export type BmoeErrorCode =
  /** An option failed validation (value, range or combination). */
  | 'E_OPTION'
  /** The model file is missing, unreadable, not GGUF, truncated, or llama.cpp refused it. */
  | 'E_MODEL'
  /** The native addon could not be loaded on this machine. */
  | 'E_NATIVE'
  /** The model file changed on disk (truncated, rewritten) while loaded: load it again. */
  | 'E_MODEL_CHANGED'
  /** Generation failed inside llama.cpp. */
  | 'E_GENERATE'
  /** The operation was aborted (AbortSignal). */
  | 'E_ABORT'
  /** A session already has a generation running. */
  | 'E_BUSY'
  /** The model or session was closed. */
  | 'E_CLOSED'
  /** A metrics CSV or end-of-run log did not match the schema. */
  | 'E_FORMAT'
  /**
   * The prompt does not fit the context (it needs fewer tokens than `contextSize`): shorten it,
   * raise contextSize (--ctx-size), or let chat() drop old turns (`contextShift: true`).
   */
  | 'E_CONTEXT_FULL'
  /** This build cannot do what was asked (JSON schemas and tools on the wasm32 build). */
  | 'E_UNSUPPORTED'
  /**
   * A saved session state (`session.save`, `createSession({ state })`) cannot be used: another
   * model or context size, a damaged or cut file, a file that is not one; or it could not be written.
   */
  | 'E_STATE';

export class BmoeError extends Error {
  override readonly name = 'BmoeError';
  readonly code: BmoeErrorCode;

  constructor(code: BmoeErrorCode, message: string, options?: { cause?: unknown }) {
    // Messages are shown to users as one line: fold any newline a lower layer let through.
    super(oneLine(message), options);
    this.code = code;
  }
}

/** Collapses whitespace runs (newlines included) so a message always prints as one line. */
export function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/** The message of anything thrown, as one line. */
export function messageOf(err: unknown): string {
  return oneLine(err instanceof Error ? err.message : String(err));
}
