// llama.cpp's own tools run with llama.cpp's own settings, not the ones bmoe's build gives them:
// - waiting: core-native's loader sets OMP_WAIT_POLICY=passive for bmoe when nobody set it (and
//   says so in BMOE_OMP_WAIT_DEFAULTED), and a child started after the bench loaded the addon would
//   inherit it — measuring llama-completion or llama-server with bmoe's old default instead of
//   theirs. A policy the user set is kept.
// - kernels: the tools are built from the patched tree, whose patch 0008 computes every batch of
//   several tokens with batch-invariant kernels unless LLAMA_BATCH_INVARIANT=0, and whose patch
//   0009 computes a q6_K matrix against several tokens with a multi-column dot product unless
//   GGML_CPU_MULTI_COLUMN_DOT=0. Upstream's tools choose their kernels by batch size and take q6_K
//   one column at a time, so they run with both set to 0 — unless the user set them.

/** The settings that give a tool built from the patched tree upstream's kernels. */
export const UPSTREAM_KERNELS = { LLAMA_BATCH_INVARIANT: '0', GGML_CPU_MULTI_COLUMN_DOT: '0' } as const;

/** `env` arguments giving a llama.cpp tool upstream's waiting and kernels (the user's own settings kept). */
export function llamaToolEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return [
    ...(env.BMOE_OMP_WAIT_DEFAULTED === '1' ? ['-u', 'OMP_WAIT_POLICY', '-u', 'BMOE_OMP_WAIT_DEFAULTED'] : []),
    ...Object.entries(UPSTREAM_KERNELS).flatMap(([k, v]) => (env[k] === undefined ? [`${k}=${v}`] : [])),
  ];
}
