/** One reference run of llama-completion. */
export interface LlamaCompletionRun {
  model: string;
  prompt: string;
  /** Tokens to generate (-n). */
  nPredict: number;
  /** Compute threads (-t). */
  threads: number;
  /**
   * false: `-nr`, no weight repacking (bmoe's default: the identity reference); true: llama.cpp's
   * own default, repacked (as `bmoe run --repack`). Absent: neither is said, `extraArgs` say it.
   */
  repack?: boolean;
  /** Only the generated text on stdout (--no-display-prompt --simple-io): to compare text, not to time it. */
  textOnly?: boolean;
  /** Appended last (a config's flags, a sampler, --override-kv): where one repeats a flag, llama.cpp takes the last. */
  extraArgs?: readonly string[];
}

/** `-m -p -n -no-cnv --temp 0 -t [-nr] --no-warmup`, the text-only flags, `extraArgs`. */
export function llamaCompletionArgs(o: LlamaCompletionRun): string[];
