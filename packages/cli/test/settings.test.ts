// The settings rule as `bmoe run` / `bmoe serve` apply it: no streaming flag leaves the choice to
// the rule, --moe-stream / --no-moe-stream decide, the knobs of streaming still need --moe-stream,
// and the chosen settings come with one line saying why. In-process (commander and the engine's
// header reader; nothing native).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chooseSettingsFor, readDeviceFacts } from '@bmoe/engine';
import { makeModel } from '@bmoe/gguf';
import { Command, CommanderError } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCommand } from '../src/commands/run.js';
import { chooseLoad, loadOptions, settingsLine } from '../src/model-options.js';

function parseRun(argv: string[]): ReturnType<typeof loadOptions> {
  const run = runCommand(new Command('bmoe')).exitOverride().configureOutput({ writeErr: () => undefined });
  run.parse(['m.gguf', '-p', 'x', ...argv], { from: 'user' });
  return loadOptions(run, run.opts());
}

function usageError(argv: string[]): string {
  try {
    parseRun(argv);
  } catch (e) {
    expect(e).toBeInstanceOf(CommanderError);
    expect((e as CommanderError).exitCode).toBe(2);
    return (e as CommanderError).message;
  }
  throw new Error(`no usage error for ${argv.join(' ')}`);
}

describe('streaming flags and the rule', () => {
  it('no streaming flag leaves `stream` unset (the rule decides); --no-moe-stream says resident', () => {
    expect(parseRun([])).toEqual({});
    expect(parseRun(['-t', '1'])).toEqual({ threads: 1 });
    expect(parseRun(['--no-moe-stream'])).toEqual({ stream: { moeStream: false } });
    expect(parseRun(['--moe-stream'])).toEqual({ stream: { moeStream: true } });
    // the last of the two wins, as commander's negations do
    expect(parseRun(['--no-moe-stream', '--moe-stream', '--cache-mb', '5'])).toEqual({ stream: { moeStream: true, cacheMb: 5 } });
  });

  it('a streaming knob needs --moe-stream, with --no-moe-stream too', () => {
    expect(usageError(['--cache-mb', '100'])).toBe('error: --cache-mb requires --moe-stream');
    expect(usageError(['--no-moe-stream', '--io-threads', '2'])).toBe('error: --io-threads requires --moe-stream');
  });
});

describe('chooseLoad', () => {
  let dir: string;
  let model: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmoe-cli-settings-'));
    model = join(dir, 'tiny.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: model });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('holds a tiny model resident here and says so in one line', async () => {
    const s = await chooseLoad(model, {});
    expect(s).toMatchObject({ mode: 'resident', chosen: true });
    expect(s.load.stream).toBeUndefined();
    const line = settingsLine(s);
    expect(line).toMatch(/^bmoe: holding the model resident \(model \d+ MiB \+ 512 MiB runtime ≤ [\d.]+ GiB available( in this memory cgroup)?\), \d threads?$/);
    expect(line).not.toContain('\n');
    // The same decision the engine's entry point makes on this machine's facts.
    const d = await chooseSettingsFor(model, {}, readDeviceFacts());
    expect({ mode: d.settings.mode, load: d.settings.load }).toEqual({ mode: s.mode, load: s.load });
    expect(d.model.fileBytes).toBeLessThan(64 * 1024 * 1024);
  });

  it('the flags given win: -t, --moe-stream with its knobs', async () => {
    expect((await chooseLoad(model, { threads: 1 })).load).toEqual({ threads: 1 });
    const forced = await chooseLoad(model, { stream: { moeStream: true, cacheMb: 0, ioThreads: 2 } });
    expect(forced).toMatchObject({ mode: 'stream', chosen: false, load: { stream: { moeStream: true, cacheMb: 0, ioThreads: 2 } } });
    expect(settingsLine(forced)).toMatch(/^bmoe: streaming experts \(as asked\), no cache, 2 read lanes, overlap auto, route-ahead auto, \d threads?$/);
  });

  it('a missing model is the one-line error loadModel gives', async () => {
    await expect(chooseLoad(join(dir, 'nope.gguf'), {})).rejects.toThrow(`${join(dir, 'nope.gguf')}: no such file`);
  });
});
