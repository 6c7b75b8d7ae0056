// Stop strings and the parsed answer's deltas, token by token (no addon: a toy chat format).
import { describe, expect, it } from 'vitest';
import { MessageStream, newToolCallId, type ChatParser } from '../src/message-stream.js';
import type { MessageDelta } from '../src/messages.js';
import { StopMatcher } from '../src/stop.js';
import { accumulate, asAccumulated } from './deltas.js';
import { toyParse } from './fake-chat.js';

const toy: ChatParser = { parse: toyParse };

/** Pushes the pieces (the last one as last) and returns the deltas and the final result. */
function run(stream: MessageStream, texts: string[], lastIsLast = true): { deltas: MessageDelta[]; stoppedAt: number; end: ReturnType<MessageStream['finish']> } {
  const deltas: MessageDelta[] = [];
  let stoppedAt = -1;
  texts.forEach((t, i) => {
    if (stoppedAt >= 0) return;
    const r = stream.push(t, lastIsLast && i === texts.length - 1);
    deltas.push(r.delta);
    if (r.stopped) stoppedAt = i;
  });
  return { deltas, stoppedAt, end: stream.finish('') };
}

describe('StopMatcher', () => {
  it('releases text, holds a possible stop string back, and cuts at the first one', () => {
    const m = new StopMatcher(['STOP', 'END']);
    expect(m.push('ab')).toEqual({ text: 'ab', stopped: false });
    expect(m.push('cST')).toEqual({ text: 'c', stopped: false });
    expect(m.push('x')).toEqual({ text: 'STx', stopped: false });
    expect(m.push('E')).toEqual({ text: '', stopped: false });
    expect(m.push('NDzz')).toEqual({ text: '', stopped: true });
    expect(new StopMatcher(['']).push('a')).toEqual({ text: 'a', stopped: false });
  });
});

describe('MessageStream, raw text', () => {
  it('sends the text as content, without the stop string or what follows it', () => {
    const { deltas, stoppedAt, end } = run(new MessageStream(['STOP'], null), ['Hello ', 'wor', 'ldST', 'OP and more', 'never'], false);
    expect(stoppedAt).toBe(3);
    expect(deltas).toEqual([{ content: 'Hello ' }, { content: 'wor' }, { content: 'ld' }, {}]);
    expect(end).toEqual({ text: 'Hello world', message: { role: 'assistant', content: 'Hello world', reasoningContent: null, toolCalls: [] } });
  });

  it('releases a held-back tail at the last token and at the end', () => {
    expect(run(new MessageStream(['STOP'], null), ['a', 'ST']).deltas).toEqual([{ content: 'a' }, { content: 'ST' }]);
    const s = new MessageStream(['STOP'], null);
    s.push('aS', false);
    expect(s.finish('\uFFFD').text).toBe('aS\uFFFD');
  });
});

describe('MessageStream, a chat format', () => {
  const texts = ['<think>', 'hm', 'm</thi', 'nk>', 'Hel', 'lo<ca', 'll>get', '_w|{"a"', ':1}</call>', '<call>f2|{}', '</call>'];

  it('sends reasoning, content and tool calls as they grow, adding up to the final message', () => {
    const { deltas, end } = run(new MessageStream([], toy), texts);
    const sum = accumulate(deltas);
    expect(end.text).toBe(texts.join(''));
    expect(end.message).toMatchObject({ content: 'Hello', reasoningContent: 'hmm' });
    expect(end.message.toolCalls.map((c) => c.function)).toEqual([{ name: 'get_w', arguments: '{"a":1}' }, { name: 'f2', arguments: '{}' }]);
    expect(sum).toEqual(asAccumulated(end.message));
    // A call is announced once, with its whole name, when its arguments begin.
    const headers = deltas.flatMap((d) => d.toolCalls ?? []).filter((c) => c.function.name !== undefined);
    expect(headers).toEqual([
      { index: 0, id: expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), type: 'function', function: { name: 'get_w', arguments: '{"a"' } },
      { index: 1, id: expect.stringMatching(/^call_[A-Za-z0-9]{24}$/), type: 'function', function: { name: 'f2', arguments: '{}' } },
    ]);
    expect(headers[0]!.id).not.toBe(headers[1]!.id);
    // Nothing of an unfinished tag is sent as text.
    expect(deltas[2]).toEqual({ reasoningContent: 'm' });
    expect(deltas[5]).toEqual({ content: 'lo' });
  });

  it('keeps the id the format gives', () => {
    const parser: ChatParser = { parse: (t, p) => ({ ...toyParse(t, p), toolCalls: toyParse(t, p).toolCalls.map((c) => ({ ...c, id: 'fmt-1' })) }) };
    const { deltas, end } = run(new MessageStream([], parser), ['<call>f|', '{}</call>']);
    expect(accumulate(deltas).calls[0]?.id).toBe('fmt-1');
    expect(end.message.toolCalls[0]?.id).toBe('fmt-1');
  });

  it('never takes back what was sent when a parse shrinks', () => {
    const reads = ['abc', 'ab', 'abX', 'abcd'];
    let i = 0;
    const parser: ChatParser = { parse: () => ({ content: reads[Math.min(i++, reads.length - 1)]!, reasoningContent: '', toolCalls: [] }) };
    const s = new MessageStream([], parser);
    expect([1, 2, 3, 4].map(() => s.push('.', false).delta)).toEqual([{ content: 'abc' }, {}, {}, { content: 'd' }]);
  });

  it('cuts at a stop string and reads the text before it as final', () => {
    const { deltas, stoppedAt, end } = run(new MessageStream(['<end>'], toy), ['Hi', ' there<e', 'nd>ignored'], false);
    expect(stoppedAt).toBe(2);
    expect(accumulate(deltas).content).toBe('Hi there');
    expect(end).toMatchObject({ text: 'Hi there', message: { content: 'Hi there', toolCalls: [] } });
  });

  it('reads a text the final parse refuses as streaming reads it, and one no parse reads as content', () => {
    const cut = new MessageStream([], toy).finish('');
    expect(cut.message.content).toBe('');
    const s = new MessageStream([], toy);
    s.push('Hi<call>f|{"a', false);
    expect(s.finish('').message).toMatchObject({ content: 'Hi', toolCalls: [{ function: { name: 'f', arguments: '{"a' } }] });
    const broken = new MessageStream([], { parse: () => { throw new Error('no'); } });
    broken.push('raw', false);
    expect(broken.finish('').message).toEqual({ role: 'assistant', content: 'raw', reasoningContent: null, toolCalls: [] });
    // Streaming reads nothing of a text without the format's markers: it is kept as content, sent at the last token.
    const unread: ChatParser = { parse: (t, partial) => { if (!partial) throw new Error('unparsed'); return { content: '', reasoningContent: '', toolCalls: [] }; } };
    const { deltas, end } = run(new MessageStream([], unread), ['free ', 'text']);
    expect(deltas).toEqual([{}, { content: 'free text' }]);
    expect(end.message.content).toBe('free text');
  });

  it('makes call ids of 24 random alphanumerics', () => {
    expect(new Set(Array.from({ length: 50 }, newToolCallId)).size).toBe(50);
  });
});
