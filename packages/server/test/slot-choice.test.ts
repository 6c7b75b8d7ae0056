// The slot rule (pure): where a prompt goes, what is saved before a slot is reused, what is restored.
import { describe, expect, it } from 'vitest';
import { pickSaved, pickSlot, RESTORE_MIN_GAIN, SAVE_MIN_TOKENS, worthSaving } from '../src/slot-choice.js';

const range = (a: number, b: number): number[] => Array.from({ length: b - a }, (_, i) => a + i);
const slot = (cached: number[], lastUsed = 0, busy = false) => ({ cached, lastUsed, busy });

describe('slot choice', () => {
  it('the next turn of a conversation goes to the slot that holds it, whatever its age', () => {
    const a = range(0, 100);
    const b = [...range(0, 10), ...range(500, 590)]; // same first 10 tokens (a shared template start)
    const next = [...b, ...range(900, 920)];
    expect(pickSlot([slot(a, 5), slot(b, 1)], next)).toEqual({ index: 1, reuse: 100 });
  });

  it('a new conversation takes an empty slot before it overwrites one, then the least recently used', () => {
    const a = range(0, 100);
    const fresh = [...range(0, 4), ...range(700, 760)]; // shares only the template's first tokens
    expect(pickSlot([slot(a, 1), slot([], 9)], fresh)).toEqual({ index: 1, reuse: 0 });
    expect(pickSlot([slot(a, 7), slot(range(0, 50), 3)], fresh)).toEqual({ index: 1, reuse: 4 });
  });

  it('a long shared system prompt counts as keeping the slot: the longest prefix wins', () => {
    const system = range(0, 80);
    const convA = [...system, ...range(200, 220)];
    const convB = [...system, ...range(300, 330)];
    expect(pickSlot([slot(convA, 1), slot([], 0)], convB)).toEqual({ index: 0, reuse: 80 });
  });

  it('busy slots are never chosen; all busy: null', () => {
    expect(pickSlot([slot(range(0, 10), 0, true), slot([], 5)], range(0, 10))).toEqual({ index: 1, reuse: 0 });
    expect(pickSlot([slot([], 0, true)], [1])).toBeNull();
  });

  it('saves a conversation only when it is long enough and the prompt gives up a real part of it', () => {
    const held = range(0, SAVE_MIN_TOKENS + 10);
    expect(worthSaving(held, 0)).toBe(true);
    expect(worthSaving(held, held.length - 1)).toBe(false); // the next turn: nothing lost
    expect(worthSaving(range(0, SAVE_MIN_TOKENS - 1), 0)).toBe(false);
  });

  it('restores the saved conversation holding most of the prompt, when it beats the slot by enough', () => {
    const saved = [range(0, 50), [...range(0, 5), ...range(100, 200)]];
    const prompt = [...range(0, 5), ...range(100, 200), 7, 8];
    expect(pickSaved(saved, prompt, 0)).toBe(1);
    expect(pickSaved(saved, prompt, 105 - RESTORE_MIN_GAIN + 1)).toBeNull();
    expect(pickSaved([], prompt, 0)).toBeNull();
  });
});
