// `bmoe run` end to end on the tiny-qwen3moe fixture, and greedy identity with llama.cpp's own
// llama-completion built from the same source. Skipped while the native addon or llama-completion
// is not built — a failure under CI (tooling/test-utils.mjs).
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CSV_COLUMNS, parseGenerationLine, parseMetricsCsv } from '@bmoe/engine/metrics';
import { nativeBuild } from '@bmoe/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { findLlamaTool, runLlamaCompletion } from '../src/llama-tools.js';
import { lines, runCli } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const llamaCompletion = await requireNative("llama.cpp's llama-completion", () => findLlamaTool('llama-completion'));
const PROMPT = 'The quick brown fox';

describe.runIf(nativeAvailable)('bmoe run (native)', () => {
  let dir: string;
  let model: string;
  const doneText = (stdout: string): string | undefined =>
    lines(stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done')?.text;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-run-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    const r = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', model], { timeoutMs: 300_000 });
    if (r.code !== 0) throw new Error(`make-model failed: ${r.stderr}`);
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('prints the generated text and a parseable generation: line', async () => {
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '16', '-t', '2']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    const gen = lines(r.stderr).map(parseGenerationLine).find((g) => g !== null);
    expect(gen).toBeDefined();
    expect(gen!.tokens).toBeGreaterThan(0);
    expect(gen!.tokens).toBeLessThanOrEqual(16);
    expect(gen!.tokensPerSecond).toBeGreaterThan(0);
    expect(r.stderr).not.toMatch(/^moe-stream:/m);
  });

  it('--csv writes the schema header and one row per token, and no partial file', async () => {
    const csv = join(dir, 'run.csv');
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '12', '-t', '2', '--csv', csv]);
    expect(r.code).toBe(0);
    const text = await readFile(csv, 'utf8');
    expect(text.split('\n')[0]).toBe(CSV_COLUMNS.join(','));
    const rows = parseMetricsCsv(text, csv);
    const gen = lines(r.stderr).map(parseGenerationLine).find((g) => g !== null);
    expect(rows).toHaveLength(gen!.tokens);
    expect(rows.map((x) => x.tokenIndex)).toEqual(rows.map((_, i) => i));
    expect((await readdir(dir)).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });

  it('--json emits one parseable event per line, tokens then done', async () => {
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '8', '-t', '2', '--json']);
    expect(r.code).toBe(0);
    const events = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; tokenIndex?: number; summary?: { tokens: number } });
    const tokens = events.filter((e) => e.type === 'token');
    expect(events.at(-1)?.type).toBe('done');
    expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
    expect(tokens.length).toBe(events.at(-1)!.summary!.tokens);
    expect(tokens.map((e) => e.tokenIndex)).toEqual(tokens.map((_, i) => i));
  });

  it('--chat and --no-think format the prompt with the template and still generate', async () => {
    const r = await runCli(['run', model, '-p', 'Hi', '-n', '4', '-t', '2', '--no-think']);
    expect(r.code).toBe(0);
    expect(lines(r.stderr).some((l) => parseGenerationLine(l) !== null)).toBe(true);
  });

  it('Ctrl-C aborts cleanly: summary for what was generated, exit 130, no CSV left', async () => {
    const csv = join(dir, 'interrupted.csv');
    let sent = false;
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '4000', '-c', '4096', '-t', '2', '--csv', csv], {
      onStdout: (_chunk, child) => {
        if (!sent) {
          sent = true;
          child.kill('SIGINT');
        }
      },
    });
    expect(r.code).toBe(130);
    const gen = lines(r.stderr).map(parseGenerationLine).find((g) => g !== null);
    expect(gen).toBeDefined();
    expect(gen!.tokens).toBeLessThan(4000);
    expect(r.stderr).not.toMatch(/error/);
    expect((await readdir(dir)).filter((f) => f.startsWith('interrupted.csv'))).toEqual([]);
  });

  it('a missing model is one error line naming it', async () => {
    const path = join(dir, 'nope.gguf');
    const r = await runCli(['run', path, '-p', PROMPT]);
    expect(r.code).toBe(1);
    expect(lines(r.stderr)).toEqual([`bmoe: error: ${path}: no such file`]);
  });

  it.runIf(llamaCompletion)('greedy text equals llama.cpp llama-completion (both repacking, their default) on the same file and prompt', async () => {
    const expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: 32, threads: 2 });
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '32', '-t', '2', '--json']);
    expect(r.code).toBe(0);
    const done = lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done');
    expect(expected.length).toBeGreaterThan(0);
    expect(done?.text).toBe(expected);
  });

  it.runIf(llamaCompletion)('-f FILE and -f - (standard input) give the text of llama-completion -f FILE: the file whole, one trailing newline dropped', async () => {
    const file = join(dir, 'prompt.txt');
    const prompt = 'First line of the prompt.\n\nA second paragraph, then a newline the reader drops\n';
    await writeFile(file, prompt);
    const expected = await runLlamaCompletion({ model, prompt: 'ignored: -f comes later', nPredict: 24, threads: 2, extraArgs: ['-f', file] });
    const fromFile = await runCli(['run', model, '-f', file, '-n', '24', '-t', '2', '--json']);
    expect(fromFile.code).toBe(0);
    expect(expected.length).toBeGreaterThan(0);
    expect(doneText(fromFile.stdout)).toBe(expected);
    const fromStdin = await runCli(['run', model, '-f', '-', '-n', '24', '-t', '2', '--json'], { input: prompt });
    expect(fromStdin.code).toBe(0);
    expect(doneText(fromStdin.stdout)).toBe(expected);
    // The newline dropped is the only one: -p with the text minus it is the same run.
    const fromFlag = await runCli(['run', model, '-p', prompt.slice(0, -1), '-n', '24', '-t', '2', '--json']);
    expect(doneText(fromFlag.stdout)).toBe(expected);
  });

  it('-f with a missing, unreadable or non-UTF-8 file, or beside -p, is one usage line, exit 2', async () => {
    const binary = join(dir, 'binary.txt');
    await writeFile(binary, Buffer.from([0x48, 0x69, 0xff, 0xfe, 0x00]));
    const cases: [string[], RegExp][] = [
      [['-f', join(dir, 'absent.txt')], /cannot read .*absent\.txt \(ENOENT\)/],
      [['-f', dir], /cannot read .* \(EISDIR\)/],
      [['-f', binary], /binary\.txt is not UTF-8 text/],
      [['-f', binary, '-p', PROMPT], /cannot be used with|is not UTF-8/],
      [['-p', PROMPT, '-f', join(dir, 'prompt.txt')], /option '-f, --file <file>' cannot be used with option '-p, --prompt <text>'/],
    ];
    for (const [flags, message] of cases) {
      const r = await runCli(['run', model, ...flags]);
      expect(r.code).toBe(2);
      expect(lines(r.stderr)).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });

  it.runIf(llamaCompletion)('--n-expert-used 2 equals llama-completion with the same kv override (and changes the text)', async () => {
    const textOf = async (extra: string[]): Promise<string | undefined> => {
      const r = await runCli(['run', model, '-p', PROMPT, '-n', '32', '-t', '2', '--json', ...extra]);
      expect(r.code).toBe(0);
      return lines(r.stdout).map((l) => JSON.parse(l) as { type: string; text?: string }).find((e) => e.type === 'done')?.text;
    };
    const expected = await runLlamaCompletion({
      model,
      prompt: PROMPT,
      nPredict: 32,
      threads: 2,
      extraArgs: ['--override-kv', 'qwen3moe.expert_used_count=int:2'],
    });
    const k2 = await textOf(['--n-expert-used', '2']);
    expect(k2).toBe(expected);
    expect(k2).not.toBe(await textOf([]));
  });

  const SCHEMA = { type: 'object', properties: { answer: { enum: ['yes', 'no'] }, n: { type: 'integer', minimum: 0, maximum: 9 } }, required: ['answer', 'n'], additionalProperties: false };

  it('--grammar and --json-schema constrain the output; bad values are one usage line, exit 2', async () => {
    const g = await runCli(['run', model, '-p', PROMPT, '-n', '8', '-t', '2', '--json', '--grammar', 'root ::= "yes" | "no"']);
    expect(g.code).toBe(0);
    expect(['yes', 'no']).toContain(doneText(g.stdout));
    for (const seed of ['1', '2', '3']) {
      const j = await runCli(['run', model, '-p', PROMPT, '-n', '64', '-t', '2', '--temp', '0.9', '--seed', seed, '--json', '-j', JSON.stringify(SCHEMA)]);
      expect(j.code).toBe(0);
      const v = JSON.parse(doneText(j.stdout) ?? '') as { answer: string; n: number };
      expect(Object.keys(v).sort()).toEqual(['answer', 'n']);
      expect(['yes', 'no']).toContain(v.answer);
      expect(Number.isInteger(v.n) && v.n >= 0 && v.n <= 9).toBe(true);
    }
    const missing = await runCli(['run', model, '-p', PROMPT, '--grammar-file', join(dir, 'none.gbnf')]);
    expect(missing.code).toBe(2);
    expect(lines(missing.stderr)).toHaveLength(1);
    expect(missing.stderr).toContain('none.gbnf (ENOENT)');
    const both = await runCli(['run', model, '-p', PROMPT, '-j', '{"type":"object"}', '--grammar', 'root ::= "a"']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/cannot be used with/);
  });

  it('a grammar or schema over its bounds is one error line, exit 1, at once (a {5,1} repetition grew the process without end)', async () => {
    const cases: [string[], RegExp][] = [
      [['--grammar', 'root ::= "a"{5,1}'], /^bmoe: error: grammar: repetition \{5,1\} has its minimum above its maximum \(line 1\)$/],
      [['--grammar', 'root ::= r1{0,1999}\nr1 ::= "a"{0,1999}'], /^bmoe: error: grammar: nested repetitions in rule 'root'/],
      [['-j', JSON.stringify({ type: 'array', minItems: 5, maxItems: 1 })], /^bmoe: error: jsonSchema: minItems 5 is above maxItems 1 \(at the schema's root\)$/],
      [['-j', JSON.stringify({ type: 'string', minLength: 9, maxLength: 3 })], /^bmoe: error: jsonSchema: minLength 9 is above maxLength 3/],
    ];
    for (const [flags, message] of cases) {
      const r = await runCli(['run', model, '-p', PROMPT, '-n', '4', '-t', '2', ...flags], { timeoutMs: 30_000 });
      expect(r.code).toBe(1);
      expect(lines(r.stderr).filter((l) => l.startsWith('bmoe: error:'))).toEqual([expect.stringMatching(message)]);
    }
  });

  it.runIf(llamaCompletion)('sampled --json-schema output equals llama-completion -j with the same sampler and seed', async () => {
    const sampler = ['--temp', '0.9', '--top-k', '40', '--top-p', '0.95', '--min-p', '0', '--seed', '5'];
    const expected = await runLlamaCompletion({ model, prompt: PROMPT, nPredict: 48, threads: 2, extraArgs: [...sampler, '-j', JSON.stringify(SCHEMA)] });
    const r = await runCli(['run', model, '-p', PROMPT, '-n', '48', '-t', '2', '--json', ...sampler, '-j', JSON.stringify(SCHEMA)]);
    expect(r.code).toBe(0);
    expect(expected.length).toBeGreaterThan(0);
    expect(doneText(r.stdout)).toBe(expected);
  });
});
