// `bmoe-bench serve`'s pure parts: the filler text and its calibration, the scripts, the SSE parser
// and token-chunk rule, the gap statistics, the flags each server gets, the table's rows and
// ratios, and the command's flag checks. No server runs here (serve-bench-run.test.ts runs both).
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { followUpRatio, meanGaps, serveBenchReport, serveBenchRows } from '../src/serve-bench-report.js';
import { clientCounts, failedSides, registerServeBench, serveRows } from '../src/serve-bench-command.js';
import {
  buildScripts,
  calibrate,
  carriesToken,
  fillerText,
  gaps,
  gapStats,
  loadPrompt,
  PROBE_WORDS,
  pushReceivedRate,
  splitSse,
  wordsFor,
} from '../src/serve-bench-script.js';
import { bmoeServeFlags, llamaServerFlags, type ServerConfig } from '../src/serve-bench-servers.js';
import { medianRound, type LoadRun, type ResumeRun, type ServeBenchResult, type SidePair, type TurnSample } from '../src/serve-bench.js';

describe('filler text and calibration', () => {
  it('is deterministic, has the words asked for, and differs by seed', () => {
    const a = fillerText(7, 250);
    expect(fillerText(7, 250)).toBe(a);
    expect(a.split(' ')).toHaveLength(250);
    expect(a).toMatch(/^[A-Z][a-z]+ .*\.$/);
    expect(fillerText(8, 250)).not.toBe(a);
    expect(fillerText(7, 1).split(' ')).toHaveLength(1);
  });

  it('sizes text from the probe: tokens per word over the warm-up overhead', () => {
    const cal = calibrate(17, 17 + 2 * PROBE_WORDS);
    expect(cal.tokensPerWord).toBe(2);
    expect(wordsFor(cal, 1000)).toBe(500);
    expect(wordsFor(cal, 0)).toBe(1);
    // a nonsensical count (probe shorter than the warm-up) still gives a usable rate
    expect(calibrate(100, 50).tokensPerWord).toBeGreaterThan(0);
  });

  it('builds two distinct conversations and a long chat ending with a user turn', () => {
    const s = buildScripts(calibrate(10, 10 + PROBE_WORDS), { systemTokens: 200, turns: 3, resumeTokens: 900 });
    expect(s.alternating).toHaveLength(2);
    expect(s.alternating[0]!.system).not.toBe(s.alternating[1]!.system);
    for (const c of s.alternating) {
      expect(c.users).toHaveLength(3);
      expect(new Set(c.users).size).toBe(3);
      expect(Math.abs(c.system.split(' ').length - 200)).toBeLessThan(10);
    }
    const words = s.resume.build.reduce((n, m) => n + m.content.split(' ').length, 0);
    expect(Math.abs(words - 900)).toBeLessThan(40);
    expect(s.resume.build[0]!.role).toBe('system');
    expect(s.resume.build.at(-1)!.role).toBe('user');
    expect(s.resume.other[0]!.content).not.toBe(s.resume.build[0]!.content);
    expect(loadPrompt(0, 0)).not.toBe(loadPrompt(0, 1));
    expect(loadPrompt(1, 0).slice(0, 12)).not.toBe(loadPrompt(0, 0).slice(0, 12));
  });
});

