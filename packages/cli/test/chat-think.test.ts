// What `bmoe chat` prints of a reply, without a model: thinking told apart from the answer in each
// family's framing (also when a marker arrives split across tokens), dimmed or left out, the
// framing tokens dropped; the live status line's text and its terminal escapes.
import type { TokenMetrics } from '@bmoe/engine';
import { describe, expect, it } from 'vitest';
import { ReplyPrinter, stopNote, type ReplyView } from '../src/chat/reply.js';
import { StatusLine, statusText } from '../src/chat/status.js';
import { ThinkSplitter, type Segment } from '../src/chat/think.js';
import { lines, runCli } from './helpers.js';

/** Feeds `pieces` one at a time (as tokens arrive) and merges what comes out. */
function split(pieces: readonly string[]): Segment[] {
  const s = new ThinkSplitter();
  const out: Segment[] = [];
  for (const seg of [...pieces.flatMap((p) => s.push(p)), ...s.flush()]) {
    const last = out[out.length - 1];
    if (last && last.kind === seg.kind) last.text += seg.text;
    else out.push({ ...seg });
  }
  return out;
}

/** Every way of cutting `text` into two pieces gives the same segments as one piece. */
function everyCut(text: string): Segment[][] {
  return Array.from({ length: text.length + 1 }, (_, i) => split([text.slice(0, i), text.slice(i)]));
}

describe('ThinkSplitter', () => {
  it.each([
    ['Qwen3', '<think>\nthe user greets me\n</think>\n\nHello!', [{ kind: 'think', text: '\nthe user greets me\n' }, { kind: 'answer', text: '\n\nHello!' }]],
    [
      'gpt-oss (harmony)',
      '<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hi there<|return|>',
      [{ kind: 'think', text: 'User greets.' }, { kind: 'answer', text: 'Hi there' }],
    ],
    ['gemma 4', '<|channel>thought\nweighing it<channel|>The answer', [{ kind: 'think', text: 'weighing it' }, { kind: 'answer', text: 'The answer' }]],
    ['no thinking', 'just 1 < 2 and <b>bold</b>', [{ kind: 'answer', text: 'just 1 < 2 and <b>bold</b>' }]],
  ] as const)('%s: thinking and answer apart, framing dropped, wherever the text is cut', (_name, text, expected) => {
    for (const got of everyCut(text)) expect(got).toEqual(expected);
    expect(split([...text])).toEqual(expected);
  });

  it('holds back a marker\'s beginning until it is whole, and lets text that only looked like one through', () => {
    const s = new ThinkSplitter();
    expect(s.push('a <thi')).toEqual([{ kind: 'answer', text: 'a ' }]);
    expect(s.push('ck')).toEqual([{ kind: 'answer', text: '<thick' }]);
    expect(s.push(' <|chan')).toEqual([{ kind: 'answer', text: ' ' }]);
    expect(s.flush()).toEqual([{ kind: 'answer', text: '<|chan' }]);
  });
});

function view(over: Partial<ReplyView> = {}): ReplyView & { text: () => string } {
  let out = '';
  return {
    write: (t: string) => (out += t),
    styled: true,
    think: true,
    dim: (t: string) => `[dim]${t}[/dim]`,
    status: null,
    streaming: false,
    notes: true,
    ...over,
    text: () => out,
  };
}

function print(v: ReplyView, pieces: readonly string[], note?: string): void {
  const p = new ReplyPrinter(v);
  for (const piece of pieces) p.push(piece);
  p.end(note);
}

const QWEN = ['<think>', '\nhm', 'm\n', '</think>', '\n\n', 'Hello', ' world'];

