// The engine flags of `bmoe run` / `bmoe serve` come from @bmoe/engine's option table: every row
// with a flag is a flag, checked with the row's range and message, and flags → options → flags
// goes round. In-process (commander only, nothing loaded).
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { checkValue, loadOptionFlags, generateOptionFlags, optionRows, type GenerateOptions, type LoadOptions, type OptionRow } from '@bmoe/engine/options';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../src/commands/run.js';
import { addContextOptions, addStreamingOptions, generateOptions, loadOptions } from '../src/model-options.js';
import { parserFor } from '../src/parse.js';

const withFlag = (rows: OptionRow[]): OptionRow[] => rows.filter((r) => r.flag !== null);

/** A command with the model flags (as `bmoe serve` has them), parsed from argv. */
function parseModelFlags(argv: string[]): { cmd: Command; load: LoadOptions } {
  const cmd = addStreamingOptions(addContextOptions(new Command('t')))
    .exitOverride()
    .configureOutput({ writeErr: () => undefined });
  cmd.parse(argv, { from: 'user' });
  return { cmd, load: loadOptions(cmd, cmd.opts()) };
}

describe('flags from the option table', () => {
  it('`bmoe run` has a flag for every option row with one, spelled as the table says', () => {
    const run = runCommand(new Command('bmoe'));
    for (const row of withFlag(optionRows(['context', 'model', 'stream', 'generate']))) {
      const option = run.options.find((o) => o.long === row.flag);
      expect(option, row.key).toBeDefined();
      expect(option?.short).toBe(row.short);
      if (row.value.type !== 'bool') expect(option?.description).toBe(`${row.help} (default ${row.defaultText})`);
    }
  });

  it('checks each flag with the row range and message (the engine option says the same)', () => {
    for (const row of withFlag(optionRows(['context', 'model', 'stream', 'generate']))) {
      if (row.value.type !== 'int') continue;
      const parse = parserFor(row.value);
      expect(parse(String(row.value.min))).toBe(row.value.min);
      const over = (row.value.max ?? Number.MAX_SAFE_INTEGER) + 1;
      const message = checkValue(row.value, over);
      expect(message, row.key).not.toBeNull();
      expect(() => parse(String(over))).toThrow(new InvalidArgumentError(message!));
    }
    expect(() => parserFor({ type: 'int', min: 0, max: 64 })('65')).toThrow('must be an integer from 0 to 64');
  });

  it('turns flags into LoadOptions by the rows API keys, only the flags given', () => {
    const { load } = parseModelFlags(['-t', '2', '-c', '512', '--n-expert-used', '2', '--moe-stream', '--cache-mb', 'auto', '--cache-ceil-mb', '300', '--io-threads', '2', '--no-odirect', '--dense-weights', 'anon', '--prefetch', '64']);
    expect(load).toEqual({
      threads: 2,
      contextSize: 512,
      nExpertUsed: 2,
      stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: 300, ioThreads: 2, odirect: false, denseWeights: 'anon', prefetch: 64 },
    });
    expect(parseModelFlags([]).load).toEqual({});
    expect(parseModelFlags(['--repack']).load).toEqual({ repack: true });
  });

  it.each<LoadOptions>([
    { threads: 4, contextSize: 4096 },
    { threads: 4, contextSize: 4096, stream: { moeStream: true, cacheMb: 'auto', cacheCeilMb: 1200, ioThreads: 4, overlap: true } },
    { batchSize: 256, ubatchSize: 64, repack: true, nExpertUsed: 3, stream: { moeStream: true, cacheMb: 0, prefetch: 2, odirect: false, denseWeights: 'anon', forceCache: true } },
    { stream: { moeStream: true, overlap: false } },
    { stream: { moeStream: true, overlap: true, routeAhead: false } },
    { stream: { moeStream: true, overlap: false, routeAhead: true } },
    { stream: { moeStream: true, overlap: true, routeAhead: true } },
    { stream: { moeStream: true, routeAhead: false } },
    { stream: { moeStream: false } },
  ])('options → flags → options goes round: %j', (options) => {
    expect(parseModelFlags(loadOptionFlags(options)).load).toEqual(options);
  });

  it("overlap is a tri-state: --overlap forces it, --no-overlap forbids it, neither leaves it 'auto'", () => {
    expect(parseModelFlags(['--moe-stream', '--overlap']).load).toEqual({ stream: { moeStream: true, overlap: true } });
    expect(parseModelFlags(['--moe-stream', '--no-overlap']).load).toEqual({ stream: { moeStream: true, overlap: false } });
    // Nothing given: the engine's default, 'auto' (the streamer measures).
    expect(parseModelFlags(['--moe-stream']).load).toEqual({ stream: { moeStream: true } });
    expect(parseModelFlags(loadOptionFlags({ stream: { moeStream: true, overlap: 'auto' } })).load).toEqual({ stream: { moeStream: true } });
    // The last of the two flags wins, as for --moe-stream / --no-moe-stream.
    expect(parseModelFlags(['--moe-stream', '--overlap', '--no-overlap']).load.stream?.overlap).toBe(false);
  });

  it("route-ahead is a tri-state too: --route-ahead forces it, --no-route-ahead forbids it, neither leaves it 'auto'", () => {
    expect(parseModelFlags(['--moe-stream', '--no-route-ahead']).load).toEqual({ stream: { moeStream: true, routeAhead: false } });
    expect(parseModelFlags(['--moe-stream', '--route-ahead']).load).toEqual({ stream: { moeStream: true, routeAhead: true } });
    expect(parseModelFlags(['--moe-stream']).load.stream).not.toHaveProperty('routeAhead');
    expect(parseModelFlags(loadOptionFlags({ stream: { moeStream: true, routeAhead: 'auto' } })).load).toEqual({ stream: { moeStream: true } });
    expect(parseModelFlags(['--moe-stream', '--no-route-ahead', '--route-ahead']).load.stream?.routeAhead).toBe(true);
  });

  it('documents the tri-state and the negations in --help', () => {
    const help = runCommand(new Command('bmoe')).helpInformation().replace(/\s+/g, ' ');
    expect(help).toContain(
      "--overlap always hide each layer's expert reads behind its expert compute; auto (neither flag) times one-token decodes in every allowed combination of overlap and route-ahead",
    );
    expect(help).toContain('--no-overlap never overlap');
    expect(help).toContain('--route-ahead always read the experts the next MoE layer');
    expect(help).toContain('auto (neither flag) measures it against the other combinations of overlap and route-ahead (see --overlap) and keeps it only where faster');
    expect(help).toContain("--no-route-ahead never read ahead on the next MoE layer's predicted routing");
  });

  it('generation flags go round too', () => {
    const gen: GenerateOptions = { maxTokens: 7, temperature: 0.7, topK: 5, topP: 0.5, seed: 9, chatml: true, think: false };
    const run = runCommand(new Command('bmoe')).exitOverride();
    run.parse(['m.gguf', '-p', 'x', ...generateOptionFlags(gen)], { from: 'user' });
    expect(generateOptions(run, run.opts())).toEqual(gen);
  });

  it('a streaming flag without --moe-stream is a usage error naming the first one, in table order', () => {
    let err: unknown;
    try {
      parseModelFlags(['--io-threads', '2', '--cache-mb', '100']);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CommanderError);
    expect((err as CommanderError).exitCode).toBe(2);
    expect((err as CommanderError).message).toBe('error: --cache-mb requires --moe-stream');
  });
});
