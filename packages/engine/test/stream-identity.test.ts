// The contract of expert streaming: with the lossy knobs off, every streaming configuration gives
// the same tokens and the same logits, bit for bit, as the same model loaded resident (both with
// the default, repacking on, like `llama-completion`; test/repack in @bmoe/cli covers both ways). Run on the tiny fixture of every architecture, with a
// multi-token prompt followed by 40 decoded tokens, across cache sizes, lanes, serial / overlapped /
// auto, prefetch, route-ahead and dense-weight modes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inspectModel, loadModel, type LoadOptions, type ModelHeaderInfo, type StreamOptions } from '../src/index.js';

const MiB = 1024 * 1024;
const PROMPT = 'Once upon a time, in a kitchen full of birds and stones, the mother looked at her hands and said';
const N = 40;

interface Run {
  tokens: number[];
  logits: Float32Array[];
  readBytes: number;
  hits: number;
  misses: number;
  /** The `overlapped` metric of each decode after the prompt's. */
  overlapped: number[];
  /** The `ahead_on` metric of each decode after the prompt's. */
  aheadOn: number[];
}

async function generate(path: string, options: LoadOptions): Promise<Run> {
  const model = await loadModel(path, { threads: 2, contextSize: 512, ...options });
  try {
    const session = model.createSession();
    const gen = session.generate(PROMPT, { maxTokens: N, logits: true });
    const logits: Float32Array[] = [];
    for await (const ev of gen) if (ev.logits) logits.push(ev.logits);
    const res = await gen.result;
    await session.close();
    return {
      tokens: res.tokens,
      logits,
      readBytes: res.metrics.reduce((a, m) => a + m.readBytes, 0),
      hits: res.metrics.reduce((a, m) => a + m.expertHits, 0),
      misses: res.metrics.reduce((a, m) => a + m.expertMisses, 0),
      overlapped: res.metrics.slice(1).map((m) => m.overlapped),
      aheadOn: res.metrics.slice(1).map((m) => m.aheadOn),
    };
  } finally {
    await model.close();
  }
}

function sameBits(a: Float32Array[], b: Float32Array[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    return y !== undefined && Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(y.buffer, y.byteOffset, y.byteLength));
  });
}

for (const preset of ['tiny-qwen3moe', 'tiny-gpt-oss', 'tiny-gemma4']) {
  describe(`streaming is byte-identical to resident: ${preset}`, () => {
    let dir: string;
    let path: string;
    let header: ModelHeaderInfo;
    let resident: Run;
    let residentPlain: Run | undefined;
    let cacheMid = 0;
    let cacheAll = 0;

    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), `bmoe-stream-${preset}-`));
      path = join(dir, `${preset}.gguf`);
      await makeModel({ preset, out: path });
      header = await inspectModel(path);
      // Between one token's working set and the whole expert set; and one that holds everything.
      cacheMid = Math.ceil((header.workingSetBytes * 1.5) / MiB) + 1;
      cacheAll = Math.ceil((header.expertBytes * 1.5) / MiB) + 2;
      resident = await generate(path, {});
      expect(resident.tokens.length).toBe(N);
      expect(new Set(resident.tokens).size).toBeGreaterThan(4);
    });

    afterAll(async () => {
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    // Serial and overlapped configurations are forced (overlap false / true) and route-ahead is off
    // in them unless they name it (the defaults, 'auto', mix both ways while they measure): each
    // says what it tests. The defaults run too.
    const serial = { overlap: false, routeAhead: false } as const;
    const overlapped = { overlap: true, routeAhead: false } as const;
    const configs: Array<[string, () => StreamOptions]> = [
      ['cache 0, 1 lane, serial', () => ({ cacheMb: 0, ioThreads: 1, ...serial })],
      ['cache 0, 4 lanes, overlap', () => ({ cacheMb: 0, ioThreads: 4, ...overlapped })],
      ['cache between working set and total, 4 lanes, serial', () => ({ cacheMb: cacheMid, ioThreads: 4, ...serial })],
      ['cache between, 1 lane, overlap, prefetch 2', () => ({ cacheMb: cacheMid, ioThreads: 1, prefetch: 2, ...overlapped })],
      ['cache between, 4 lanes, serial, prefetch 4', () => ({ cacheMb: cacheMid, ioThreads: 4, prefetch: 4, ...serial })],
      ['cache holding everything, 1 lane, serial', () => ({ cacheMb: cacheAll, ioThreads: 1, ...serial })],
      ['cache holding everything, 4 lanes, overlap, dense weights anon', () => ({ cacheMb: cacheAll, ioThreads: 4, denseWeights: 'anon', ...overlapped })],
      ['cache 0, buffered reads, serial', () => ({ cacheMb: 0, ioThreads: 2, odirect: false, ...serial })],
      ['cache between, 4 lanes, serial, route-ahead', () => ({ cacheMb: cacheMid, ioThreads: 4, overlap: false, routeAhead: true })],
      ['cache 0, 4 lanes, overlap, route-ahead', () => ({ cacheMb: 0, ioThreads: 4, overlap: true, routeAhead: true })],
      // The defaults: overlap and route-ahead measured (auto's probe goes every way), route-ahead only where faster.
      ['the defaults (overlap auto, route-ahead auto): cache 0', () => ({ cacheMb: 0 })],
      ['the defaults (overlap auto, route-ahead auto): cache between', () => ({ cacheMb: cacheMid })],
      // The fallback without patch 0002's redirection: experts mapped in place at their addresses.
      ['in-place mapping: cache between, 2 lanes, serial, prefetch 2', () => ({ cacheMb: cacheMid, ioThreads: 2, prefetch: 2, ...serial })],
      ['in-place mapping: cache 0, 4 lanes, overlap', () => ({ cacheMb: 0, ioThreads: 4, ...overlapped })],
    ];

    for (const [name, cfg] of configs) {
      it(`${name}: same tokens, same logits`, async () => {
        const canonical = name.startsWith('in-place');
        // The in-place fallback cannot stream repacked experts (they live outside the mapping): it
        // and its resident reference run without repacking.
        const plain = canonical ? { repack: false } : {};
        const want = canonical ? (residentPlain ??= await generate(path, plain)) : resident;
        if (canonical) process.env.BMOE_STREAM_CANONICAL = '1';
        const s = await generate(path, { ...plain, stream: { moeStream: true, ...cfg() } }).finally(() => {
          delete process.env.BMOE_STREAM_CANONICAL;
        });
        expect(s.tokens).toEqual(want.tokens);
        expect(sameBits(s.logits, want.logits)).toBe(true);
        expect(s.readBytes).toBeGreaterThan(0);
        expect(s.misses).toBeGreaterThan(0);
        // Each decode went the way asked; auto's probe went both ways.
        const { overlap, routeAhead } = cfg();
        const ways = (v: number[]): number[] => [...new Set(v)].sort();
        const asked = (x: boolean | 'auto' | undefined): number[] => (x === true ? [1] : x === false ? [0] : [0, 1]);
        expect(ways(s.overlapped)).toEqual(asked(overlap));
        expect(ways(s.aheadOn)).toEqual(asked(routeAhead));
      });
    }

    it('a cache holding everything reads each expert once and then only hits', async () => {
      const s = await generate(path, { stream: { moeStream: true, cacheMb: cacheAll } });
      expect(s.tokens).toEqual(resident.tokens);
      // Reads never exceed the expert bytes (plus page rounding per slice).
      expect(s.readBytes).toBeLessThanOrEqual(header.expertBytes * 1.5);
      expect(s.hits).toBeGreaterThan(s.misses);
    });
  });
}
