// The reference run of llama.cpp's own `llama-completion` (built beside the addon from the same
// pinned source): its argv written once, for the bench's peer rows (matrix, targets) and the CLI's
// identity reference (@bmoe/cli's runLlamaCompletion). Raw prompt (-no-cnv, as `bmoe run`
// without --chat), greedy, no warm-up, weight repacking said as bmoe says it.
import { llamaToolPath } from '@bmoe/engine';

export interface LlamaCompletionRun {
  model: string;
  prompt: string;
  /** Tokens to generate (-n). */
  nPredict: number;
  /** Compute threads (-t). */
  threads: number;
  /**
   * false: `-nr`, no weight repacking (bmoe's default: the identity reference); true: llama.cpp's
   * own default, repacked (as `bmoe run --repack`). Absent: neither is said, `extraArgs` say it (a
   * matrix config's flags).
   */
  repack?: boolean;
  /** Only the generated text on stdout (--no-display-prompt --simple-io): to compare text, not to time it. */
  textOnly?: boolean;
  /** Appended last (a config's flags, a sampler, --override-kv): where one repeats a flag, llama.cpp takes the last. */
  extraArgs?: readonly string[];
  /** The executable. Default: the one built from the pinned source (llamaCompletionTool). */
  binary?: string;
}

/** The llama-completion built from the pinned source; throws one line when it is not built. */
export function llamaCompletionTool(): string {
  const tool = llamaToolPath('llama-completion');
  if (!tool) throw new Error("llama.cpp's llama-completion is not built (packages/core-native/build/bin): run the setup first");
  return tool;
}

/** The argv of one run: the tool, `-m -p -n -no-cnv --temp 0 -t [-nr] --no-warmup`, the text-only flags, `extraArgs`. */
export function llamaCompletionArgv(o: LlamaCompletionRun): [tool: string, ...args: string[]] {
  return [
    o.binary ?? llamaCompletionTool(),
    '-m', o.model,
    '-p', o.prompt,
    '-n', String(o.nPredict),
    '-no-cnv', '--temp', '0',
    '-t', String(o.threads),
    ...(o.repack === false ? ['-nr'] : []),
    '--no-warmup',
    ...(o.textOnly ? ['--no-display-prompt', '--simple-io'] : []),
    ...(o.extraArgs ?? []),
  ];
}
