// Sessions decoded together (Model.createSessions: one context, one sequence each, one batch per
// step) and session state on disk (save / load / createSession({ state })), through the native
// addon on generated fixtures. Contracts checked over two architectures, two model seeds and
// several sampling seeds at temperature 1: nothing rests on one fixture's greedy output.
import { execFileSync } from 'node:child_process';
import { readFile, writeFile, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { BmoeError, inspectModel, loadModel, nativeBuild, type GenerateOptions, type Model, type Session } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

const PROMPTS = ['The quick brown fox', 'Once upon a time in a land', 'Numbers: 1 2 3 4 5 6 7', 'A B C'];
const FIXTURES = [
  { preset: 'tiny-qwen3moe', seed: 1 },
  { preset: 'tiny-gpt-oss', seed: 7 },
] as const;

interface Run {
  tokens: number[];
  logits: Float32Array[];
  reused: number;
}

async function run(session: Session, prompt: string, opts: GenerateOptions): Promise<Run> {
  const gen = session.generate(prompt, { ...opts, logits: true });
  const logits: Float32Array[] = [];
  for await (const ev of gen) if (ev.logits) logits.push(ev.logits);
  const r = await gen.result;
  return { tokens: r.tokens, logits, reused: r.promptTokensReused };
}

/**
 * Sessions decoded together get the tokens they get alone. Their logits are compared bit for bit
 * only where the batches are the same (one session alone in a context of several): a step of
 * several rows may take another ggml kernel than a one-row step (tinyBLAS vs the dot-product
 * loop, as in llama-server's batches), so the last bits may differ, and an MoE router may then
 * flip a near tie between two experts (measured: 1e-6 apart, then 0.12 after such a flip, with
 * the same tokens). A session mixed up with another (a wrong position, another sequence's KV, a
 * wrong logits row) gets other tokens within a step or two.
 */
function sameTokens(a: Run, b: Run, what: string): void {
  expect(a.tokens, what).toEqual(b.tokens);
}

function sameBits(a: Run, b: Run, what: string): void {
  expect(a.tokens, what).toEqual(b.tokens);
  expect(a.logits.length, what).toBe(b.logits.length);
  a.logits.forEach((l, i) => expect(Buffer.from(l.buffer).equals(Buffer.from(b.logits[i]!.buffer)), `${what}: logits of token ${i}`).toBe(true));
}

describe.runIf(nativeAvailable)('sessions decoded together (native)', () => {
  let dir: string;
  const paths: string[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-sessions-'));
    for (const f of FIXTURES) {
      const path = join(dir, `${f.preset}-${f.seed}.gguf`);
      await makeModel({ preset: f.preset, out: path, seed: f.seed });
      paths.push(path);
    }
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const MODES = {
    resident: {},
    'streamed, cache 0': { stream: { moeStream: true, cacheMb: 0 } },
    // Sized per fixture below: one token's working set, less than all the experts.
    'streamed, partial cache': { stream: { moeStream: true, cacheMb: 'partial' } },
  } as const;
  for (const [fi, f] of FIXTURES.entries()) {
    for (const [mode, load] of Object.entries(MODES)) {
      it(`${f.preset}, ${mode}: each of 4 sessions running at once gets the tokens it gets alone, one running alone in the group its bits too (3 sampling seeds, temperature 1)`, async () => {
        const shape = await inspectModel(paths[fi]!);
        const options = 'stream' in load && load.stream.cacheMb === 'partial' ? { stream: { moeStream: true, cacheMb: Math.ceil(shape.workingSetBytes / 2 ** 20) + 1 } } : load;
        const model = await loadModel(paths[fi]!, { threads: 2, contextSize: 512, ...(options as object) });
        try {
          if (mode === 'streamed, partial cache') expect(model.info.stream!.budgetBytes).toBeLessThan(model.info.expertBytes);
          for (const seed of [1, 2, 3]) {
            const opts: GenerateOptions = { maxTokens: 12, temperature: 1, seed };
            const solo = model.createSession();
            const alone: Run[] = [];
            for (const p of PROMPTS) {
              solo.reset();
              alone.push(await run(solo, p, opts));
            }
            await solo.close();
            const group = model.createSessions(4);
            // Two start together; two join a few steps later, while the others generate.
            const first = [run(group[0]!, PROMPTS[0]!, opts), run(group[1]!, PROMPTS[1]!, opts)];
            await new Promise((r) => setTimeout(r, 5));
            const together = await Promise.all([...first, run(group[2]!, PROMPTS[2]!, opts), run(group[3]!, PROMPTS[3]!, opts)]);
            together.forEach((t, i) => sameTokens(t, alone[i]!, `seed ${seed}, session ${i}`));
            // One session of a group, the others idle: the same batches as alone, the same bits.
            group[1]!.reset();
            sameBits(await run(group[1]!, PROMPTS[3]!, opts), alone[3]!, `seed ${seed}, one session of four`);
            await Promise.all(group.map((s) => s.close()));
          }
        } finally {
          await model.close();
        }
      });
    }
  }

  it('streamed with no cache (serial), sessions decoded together read each routed expert once per step for all of them, whichever joined first', async () => {
    const model = await loadModel(paths[0]!, { threads: 2, contextSize: 512, stream: { moeStream: true, cacheMb: 0, overlap: false, routeAhead: false } });
    try {
      // A runs long; B starts once A is generating, so all of B's steps are shared with A's
      // (started at once, one prompt's preparation may finish late enough on a loaded machine that
      // the other has already ended).
      const long: GenerateOptions = { maxTokens: 64 };
      const opts: GenerateOptions = { maxTokens: 24 };
      const misses = (): number => model.streamInfo()!.totalMisses;
      const solo = model.createSession();
      let m0 = misses();
      await solo.generate(PROMPTS[0]!, long).result;
      solo.reset();
      await solo.generate(PROMPTS[1]!, opts).result;
      const alone = misses() - m0;
      await solo.close();
      // B is on the lower sequence and joins second: a step's batch then holds A's token before
      // B's, and is decoded as one micro-batch only when put in sequence order (llama.cpp cuts a
      // batch whose sequences do not follow each other into several, each reading its experts).
      const [b, a] = model.createSessions(2);
      m0 = misses();
      const genA = a!.generate(PROMPTS[0]!, long);
      const iter = genA[Symbol.asyncIterator]();
      await iter.next(); // A has its first token: it is in the decode loop
      const resB = b!.generate(PROMPTS[1]!, opts).result;
      for (let r = await iter.next(); !r.done; r = await iter.next());
      await Promise.all([genA.result, resB]);
      const together = misses() - m0;
      // Every expert a step routes to is read once, whichever sessions route to it: the union.
      // (Serial reads, no route-ahead: its guesses are read ahead, not counted as misses, and it
      // works on one-token steps only.)
      expect(together).toBeLessThan(alone);
      await Promise.all([a!.close(), b!.close()]);
    } finally {
      await model.close();
    }
  });

  it('aborting one of four sessions leaves the others their tokens; they reuse their prefix next turn', async () => {
    const model = await loadModel(paths[0]!, { threads: 2, contextSize: 512 });
    try {
      const opts: GenerateOptions = { maxTokens: 16, temperature: 1, seed: 5 };
      const solo = model.createSession();
      const alone: Run[] = [];
      for (const p of PROMPTS.slice(1)) {
        solo.reset();
        alone.push(await run(solo, p, opts));
      }
      await solo.close();
      const group = model.createSessions(4);
      const ac = new AbortController();
      const genA = group[0]!.generate(PROMPTS[0]!, { maxTokens: 200, signal: ac.signal });
      const others = PROMPTS.slice(1).map((p, i) => run(group[i + 1]!, p, opts));
      let seen = 0;
      for await (const _ of genA) if (++seen === 3) ac.abort();
      expect((await genA.result).stopReason).toBe('abort');
      (await Promise.all(others)).forEach((r, i) => sameTokens(r, alone[i]!, `session ${i + 1} beside the aborted one`));
      // A conversation goes on: its next prompt starts with what the session holds.
      const b = group[1]!;
      expect(b.cachedTokens.length).toBeGreaterThan(0);
      const text = (await b.generate(PROMPTS[1]!, opts).result).text;
      const next = await b.generate(PROMPTS[1]! + text + ' and', { maxTokens: 2 }).result;
      expect(next.promptTokensReused).toBeGreaterThan(0);
      expect(() => model.createSessions(0)).toThrow(BmoeError);
      await Promise.all(group.map((s) => s.close()));
    } finally {
      await model.close();
    }
  });
});

describe.runIf(nativeAvailable)('session state on disk (native)', () => {
  let dir: string;
  let pathA: string;
  let pathB: string;
  let model: Model;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-state-'));
    pathA = join(dir, 'a.gguf');
    pathB = join(dir, 'b.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: pathA, seed: 1 });
    await makeModel({ preset: 'tiny-qwen3moe', out: pathB, seed: 2 }); // same shape, other weights
    model = await loadModel(pathA, { threads: 2, contextSize: 512 });
  });

  afterAll(async () => {
    await model?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('a saved chat resumes in a new session: history, KV reuse, and the same next answer as the original (3 seeds)', async () => {
    for (const seed of [1, 2, 3]) {
      const opts: GenerateOptions = { maxTokens: 10, temperature: 1, seed };
      const original = model.createSession({ system: 'Be brief.' });
      await original.chat('Hello there', opts).result;
      await original.chat('Tell me more', opts).result;
      const file = join(dir, `chat-${seed}.kv`);
      const saved = await original.save(file);
      expect(saved.tokens).toBe(original.cachedTokens.length);
      expect(saved.bytes).toBe((await stat(file)).size);
      const expected = await original.chat('And then?', opts).result;
      await original.close();

      // Without a system message of its own, the session takes the saved one.
      const resumed = model.createSession({ state: file });
      expect(resumed.history.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
      const got = await resumed.chat('And then?', opts).result;
      expect(got.tokens).toEqual(expected.tokens);
      // Only the new turn is evaluated: the saved conversation is in the KV cache, as it was in
      // the original session's.
      expect(got.promptTokensReused).toBe(expected.promptTokensReused);
      expect(got.promptTokensReused).toBeGreaterThan(saved.tokens / 2);
      await resumed.close();
    }
  });

  it('refuses a state of another model, another context size, a damaged, cut, endless or oversized file, naming the file; nothing is half-loaded', async () => {
    const s = model.createSession();
    await s.generate('The quick brown fox', { maxTokens: 4 }).result;
    const file = join(dir, 'base.kv');
    await s.save(file);

    const other = await loadModel(pathB, { threads: 2, contextSize: 512 });
    try {
      const e = thrownSync(() => other.createSession({ state: file }));
      expect(e.code).toBe('E_STATE');
      expect(e.message).toContain(file);
      expect(e.message).toContain('another model (a.gguf)');
    } finally {
      await other.close();
    }
    const e2 = thrownSync(() => model.createSession({ contextSize: 256, state: file }));
    expect(e2.code).toBe('E_STATE');
    expect(e2.message).toContain('contextSize 512');

    const bytes = await readFile(file);
    const damaged = Buffer.from(bytes);
    damaged[damaged.length - 40]! ^= 0xff;
    await writeFile(join(dir, 'damaged.kv'), damaged);
    await writeFile(join(dir, 'cut.kv'), bytes.subarray(0, bytes.length - 100));
    await writeFile(join(dir, 'junk.kv'), 'not a state');
    execFileSync('mkfifo', [join(dir, 'fifo.kv')]); // opening it to read would wait forever
    // A valid header whose state claims far more bytes than any sequence of its tokens can hold.
    const metaLen = bytes.readUInt32LE(8);
    const nTok = bytes.readUInt32LE(12 + metaLen);
    const claim = Buffer.from(bytes.subarray(0, 16 + metaLen + 4 * nTok + 8));
    claim.writeBigUInt64LE(1n << 50n, 16 + metaLen + 4 * nTok);
    await writeFile(join(dir, 'claims.kv'), claim);

    // A session holding a conversation keeps it when a load fails.
    const keep = model.createSession();
    await keep.chat('Hello there', { maxTokens: 4 }).result;
    const held = keep.cachedTokens;
    for (const [name, why] of [
      ['damaged.kv', 'damaged'],
      ['cut.kv', 'cut short'],
      ['junk.kv', 'not a bmoe KV state'],
      ['missing.kv', 'No such file'],
      ['fifo.kv', 'not a regular file'],
      ['/dev/zero', 'not a regular file'],
      ['claims.kv', 'claims'],
    ] as const) {
      const p = name.startsWith('/') ? name : join(dir, name);
      const err = await keep.load(p).then(() => null, (x: unknown) => x as BmoeError);
      expect(err, name).toBeInstanceOf(BmoeError);
      expect(err!.code).toBe('E_STATE');
      expect(err!.message).toContain(p);
      expect(err!.message).toContain(why);
      expect(keep.cachedTokens).toEqual(held);
      expect(keep.history.length).toBe(2);
    }
    // A damaged file given at creation: the session is empty and its first generation says why.
    const fresh = model.createSession({ state: join(dir, 'damaged.kv') });
    const err = await fresh.generate('hi', { maxTokens: 2 }).result.then(() => null, (x: unknown) => x as BmoeError);
    expect(err?.code).toBe('E_STATE');
    expect(fresh.history).toEqual([]);
    const after = await fresh.generate('hi', { maxTokens: 2 }).result;
    expect(after.promptTokensReused).toBe(0);
    await Promise.all([s.close(), keep.close(), fresh.close()]);
  });

  it('save: nothing to save, an unwritable path, and a running generation are one-line errors that leave no file', async () => {
    const s = model.createSession();
    expect(((await s.save(join(dir, 'empty.kv')).catch((e: BmoeError) => e)) as BmoeError).code).toBe('E_STATE');
    await s.generate('The quick brown fox', { maxTokens: 2 }).result;
    const bad = join(dir, 'no-such-dir', 'x.kv');
    const e = (await s.save(bad).catch((x: BmoeError) => x)) as BmoeError;
    expect(e.code).toBe('E_STATE');
    expect(e.message).toContain('no-such-dir');
    const gen = s.generate('The quick brown fox jumps', { maxTokens: 50 });
    expect(thrownSync(() => void s.save(join(dir, 'busy.kv'))).code).toBe('E_BUSY');
    await gen.result;
    await expect(stat(join(dir, 'empty.kv'))).rejects.toThrow();
    await expect(stat(join(dir, 'busy.kv'))).rejects.toThrow();
    await s.close();
  });
});

function thrownSync(fn: () => unknown): BmoeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof BmoeError) return err;
    throw err;
  }
  throw new Error('expected a BmoeError');
}
