// Which slot a request goes to, and whether a conversation saved on disk should be restored
// first: llama-server's rule (the longest common prefix of the prompt with what a slot holds,
// when it keeps enough of it; else an empty or the least recently used slot). Pure.

import { commonPrefix } from '@bmoe/engine';

export interface SlotView {
  busy: boolean;
  /** When it last served (a clock that only grows). */
  lastUsed: number;
  /** The tokens whose KV entries it holds. */
  cached: readonly number[];
}

export interface SlotChoice {
  index: number;
  /** Prompt tokens it holds already (evaluated again: at most one less than the prompt). */
  reuse: number;
}

/**
 * The idle slot for `prompt`. A slot whose conversation the prompt mostly keeps (a shared prefix
 * of at least half what it holds: the next turn, or the same long system prompt) is taken, the
 * longest prefix first. Otherwise a slot must give up its conversation: an empty one, else the
 * least recently used (the prefix it shares still counts). null when every slot is busy.
 */
export function pickSlot(slots: readonly SlotView[], prompt: readonly number[]): SlotChoice | null {
  let keep: SlotChoice | null = null;
  let evict: SlotChoice | null = null;
  let evictRank = Infinity;
  slots.forEach((s, index) => {
    if (s.busy) return;
    const reuse = commonPrefix(s.cached, prompt);
    if (s.cached.length > 0 && reuse * 2 >= s.cached.length) {
      if (keep === null || reuse > keep.reuse) keep = { index, reuse };
      return;
    }
    const rank = s.cached.length === 0 ? -1 : s.lastUsed;
    if (rank < evictRank) {
      evict = { index, reuse };
      evictRank = rank;
    }
  });
  return keep ?? evict;
}

/** A restore pays off when the file holds this many more of the prompt's tokens than the slot. */
export const RESTORE_MIN_GAIN = 16;
/** A slot's conversation is saved before it is overwritten when it holds at least this many tokens. */
export const SAVE_MIN_TOKENS = 32;

/**
 * Whether the slot's conversation should be written to disk before `prompt` overwrites it: it
 * is long enough to be worth a file and the prompt does not continue it (a prompt that keeps all
 * of it only appends).
 */
export function worthSaving(cached: readonly number[], reuse: number): boolean {
  return cached.length >= SAVE_MIN_TOKENS && reuse < cached.length - 1;
}

/** The saved conversation (by its index in `saved`) to restore for `prompt`, or null. */
export function pickSaved(saved: readonly (readonly number[])[], prompt: readonly number[], slotReuse: number): number | null {
  let best = -1;
  let bestReuse = slotReuse + RESTORE_MIN_GAIN - 1;
  saved.forEach((tokens, i) => {
    const reuse = commonPrefix(tokens, prompt);
    if (reuse > bestReuse) {
      best = i;
      bestReuse = reuse;
    }
  });
  return best < 0 ? null : best;
}
