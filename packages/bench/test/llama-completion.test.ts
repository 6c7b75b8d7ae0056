// The reference argv of llama.cpp's llama-completion, written once for the bench's peer rows and
// the CLI's identity reference (@bmoe/cli runLlamaCompletion).
import { llamaToolPath } from '@bmoe/engine';
import { describe, expect, it } from 'vitest';
import { llamaCompletionArgv, llamaCompletionTool } from '../src/llama-completion.js';

const run = { binary: '/bin/llama-completion', model: 'm.gguf', prompt: 'Hi there', nPredict: 8, threads: 2 };

describe('llamaCompletionArgv', () => {
  it('runs the raw prompt greedily, without warm-up; -nr only when repacking is off', () => {
    const base = ['/bin/llama-completion', '-m', 'm.gguf', '-p', 'Hi there', '-n', '8', '-no-cnv', '--temp', '0', '-t', '2'];
    expect(llamaCompletionArgv({ ...run, repack: false })).toEqual([...base, '-nr', '--no-warmup']);
    expect(llamaCompletionArgv({ ...run, repack: true })).toEqual([...base, '--no-warmup']);
    // A matrix config says its repacking in its own flags.
    expect(llamaCompletionArgv({ ...run, extraArgs: ['-nr'] })).toEqual([...base, '--no-warmup', '-nr']);
  });

  it('prints only the text when asked, and appends extra arguments last', () => {
    const argv = llamaCompletionArgv({ ...run, repack: false, textOnly: true, extraArgs: ['--temp', '0.9', '--seed', '5'] });
    expect(argv.slice(-7)).toEqual(['--no-warmup', '--no-display-prompt', '--simple-io', '--temp', '0.9', '--seed', '5']);
  });

  it('defaults to the tool built from the pinned source, or says in one line that it is not built', () => {
    const built = llamaToolPath('llama-completion');
    if (built) expect(llamaCompletionArgv({ ...run, binary: undefined })[0]).toBe(built);
    else expect(() => llamaCompletionTool()).toThrow(/^llama\.cpp's llama-completion is not built \(packages\/core-native\/build\/bin\): run the setup first$/);
  });
});