describe('reading a stream', () => {
  it('splits server-sent events, keeping a partial one for later', () => {
    const first = splitSse('data: {"a":1}\n\ndata: {"b"');
    expect(first).toEqual({ data: ['{"a":1}'], rest: 'data: {"b"' });
    const second = splitSse(`${first.rest}:2}\r\n\r\n: comment\n\ndata: [DONE]\n\n`);
    expect(second).toEqual({ data: ['{"b":2}', '[DONE]'], rest: '' });
    expect(splitSse('data: line1\ndata: line2\n\n').data).toEqual(['line1\nline2']);
  });

  it('counts a chunk as a token when it carries text of the answer', () => {
    expect(carriesToken({ choices: [{ delta: { content: 'hi' } }] })).toBe(true);
    expect(carriesToken({ choices: [{ delta: { reasoning_content: 'hm' } }] })).toBe(true);
    expect(carriesToken({ choices: [{ delta: { tool_calls: [{ index: 0 }] } }] })).toBe(true);
    // llama-server's first chunk (role, content null), bmoe's (role, content ''), the usage chunk
    expect(carriesToken({ choices: [{ delta: { content: null } }] })).toBe(false);
    expect(carriesToken({ choices: [{ delta: { content: '' } }] })).toBe(false);
    expect(carriesToken({ choices: [], usage: { completion_tokens: 3 } })).toBe(false);
  });

  it('takes gaps between token times and their p50 / p95', () => {
    expect(gaps([10, 12, 15, 15])).toEqual([2, 3, 0]);
    expect(gaps([5])).toEqual([]);
    const g = gapStats([4, 1, 3, 2, 5]);
    expect(g).toEqual({ p50Ms: 3, p95Ms: 4.8, n: 5 });
    expect(gapStats([])).toEqual({ p50Ms: 0, p95Ms: 0, n: 0 });
  });

  it('takes a stream\'s rate as received from its first token to its last, tokens read together included', () => {
    const rates: number[] = [];
    // Four tokens, three of them in one read (gaps 0, 0, 10: a p50 of 0): 3 tokens after the first in 10 ms.
    pushReceivedRate(rates, [10, 10, 10, 20]);
    pushReceivedRate(rates, [0, 5, 10, 15, 20]);
    // No span, no rate.
    pushReceivedRate(rates, [7]);
    pushReceivedRate(rates, [7, 7]);
    pushReceivedRate(rates, []);
    expect(rates).toEqual([300, 200]);
  });
});

describe('server flags', () => {
  const base: ServerConfig = { threads: 2, ctxSize: 8192, parallel: 4, moeStream: false, noRepack: false, limited: false };

  it("gives llama-server the total context of its slots, KV not unified, and its other defaults", () => {
    expect(bmoeServeFlags(base)).toEqual(['-t', '2', '-c', '8192', '--parallel', '4']);
    expect(llamaServerFlags(base)).toEqual(['-t', '2', '-c', '32768', '-np', '4', '--no-kv-unified', '--no-webui']);
  });

  it('streams bmoe and maps llama-server (-nr) inside a memory limit; saves where asked', () => {
    const c: ServerConfig = { ...base, parallel: 1, moeStream: true, cacheMb: 600, limited: true, saveDir: '/tmp/kv' };
    expect(bmoeServeFlags(c)).toEqual(['-t', '2', '-c', '8192', '--parallel', '1', '--moe-stream', '--cache-mb', '600', '--kv-dir', '/tmp/kv']);
    expect(llamaServerFlags(c)).toEqual(['-t', '2', '-c', '8192', '-np', '1', '--no-kv-unified', '--no-webui', '-nr', '--slot-save-path', '/tmp/kv']);
    // bmoe repacks by default, as llama-server: no repack flag unless --no-repack is asked for, and
    // none inside a memory limit either (bmoe's settings rule keeps a resident model bigger than memory unrepacked).
    expect(bmoeServeFlags({ ...base, cacheMb: 600, noRepack: true })).toEqual(['-t', '2', '-c', '8192', '--parallel', '4', '--no-repack']);
    expect(bmoeServeFlags({ ...base, limited: true })).toEqual(['-t', '2', '-c', '8192', '--parallel', '4']);
    expect(llamaServerFlags({ ...base, noRepack: true })).not.toContain('-nr');
  });
});

const turn = (conversation: number, t: number, ttftMs: number, cachedTokens: number): TurnSample => ({ conversation, turn: t, ttftMs, promptTokens: 1000 + 100 * t, cachedTokens });
const ok = <T>(result: T, flags: string[] = ['-t', '2']) => ({ flags, result, error: null, peakMiB: 900 });

