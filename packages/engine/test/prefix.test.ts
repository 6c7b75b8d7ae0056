// What a session's cached tokens save of a prompt (pure): the rule the native generator applies.
import { describe, expect, it } from 'vitest';
import { commonPrefix, MIN_EVALUATED_TOKENS, reusedPrefix } from '../src/prefix.js';

describe('cached prefix', () => {
  it('common prefix', () => {
    expect(commonPrefix([1, 2, 3], [1, 2, 4])).toBe(2);
    expect(commonPrefix([], [1])).toBe(0);
    expect(commonPrefix(Int32Array.from([5, 6]), [5, 6, 7])).toBe(2);
  });

  it('a prompt sent again reuses all but its last two tokens', () => {
    expect(MIN_EVALUATED_TOKENS).toBe(2);
    expect(reusedPrefix([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])).toBe(3);
    expect(reusedPrefix([1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6, 7])).toBe(5);
    expect(reusedPrefix([1, 2, 3], [1, 2, 9, 9, 9, 9])).toBe(2);
  });

  it('a prompt of one or two tokens reuses nothing', () => {
    expect(reusedPrefix([1, 2], [1, 2])).toBe(0);
    expect(reusedPrefix([1], [1])).toBe(0);
    expect(reusedPrefix([], [])).toBe(0);
  });
});
