import { describe, expect, it } from 'vitest';
import { TokenLineTimes } from '../src/run-output.js';

describe('TokenLineTimes', () => {
  it('times each token line when its end arrives, and no other line', () => {
    const t = new TokenLineTimes();
    t.push('{"type":"token","tokenIndex":0,"text":"a"}\n{"type":"tok', 10);
    t.push('en","tokenIndex":1,"text":"b"}\nnot json\n', 20);
    t.push('{"type":"token","tokenIndex":2}\n{"type":"token","tokenIndex":3}\n', 30);
    t.push('{"type":"done","summary":{}}\n', 40);
    t.push('{"type":"token","tokenIndex":4}', 50); // no newline yet: not counted
    expect(t.times).toEqual([10, 20, 30, 30]);
    t.push('\n', 60);
    expect(t.times).toEqual([10, 20, 30, 30, 60]);
    expect(t.text).toBe('ab');
  });
});