describe('ReplyPrinter', () => {
  it('dims the thinking, starts the answer on its own line, drops leading blanks, ends with a newline', () => {
    const v = view();
    print(v, QWEN);
    expect(v.text()).toBe('[dim]hm[/dim][dim]m\n[/dim]Hello world\n');
  });

  it('--no-think leaves the thinking out', () => {
    const v = view({ think: false });
    print(v, QWEN);
    expect(v.text()).toBe('Hello world\n');
  });

  it('plain output is the model\'s text as it is, thinking markers included, without styling', () => {
    const v = view({ styled: false });
    print(v, QWEN);
    expect(v.text()).toBe('<think>\nhmm\n</think>\n\nHello world\n');
    const quiet = view({ styled: false, think: false });
    print(quiet, QWEN);
    expect(quiet.text()).toBe('Hello world\n');
  });

  it('puts a note on a line of its own after the reply', () => {
    const v = view();
    print(v, [' cut sho', 'rt'], stopNote('abort', 16) ?? undefined);
    expect(v.text()).toBe('cut short\n[dim][stopped][/dim]\n');
    expect(stopNote('length', 16)).toBe('[cut at 16 tokens: -n]');
    expect(stopNote('eog', 16)).toBeNull();
  });
});

function record(i: number, over: Partial<TokenMetrics> = {}): TokenMetrics {
  return {
    tokenIndex: i, tokenId: i, wallMs: 10, computeMs: 8, ioMs: 2, stallMs: 0, mgmtMs: 0, readBytes: 2 * 1024 * 1024,
    expertHits: 3, expertMisses: 1, cacheResidentBytes: 0, prefetchIssued: 0, prefetchUseful: 0, aheadRouted: 0, aheadCorrect: 0, aheadRead: 0, aheadWastedBytes: 0, majorFaults: 0,
    minorFaults: 0, cpuMs: 8, rssBytes: 0, memAvailableBytes: null, ...over,
  } as TokenMetrics;
}

describe('the status line', () => {
  it('says tok/s, and flash MiB/token and cache hit when streaming, from the metrics summary', () => {
    const metrics = [record(0, { wallMs: 500 }), record(1), record(2), record(3)];
    expect(statusText(metrics, true)).toBe('4 tokens · 100.0 tok/s · flash 2.00 MiB/token · cache hit 75.0 %');
    expect(statusText(metrics, false)).toBe('4 tokens · 100.0 tok/s');
    // The first token comes out of the prompt: its counters are the prompt's, not a decode's.
    expect(statusText([record(0)], true)).toBe('1 token · n/a tok/s · flash n/a MiB/token · cache hit n/a %');
  });

  it('keeps the last row for itself with a scroll region, and gives it back when stopped', () => {
    let out = '';
    const line = new StatusLine({ rows: 24, columns: 20, write: (t) => (out += t) }, (s) => s, 0);
    line.start();
    expect(out).toBe('\n\x1b7\x1b[1;23r\x1b8\x1b[1A');
    out = '';
    line.update(() => 'a status longer than the terminal is wide');
    expect(out).toBe('\x1b7\x1b[24;1H\x1b[2Ka status longer tha\x1b8');
    out = '';
    line.stop();
    expect(out).toBe('\x1b7\x1b[24;1H\x1b[2K\x1b[r\x1b8');
    out = '';
    line.update(() => 'after stop');
    expect(out).toBe('');
  });

  it('stops drawing when the terminal changes size (its rows mean nothing then)', () => {
    let out = '';
    const term = { rows: 24, columns: 80, write: (t: string) => (out += t) };
    const line = new StatusLine(term, (s) => s, 0);
    line.start();
    term.rows = 10;
    out = '';
    line.resize();
    expect(out).toBe('\x1b7\x1b[r\x1b8');
    out = '';
    line.update(() => 'x');
    line.stop();
    expect(out).toBe('');
  });
});

describe('bmoe chat flags', () => {
  it("--help shows run's model, streaming and generation flags, and --system", async () => {
    const r = await runCli(['chat', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: bmoe chat');
    for (const flag of ['-n, --n-predict', '--ctx-size', '--temp', '--top-k', '--top-p', '--seed', '--chatml', '--no-think', '--system', '--moe-stream', '--cache-mb', '--io-threads', '--overlap']) {
      expect(r.stdout).toContain(flag);
    }
  });

  it.each([
    [['chat', 'm.gguf', '-n', '0'], /'0' is invalid\. must be/],
    [['chat', 'm.gguf', '--top-p', '2'], /must be a number in \(0, 1\]/],
    [['chat'], /missing required argument 'model'/],
  ])('%j is a usage error: exit 2, one line', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });
});
