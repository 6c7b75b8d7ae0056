// llama.cpp's own tools run with llama.cpp's own waiting: core-native's loader sets
// OMP_WAIT_POLICY=passive for bmoe when nobody set it (and says so in BMOE_OMP_WAIT_DEFAULTED), and
// a child started after the bench loaded the addon would inherit it — measuring llama-completion or
// llama-server with bmoe's old default instead of theirs. A policy the user set is kept.

/** `env` arguments removing the loader's OMP_WAIT_POLICY for a llama.cpp tool (none when the user set it). */
export function llamaToolEnv(env: NodeJS.ProcessEnv = process.env): string[] {
  return env.BMOE_OMP_WAIT_DEFAULTED === '1' ? ['-u', 'OMP_WAIT_POLICY', '-u', 'BMOE_OMP_WAIT_DEFAULTED'] : [];
}
