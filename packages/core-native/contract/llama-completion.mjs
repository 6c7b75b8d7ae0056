// THE reference invocation of llama.cpp's own `llama-completion` (built beside the addon from the
// same pinned source): the run bmoe's output is compared with, token for token. Raw prompt
// (-no-cnv, as `bmoe run` without --chat), greedy, no warm-up; `repack` says weight repacking as
// bmoe says it. Used by the bench's peer rows and the CLI's identity reference (through
// @bmoe/engine), the qemu identity script and gguf's llama.cpp test. Plain ESM (with
// llama-completion.d.mts) so scripts and tests import it without a build.

/**
 * The arguments of one run (the executable not included).
 * @param {import('./llama-completion.d.mts').LlamaCompletionRun} o
 * @returns {string[]}
 */
export function llamaCompletionArgs(o) {
  return [
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