function fakeResult(): ServeBenchResult {
  const alternating: SidePair<TurnSample[]> = {
    bmoe: ok([turn(1, 1, 800, 0), turn(2, 1, 820, 0), turn(1, 2, 40, 1000), turn(2, 2, 41, 1000), turn(1, 3, 44, 1100), turn(2, 3, 41, 1100)]),
    'llama-server': ok([turn(1, 1, 400, 0), turn(2, 1, 410, 0), turn(1, 2, 40, 1000), turn(2, 2, 41, 1000), turn(1, 3, 44, 1100), turn(2, 3, 41, 1100)]),
  };
  const load = (clients: number, tps: number): LoadRun => ({
    clients, completed: 3 * clients, failed: 0, firstError: null, wallSeconds: 1, tokens: tps, tokensPerSecond: tps,
    perClient: Array.from({ length: clients }, () => ({ p50Ms: 10, p95Ms: 20, n: 60 })),
  });
  const resume: ResumeRun = { build: { ttftMs: 2000, promptTokens: 3010, cachedTokens: 0 }, resume: { ttftMs: 100, promptTokens: 3100, cachedTokens: 3010 }, restoreMs: null, saveMs: null };
  return {
    model: '/models/q30-3l.gguf', threads: 2, ctxSize: 8192, memLimitGiB: null, moeStream: false, cacheMb: null, bmoeWait: null, ompWaitPolicy: null, gompSpinCount: null, llamaBatchInvariant: null, multiColumnDot: null, pauseMs: 0,
    calibration: calibrate(17, 577), probeTokens: { bmoe: 577, 'llama-server': 577 },
    alternating,
    load: [1, 2, 4].map((k) => ({ clients: k, sides: { bmoe: ok(load(k, 50 * k)), 'llama-server': ok(load(k, 25 * k)) } })),
    resume: { bmoe: ok(resume), 'llama-server': { flags: ['-np', '1'], result: null, error: 'llama-server restored no tokens', peakMiB: null } },
  };
}

