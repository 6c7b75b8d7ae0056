// The reference run of llama.cpp's own `llama-completion` (built beside the addon from the same
// pinned source) with its executable, for the bench's peer rows (matrix, targets) and the CLI's
// identity reference (@bmoe/cli's runLlamaCompletion). The arguments are core-native's contract
// (llamaCompletionArgs, through @bmoe/engine), shared with the qemu identity script and gguf's test.
import { llamaCompletionArgs, llamaToolPath, type LlamaCompletionRun as ReferenceRun } from '@bmoe/engine';

export interface LlamaCompletionRun extends ReferenceRun {
  /** The executable. Default: the one built from the pinned source (llamaCompletionTool). */
  binary?: string;
}

/** The llama-completion built from the pinned source; throws one line when it is not built. */
export function llamaCompletionTool(): string {
  const tool = llamaToolPath('llama-completion');
  if (!tool) throw new Error("llama.cpp's llama-completion is not built (packages/core-native/build/bin): run the setup first");
  return tool;
}

/** The argv of one run: the tool, then the reference arguments (core-native's contract/llama-completion.mjs). */
export function llamaCompletionArgv(o: LlamaCompletionRun): [tool: string, ...args: string[]] {
  return [o.binary ?? llamaCompletionTool(), ...llamaCompletionArgs(o)];
}
