// The server's slots: `parallel` sessions sharing one native context (generations on them are
// decoded together, one batch per step), each keeping its conversation's KV cache between
// requests. A request goes to the idle slot whose cache shares the longest prefix with its prompt
// (slot-choice.ts); with a KV store, the conversation a slot loses is written to disk first and
// one that comes back from disk is restored into the slot.
import type { ChatMessage, GenerateOptions, Session } from '@bmoe/engine';
import type { KvStore } from './kv-store.js';
import { pickSaved, pickSlot, worthSaving } from './slot-choice.js';

interface Slot {
  session: Session;
  busy: boolean;
  lastUsed: number;
}

export interface TakenSlot {
  session: Session;
  /** The slot's index (0-based), as `/bmoe/status` lists them. */
  index: number;
  /** A conversation saved on disk was loaded into it for this request. */
  restored: boolean;
  release(): void;
}

export class SlotPool {
  private readonly slots: Slot[];
  private clock = 0;

  constructor(
    sessions: readonly Session[],
    readonly store: KvStore | null,
  ) {
    this.slots = sessions.map((session) => ({ session, busy: false, lastUsed: 0 }));
  }

  get size(): number {
    return this.slots.length;
  }

  get busyCount(): number {
    return this.slots.filter((s) => s.busy).length;
  }

  /** Throws what generate(input, options) would throw before it starts (any slot: they share the model). */
  check(input: string | readonly ChatMessage[], options: GenerateOptions): void {
    this.slots[0]!.session.check(input, options);
  }

  /**
   * The slot for a prompt (call it holding a turn: an idle slot exists). Marked busy at once; with
   * a KV store its old conversation may be saved and a saved one restored before it is returned.
   */
  async take(prompt: readonly number[]): Promise<TakenSlot> {
    const views = this.slots.map((s) => ({ busy: s.busy, lastUsed: s.lastUsed, cached: s.busy ? [] : s.session.cachedTokens }));
    const choice = pickSlot(views, prompt);
    if (!choice) throw new Error('no idle slot (a turn was granted beyond the slots)');
    const slot = this.slots[choice.index]!;
    slot.busy = true;
    slot.lastUsed = ++this.clock;
    let restored = false;
    try {
      if (this.store) restored = await this.swap(slot, views[choice.index]!.cached, choice.reuse, prompt);
    } catch (err) {
      slot.busy = false;
      throw err;
    }
    let released = false;
    return {
      session: slot.session,
      index: choice.index,
      restored,
      release: () => {
        if (released) return;
        released = true;
        slot.busy = false;
        slot.lastUsed = ++this.clock;
      },
    };
  }

  /** Saves what the slot would lose, restores a saved conversation that holds more of the prompt. */
  private async swap(slot: Slot, cached: readonly number[], reuse: number, prompt: readonly number[]): Promise<boolean> {
    const store = this.store!;
    const saved = pickSaved(store.tokenLists(), prompt, reuse);
    if (worthSaving(cached, saved === null ? reuse : 0)) await store.save(slot.session, cached, this.clock);
    if (saved === null) return false;
    // The index may have moved while saving (an eviction): pick again.
    const again = pickSaved(store.tokenLists(), prompt, reuse);
    return again === null ? false : store.restore(slot.session, again, this.clock);
  }

  /** Closes every slot's session (the shared context goes with the last). */
  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.session.close()));
  }
}
