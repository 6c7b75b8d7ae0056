// How much of a prompt a session's cached tokens save. Pure; the native generator
// (runtime/generator_cache.cpp, keep_cached_prefix) applies the same rule.

/** Tokens `a` and `b` share from their start. */
export function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/**
 * Every generation evaluates at least the prompt's last two tokens again (a prompt step is
 * batch-invariant only for two rows or more; one token would take the decode kernels).
 */
export const MIN_EVALUATED_TOKENS = 2;

/**
 * The tokens of `prompt` a generation reuses from `cached` (a session's `cachedTokens`): their
 * common prefix, but for the last {@link MIN_EVALUATED_TOKENS}. An upper bound: a cached part
 * evaluated by decode steps, not a prompt step, is not kept (it would not give a cold run's numbers).
 */
export function reusedPrefix(cached: ArrayLike<number>, prompt: ArrayLike<number>): number {
  return Math.min(commonPrefix(cached, prompt), Math.max(prompt.length - MIN_EVALUATED_TOKENS, 0));
}
