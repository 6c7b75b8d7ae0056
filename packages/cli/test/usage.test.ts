// Usage and help: exit 2 with commander's one-line error, --help everywhere, --version.
import { describe, expect, it } from 'vitest';
import { lines, runCli } from './helpers.js';

describe('bmoe usage', () => {
  it('--help lists the commands', async () => {
    const r = await runCli(['--help']);
    expect(r.code).toBe(0);
    for (const cmd of ['run', 'info', 'make-model', 'demo']) expect(r.stdout).toMatch(new RegExp(`^\\s+${cmd}\\b`, 'm'));
  });

  it.each(['run', 'info', 'make-model', 'demo'])('%s --help documents its flags', async (cmd) => {
    const r = await runCli([cmd, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: bmoe ${cmd}`);
  });

  it('run --help shows the streaming flags', async () => {
    const r = await runCli(['run', '--help']);
    for (const flag of ['--moe-stream', '--cache-mb', '--cache-ceil-mb', '--io-threads', '--overlap', '--no-overlap', '--prefetch', '--route-ahead', '--no-route-ahead', '--n-expert-used', '--no-odirect', '--dense-weights', '--force-cache']) {
      expect(r.stdout).toContain(flag);
    }
  });

  it('bare `bmoe` shows the help as a usage error; `bmoe help` is not an error', async () => {
    const bare = await runCli([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('Usage: bmoe');
    const help = await runCli(['help', 'run']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: bmoe run');
  });

  it('--version prints the version', async () => {
    const r = await runCli(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+/);
  });

  it.each([
    [['run', 'm.gguf', '-p', 'x', '--bogus'], /unknown option '--bogus'/],
    [['run', 'm.gguf', '-p', 'x', '-n', '-5'], /'-5' is invalid\. must be a positive integer/],
    [['run', 'm.gguf', '-p', 'x', '-n', 'abc'], /'abc' is invalid\. must be a positive integer/],
    [['run', 'm.gguf', '-p', 'x', '--top-p', '2'], /must be a number in \(0, 1\]/],
    [['run', 'm.gguf', '-p', 'x', '--moe-stream', '--io-threads', '65'], /must be an integer from 1 to 64/],
    [['run', 'm.gguf', '-p', 'x', '--cache-mb', 'lots'], /must be a non-negative integer \(MiB\) or 'auto'/],
    [['run', 'm.gguf', '-p', 'x', '--dense-weights', 'ram'], /Allowed choices are mmap, anon/],
    [['run', 'm.gguf', '-p', 'x', '--cache-mb', '100'], /--cache-mb requires --moe-stream/],
    [['run', 'm.gguf', '-p', 'x', '--no-overlap'], /--no-overlap requires --moe-stream/],
    [['run', 'm.gguf', '-p', 'x', '--no-route-ahead'], /--no-route-ahead requires --moe-stream/],
    [['run', 'm.gguf', '-p', 'x', '--moe-stream', '--cache-mb', '100', '--cache-ceil-mb', '50'], /--cache-ceil-mb applies only to --cache-mb auto/],
    [['run', 'm.gguf'], /required option '-p, --prompt <text>' or '-f, --file <file>' not specified/],
    [['run', '-p', 'x'], /missing required argument 'model'/],
    [['info'], /missing required argument 'model'/],
    [['make-model', '--out', 'x.gguf'], /needs --preset and --out/],
    [['frobnicate'], /unknown command 'frobnicate'/],
  ])('%j is a usage error: exit 2, one line', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });
});