describe('the report', () => {
  it('takes follow-up turns over the first, per conversation, and the mean gaps over clients', () => {
    const turns = fakeResult().alternating!.bmoe.result!;
    expect(followUpRatio(turns, 2)).toBeCloseTo((40 / 800 + 41 / 820) / 2, 9);
    expect(followUpRatio(turns, 4)).toBeNull();
    expect(meanGaps({ ...fakeResult().load![0]!.sides.bmoe.result!, perClient: [{ p50Ms: 2, p95Ms: 4, n: 3 }, { p50Ms: 4, p95Ms: 8, n: 3 }, { p50Ms: 0, p95Ms: 0, n: 0 }] })).toEqual({ p50Ms: 3, p95Ms: 6 });
  });

  it('has a row for every turn, every client count and the resume, with both sides and the ratio', () => {
    const rows = serveBenchRows(fakeResult());
    expect(rows.map((r) => r.row)).toEqual([
      ...[[1, 1], [2, 1], [1, 2], [2, 2], [1, 3], [2, 3]].map(([c, t]) => `(a) conversation ${c}, turn ${t}: TTFT (cached of prompt tokens)`),
      '(a) turn 2 TTFT ÷ turn 1 TTFT (mean of both conversations)',
      '(a) turn 3 TTFT ÷ turn 1 TTFT (mean of both conversations)',
      ...[1, 2, 4].flatMap((k) => [`(b) ${k} client${k === 1 ? '' : 's'}: generated tok/s (all clients)`, `(b) ${k} client${k === 1 ? '' : 's'}: time between tokens p50 / p95 (mean over clients)`]),
      '(c) 3010-token chat sent in one request: TTFT (full prefill)',
      '(c) its next turn after a restart: TTFT (cached of prompt tokens)',
    ]);
    expect(rows[0]).toEqual({ row: rows[0]!.row, bmoe: '800 ms (cached 0 of 1100)', llama: '400 ms (cached 0 of 1100)', ratio: '2.00' });
    expect(rows[2]!.bmoe).toBe('40.0 ms (cached 1000 of 1200)');
    expect(rows[6]!.bmoe).toBe('0.0500');
    expect(rows[8]).toMatchObject({ bmoe: '50.0', llama: '25.0', ratio: '2.00' });
    expect(rows[9]).toMatchObject({ bmoe: '10.0 ms / 20.0 ms', ratio: '1.00 / 1.00' });
    expect(rows.at(-1)).toMatchObject({ bmoe: '100 ms (cached 3010 of 3100; restored from --kv-dir)', llama: 'failed', ratio: '—' });
  });

  it('compares one client through the server with bmoe run --chat measured alike (tokens as received), pair by pair, and with its decodes alone', () => {
    const r: ServeBenchResult = {
      ...fakeResult(),
      runReference: { flags: ['-t', '2'], servedTokensPerSecond: [60, 66, 63], deliveredTokensPerSecond: [64, 65, 61], medianTokensPerSecond: [70, 72, 68], error: null },
    };
    const rows = serveBenchRows(r).filter((x) => x.row.startsWith('(b) 1 client and `bmoe run --chat`') || x.row.startsWith('(b) 1 client, the same pairs'));
    expect(rows).toHaveLength(2);
    expect(rows[0]!.row).toContain('3 pairs taking turns (ABBA)');
    // the cells give the medians; the ratio is the median of the pairs' ratios (66/65), not of the medians (63/64)
    expect(rows[0]).toMatchObject({ bmoe: 'serve 63.0 tok/s', llama: 'bmoe run 64.0 tok/s', ratio: (66 / 65).toFixed(2) });
    expect(rows[1]).toMatchObject({ bmoe: 'serve 63.0 tok/s', llama: 'bmoe run 70.0 tok/s', ratio: (66 / 72).toFixed(2) });
    const failed = serveBenchRows({ ...r, runReference: { flags: [], servedTokensPerSecond: [], deliveredTokensPerSecond: [], medianTokensPerSecond: [], error: 'boom' } }).find((x) => x.row.startsWith('(b) 1 client and'));
    expect(failed).toMatchObject({ bmoe: '— (failed: boom)', ratio: '—' });
  });

  it('writes the setup, the table, the flags and the errors, and peaks only under a memory limit', () => {
    const r = fakeResult();
    const md = serveBenchReport(r, 'bmoe-bench serve --model q30-3l.gguf');
    expect(md).toMatch(/^## bmoe serve vs llama-server\n\n`bmoe-bench serve --model q30-3l.gguf`\n/);
    expect(md).toContain('| row | bmoe serve | llama-server | bmoe / llama-server |');
    expect(md).toContain('Model q30-3l.gguf, 2 threads, 8192 tokens of context per slot');
    expect(md).toContain('1.400 tokens/word (the probe: 577 prompt tokens on bmoe, 577 on llama-server)');
    expect(md).toContain("Waiting: bmoe's barrier policy auto (BMOE_WAIT not set");
    expect(md).toContain('Kernels: llama-server with LLAMA_BATCH_INVARIANT=0 and GGML_CPU_MULTI_COLUMN_DOT=0, upstream');
    // A setting the user made goes to both servers and is said so; the other is still defaulted for llama-server.
    expect(serveBenchReport({ ...r, multiColumnDot: '1' })).toContain("Kernels: llama-server with LLAMA_BATCH_INVARIANT=0, upstream's kernels");
    expect(serveBenchReport({ ...r, multiColumnDot: '1' })).toContain('GGML_CPU_MULTI_COLUMN_DOT=1 as set for both servers.');
    expect(serveBenchReport({ ...r, llamaBatchInvariant: '1', multiColumnDot: '0' })).toContain('Kernels: LLAMA_BATCH_INVARIANT=1, GGML_CPU_MULTI_COLUMN_DOT=0 as set for both servers.');
    expect(md).toContain('OMP_WAIT_POLICY not set for llama-server');
    expect(md).toContain('No memory limit; both servers repack weights');
    const set = serveBenchReport({ ...r, bmoeWait: 'upstream', ompWaitPolicy: 'active' });
    expect(set).toContain("Waiting: bmoe's barrier policy BMOE_WAIT=upstream; OpenMP waiting as set for both: OMP_WAIT_POLICY=active.");
    expect(serveBenchReport({ ...r, memLimitGiB: 2 })).toContain('bmoe as its settings rule chooses (a resident model bigger than memory: no repacked copy), llama-server maps the file (-nr');
    expect(md).toContain('- (b) 4: `bmoe serve MODEL -t 2` · `llama-server -m MODEL -t 2`');
    expect(md).toContain('- (c) llama-server: llama-server restored no tokens');
    expect(md).not.toContain('peak memory');
    const limited = serveBenchRows({ ...r, memLimitGiB: 2 });
    expect(limited.filter((x) => x.row.includes('peak memory of the cgroup (limit 2 GiB)'))).toHaveLength(5);
    expect(failedSides(r)).toEqual(['(c) llama-server']);
  });
});

describe('row (b) in interleaved rounds', () => {
  const pair = (b: number | null, l: number): SidePair<LoadRun> => {
    const base = fakeResult().load![2]!.sides;
    return {
      bmoe: b === null ? { flags: ['-t', '2'], result: null, error: `bmoe round failed`, peakMiB: null } : ok({ ...base.bmoe.result!, tokensPerSecond: b }),
      'llama-server': ok({ ...base['llama-server'].result!, tokensPerSecond: l }),
    };
  };

  it('shows the round whose ratio is the median, every round, and the median of the ratios', () => {
    // Ratios 0.8, 1.1, 1.0: the median round is the third, whatever its raw rates.
    const rounds = [pair(80, 100), pair(88, 80), pair(90, 90)];
    expect(medianRound(rounds)).toBe(rounds[2]);
    const oneRated = [pair(null, 90), pair(50, 100)];
    expect(medianRound(oneRated)).toBe(oneRated[1]);
    const r: ServeBenchResult = { ...fakeResult(), load: [{ clients: 4, sides: medianRound(rounds), rounds }] };
    const rows = serveBenchRows(r).filter((x) => x.row.startsWith('(b) 4 clients'));
    expect(rows.map((x) => x.row)).toEqual([
      '(b) 4 clients: generated tok/s (all clients)',
      '(b) 4 clients: time between tokens p50 / p95 (mean over clients)',
      "(b) 4 clients: generated tok/s in each of 3 interleaved rounds (the two rows above: the median round); ratio = the median of the rounds' ratios",
    ]);
    expect(rows[0]).toMatchObject({ bmoe: '90.0', llama: '90.0', ratio: '1.00' });
    expect(rows[2]).toMatchObject({ bmoe: '80.0, 88.0, 90.0', llama: '100.0, 80.0, 90.0', ratio: '1.00' });
  });

  it('names a failed round in the errors and in the failed sides, and gives the flags once', () => {
    const rounds = [pair(80, 100), pair(null, 90)];
    const r: ServeBenchResult = { ...fakeResult(), resume: undefined, load: [{ clients: 4, sides: medianRound(rounds), rounds }] };
    expect(medianRound(rounds)).toBe(rounds[0]);
    const md = serveBenchReport(r);
    expect(md).toContain('- (b) 4, round 2 bmoe: bmoe round failed');
    expect(md.match(/^- \(b\) 4: /gm)).toHaveLength(1);
    expect(serveBenchRows(r).find((x) => x.row.includes('interleaved rounds'))).toMatchObject({ bmoe: '80.0, failed', ratio: '0.80' });
    expect(failedSides(r)).toEqual(['(b) 4, round 2 bmoe']);
  });
});

describe('the command', () => {
  it('parses rows and client counts', () => {
    expect(serveRows('c, a')).toEqual(['a', 'c']);
    expect(() => serveRows('a,d')).toThrow(/unknown row d; rows: a, b, c/);
    expect(clientCounts('4,1,2,2')).toEqual([1, 2, 4]);
    expect(() => clientCounts('0')).toThrow(/from 1 to 64/);
    expect(() => clientCounts('1.5')).toThrow(/from 1 to 64/);
  });

  it('refuses --cache-mb without --moe-stream and a missing model', async () => {
    const program = new Command('bmoe-bench').exitOverride();
    registerServeBench(program, () => ['bmoe']);
    program.commands[0]?.exitOverride().configureOutput({ writeErr: () => undefined });
    await expect(program.parseAsync(['serve', '--model', 'x.gguf', '--cache-mb', '8'], { from: 'user' })).rejects.toThrow(/--cache-mb requires --moe-stream/);
    await expect(program.parseAsync(['serve', '--model', '/nonexistent/x.gguf'], { from: 'user' })).rejects.toThrow(/no such file/);
    // --no-repack is an option of its own (bmoe serve then gets --no-repack); --repack is gone (the default).
    await expect(program.parseAsync(['serve', '--model', '/nonexistent/x.gguf', '--no-repack'], { from: 'user' })).rejects.toThrow(/no such file/);
    await expect(program.parseAsync(['serve', '--model', 'x.gguf', '--rows', 'z'], { from: 'user' })).rejects.toThrow(/unknown row z/);
  });
});
