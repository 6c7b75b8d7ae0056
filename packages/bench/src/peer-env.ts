// llama.cpp's own tools run with llama.cpp's own settings, not the ones bmoe's build gives them:
// - waiting: core-native's loader sets OMP_WAIT_POLICY=passive for bmoe when nobody set it (and
//   says so in BMOE_OMP_WAIT_DEFAULTED), and a child started after the bench loaded the addon would
//   inherit it — measuring llama-completion or llama-server with bmoe's old default instead of
//   theirs. A policy the user set is kept.
// - kernels: the tools are built from the patched tree, whose patch 0008 computes every batch of
//   several tokens with batch-invariant kernels unless LLAMA_BATCH_INVARIANT=0. Upstream's tools
//   choose their kernels by batch size (llama-server's batched decodes and every prompt), so they
//   run with LLAMA_BATCH_INVARIANT=0 — unless the user set it.

/** `env` arguments giving a llama.cpp tool upstream's waiting and kernels (the user's own settings kept). */
export function llamaToolEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    ...(env.BMOE_OMP_WAIT_DEFAULTED === '1' ? ['-u', 'OMP_WAIT_POLICY', '-u', 'BMOE_OMP_WAIT_DEFAULTED'] : []),
    ...(env.LLAMA_BATCH_INVARIANT === undefined ? ['LLAMA_BATCH_INVARIANT=0'] : []),
  ];
}
