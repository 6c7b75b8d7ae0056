// The `edge-stream0` row of `bmoe-bench targets`: BigMoeOnEdge's bmoe-cli on the same file with
// stream0's settings. Its end-of-run lines (the format its cli/main.cpp prints), its argv, the run
// plan that interleaves it with stream0, and the compute comparison the report makes.
import { describe, expect, it } from 'vitest';
import { nonIoSecondsPerToken, parseEdgeOutput } from '../src/edge-output.js';
import { DEFAULT_ROWS, roundPlan, rowArgv, targetRows, type RowResult } from '../src/targets.js';
import { edgeTargets } from '../src/targets-report.js';

// What bmoe-cli prints after the answer (stdout), one serial cache-0 run.
const EDGE_STDOUT = [
  'The quick brown fox jumps',
  '',
  'generation: 48 tokens, 0.151 s/token (6.623 tok/s)',
  'compute: 61.2% CPU occupancy (0.1849 cpu-s/token over 2 threads), 0.00 major faults/token',
  'prefill: 5 tokens, 0.412 s (12.1 tok/s) | model load 1.204 s | TTFT 1.616 s',
  'moe-stream: read 7804.1 MiB (162.59 MiB/token), decode 0.151 s/token (compute 0.024 + cache mgmt 0.002 + flash I/O 0.125 s/token, 1301 MiB/s)',
  'moe-cache: 0.0% hit, resident 0.0 MiB',
].join('\n');

describe("BigMoeOnEdge's end-of-run lines", () => {
  it('gives decode, compute, cache management and flash I/O per token', () => {
    expect(parseEdgeOutput(EDGE_STDOUT)).toEqual({
      tokens: 48,
      secondsPerToken: 0.151,
      tokensPerSecond: 6.623,
      mibPerToken: 162.59,
      computeSecondsPerToken: 0.024,
      mgmtSecondsPerToken: 0.002,
      ioSecondsPerToken: 0.125,
    });
    const run = parseEdgeOutput(EDGE_STDOUT)!;
    expect(nonIoSecondsPerToken(run)).toBeCloseTo(0.026, 9);
  });

  it('is null when a line is missing or bmoe’s own format is given (a failed run, a changed format)', () => {
    expect(parseEdgeOutput(EDGE_STDOUT.replace(/^moe-stream:.*$/m, ''))).toBeNull();
    expect(parseEdgeOutput(EDGE_STDOUT.replace(/^generation:.*$/m, ''))).toBeNull();
    expect(parseEdgeOutput('generation: 48 tokens, 0.1510 s/token, 6.62 tok/s (prompt 5 tokens in 0.412 s)\nmoe-stream: read 7804.1 MiB, 162.6 MiB/token, decode 0.1510 s/token = compute 0.0260 + flash I/O 0.1250 (stall 0.0000), 1301 MiB/s')).toBeNull();
  });
});

describe('the edge-stream0 row', () => {
  const o = { model: 'm.gguf', prompt: 'Hi', n: 8, threads: 2, bmoe: ['bmoe'], edgeCli: '/peer/bmoe-cli' };

  it("runs the peer's bmoe-cli with stream0's streaming settings, greedy, limited; not by default", () => {
    const [edge] = targetRows(100, 200, 4, ['edge-stream0']);
    expect(edge?.limited).toBe(true);
    expect(rowArgv(o, edge!, '/tmp/x.csv')).toEqual(['/peer/bmoe-cli', '-m', 'm.gguf', '-p', 'Hi', '-n', '8', '-t', '2', '--temp', '0', '--moe-stream', '--io-threads', '4', '--cache-mb', '0']);
    expect(DEFAULT_ROWS).not.toContain('edge-stream0');
    expect(targetRows(100, 200, 4).map((r) => r.key)).not.toContain('edge-stream0');
  });

  it('runs interleaved with stream0, the order reversed every other round (the host cache holds what the run before read)', () => {
    expect(roundPlan(['edge-stream0', 'stream0', 'mmap'], 3)).toEqual([
      ['mmap', 1],
      ['stream0', 1],
      ['edge-stream0', 1],
      ['edge-stream0', 2],
      ['stream0', 2],
      ['stream0', 3],
      ['edge-stream0', 3],
    ]);
  });

  it('compares the time outside flash I/O round by round (goal ≤ 1.0) and the decode rate (reported)', () => {
    const bmoe = { key: 'stream0', name: 's', limited: true, ok: true, summary: {} as RowResult['summary'], roundSecondsPerToken: [0.15, 0.2, 0.1], roundNonIoSecondsPerToken: [0.024, 0.03, 0.02] } as RowResult;
    const edge = { key: 'edge-stream0', name: 'e', limited: true, ok: true, edge: parseEdgeOutput(EDGE_STDOUT)!, roundSecondsPerToken: [0.16, 0.19, 0.12], roundNonIoSecondsPerToken: [0.026, 0.025, 0.025] } as RowResult;
    const [compute, decode] = edgeTargets([bmoe, edge]);
    // Per round 0.923, 1.2, 0.8: the median 0.923.
    expect(compute?.[1]).toBeCloseTo(0.024 / 0.026, 9);
    expect(compute?.[2]).toBe('≤ 1.0');
    expect(compute?.[3]).toBe(true);
    expect(compute?.[0]).toContain('median of 3 per-round ratios: 0.923, 1.200, 0.800');
    expect(decode?.[1]).toBeCloseTo(0.15 / 0.16, 9);
    expect(decode?.[3]).toBeUndefined();
    expect(edgeTargets([bmoe])).toEqual([]);
    expect(edgeTargets([bmoe, { ...edge, ok: false }])).toEqual([]);
  });
});
