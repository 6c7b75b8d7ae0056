// Pure pieces of the CLI, tested in-process.
import { describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError } from 'commander';
import { demoModelPath } from '../src/commands/demo.js';
import { formatBytes, table, warnStream } from '../src/format.js';
import { findLlamaTool, stripCompletionOutput } from '../src/llama-tools.js';
import { cacheMb, nonNegativeNumber, positiveInt, probability, uint32 } from '../src/parse.js';

describe('flag parsers', () => {
  it('accept good values and reject bad ones with commander errors', () => {
    expect(positiveInt('12')).toBe(12);
    for (const bad of ['0', '-5', 'abc', '1.5', '', '1e3']) expect(() => positiveInt(bad)).toThrow(InvalidArgumentError);
    expect(uint32('4294967295')).toBe(4294967295);
    expect(() => uint32('4294967296')).toThrow(InvalidArgumentError);
    expect(nonNegativeNumber('0.7')).toBe(0.7);
    expect(() => nonNegativeNumber('-1')).toThrow(InvalidArgumentError);
    expect(probability('1')).toBe(1);
    expect(() => probability('0')).toThrow(InvalidArgumentError);
    expect(cacheMb('auto')).toBe('auto');
    expect(cacheMb('2000')).toBe(2000);
    expect(() => cacheMb('-1')).toThrow("must be a non-negative integer (MiB) or 'auto'");
  });
});

describe("the streamer's warning", () => {
  it('is one bmoe: warning line on stderr when the streamer has one, nothing otherwise', () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      warnStream({ stream: { warning: 'm.gguf: O_DIRECT is not supported here (Invalid argument); reading through the page cache' } });
      warnStream({ stream: { warning: '' } });
      warnStream({ stream: null });
      expect(write.mock.calls.map((c) => c[0])).toEqual(['bmoe: warning: m.gguf: O_DIRECT is not supported here (Invalid argument); reading through the page cache\n']);
    } finally {
      write.mockRestore();
    }
  });
});

describe('formatting', () => {
  it('aligns a two-column table', () => {
    expect(table([['a', '1'], ['longer', '2']])).toBe('a       1\nlonger  2\n');
  });

  it('prints bytes in binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.00 GiB');
  });
});

describe('demo model path', () => {
  it('follows XDG_CACHE_HOME, else ~/.cache', () => {
    expect(demoModelPath({ XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/bmoe/models/demo-qwen3moe.gguf');
    expect(demoModelPath({})).toMatch(/\/\.cache\/bmoe\/models\/demo-qwen3moe\.gguf$/);
  });
});

describe('llama.cpp tools', () => {
  it("strips llama-completion's end marker and trailing blank lines", () => {
    expect(stripCompletionOutput(' jumps over\n\n')).toBe(' jumps over');
    expect(stripCompletionOutput(' jumps. [end of text]\n\n\n')).toBe(' jumps.');
  });

  it('locates a built tool or says it is not there', () => {
    expect(findLlamaTool('no-such-tool')).toBeNull();
    const found = findLlamaTool('llama-completion');
    if (found) expect(found).toMatch(/packages\/core-native\/build\/bin\/llama-completion$/);
  });
});

describe('engine option errors in CLI terms', () => {
  // Real engine errors (no native addon needed: options are refused before anything loads).
  async function rejection(p: Promise<unknown>): Promise<unknown> {
    return p.then(
      () => {
        throw new Error('did not reject');
      },
      (e: unknown) => e,
    );
  }

  it('names flags instead of engine options, from the option the error carries', async () => {
    const { flagMessage } = await import('../src/option-names.js');
    const { headerInfo, loadModel } = await import('@bmoe/engine');
    const { planModel } = await import('@bmoe/gguf');
    const topK = (() => {
      try {
        headerInfo(planModel({ preset: 'tiny-qwen3moe' }).layout, 99);
      } catch (e) {
        return e;
      }
    })();
    expect(flagMessage(topK)).toMatch(/^--n-expert-used must be an integer from 1 to the model's expert count \(\d+\), got 99$/);
    expect(flagMessage(await rejection(loadModel('m.gguf', { batchSize: 64, ubatchSize: 128 })))).toBe('--ubatch-size must be at most --batch-size (64), got 128');
    expect(flagMessage(await rejection(loadModel('m.gguf', { stream: { moeStream: true, ioThreads: 65 } })))).toBe('--io-threads must be an integer from 1 to 64, got 65');
    expect(flagMessage(await rejection(loadModel('m.gguf', { stream: { cacheMb: 100 } })))).toBe('--cache-mb requires --moe-stream');
    // The engine's own words stay in API terms.
    expect(((await rejection(loadModel('m.gguf', { stream: { cacheMb: 100 } }))) as Error).message).toBe('stream.cacheMb requires stream.moeStream: true');
  });

  it('names a flag inside a longer message, and leaves other errors alone', async () => {
    const { flagMessage } = await import('../src/option-names.js');
    const { opt, optionError } = await import('@bmoe/engine/options');
    const { BmoeError } = await import('@bmoe/engine');
    expect(flagMessage(optionError`the prompt is 14 tokens but the context holds 8 (${opt('contextSize')})`)).toBe('the prompt is 14 tokens but the context holds 8 (--ctx-size)');
    // An option error about a server option (no table entry) and other errors: not rewritten.
    expect(flagMessage(new BmoeError('E_OPTION', 'server option port must be an integer from 0 to 65535, got 70000'))).toBeNull();
    expect(flagMessage(new BmoeError('E_MODEL', 'threads: no such file'))).toBeNull();
    expect(flagMessage(new Error('contextSize'))).toBeNull();
  });
});
