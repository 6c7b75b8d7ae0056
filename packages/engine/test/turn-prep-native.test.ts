// Turn preparation (SessionOptions.prepareTurns) through the native addon on generated fixtures:
// after a chat turn the session evaluates the answer as the template renders it back and the next
// message's header, so the next turn evaluates only its new message, and its answer is the one a
// session without preparation gives. It runs in the background beside another session's request,
// which gets the tokens it gets alone; save() and reset() while it runs wait for it. Two
// architectures (Qwen3's format, gpt-oss's harmony, whose past answers drop their analysis
// channel), two model seeds, three conversations.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild, type ChatMessage, type Model, type Session } from '../src/index.js';
import { commonPrefix } from '../src/prefix.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

const FIXTURES = [
  { preset: 'tiny-qwen3moe', seed: 1 },
  { preset: 'tiny-qwen3moe', seed: 2 },
  { preset: 'tiny-gpt-oss', seed: 7 },
] as const;
const QUESTIONS = ['Tell me about the river in winter.', 'What is 12 times 7?', 'Name three colours.'];
const OPTS = { maxTokens: 12 };

/** Until the session's cached tokens stop changing (its preparation ended), at most 20 s. */
async function settled(s: Session): Promise<readonly number[]> {
  let last = -1;
  for (let i = 0; i < 400; i++) {
    const n = s.cachedTokens.length;
    if (n === last && i > 2) break;
    last = n;
    await new Promise((r) => setTimeout(r, 50));
  }
  return s.cachedTokens;
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-turn-prep-'));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.runIf(nativeAvailable).each(FIXTURES)('turn preparation on $preset seed $seed (native)', ({ preset, seed }) => {
  let model: Model;
  beforeAll(async () => {
    const path = join(dir, `${preset}-${seed}.gguf`);
    await makeModel({ preset, seed, out: path });
    model = await loadModel(path, { threads: 2, contextSize: 2048 });
  });
  afterAll(async () => model?.close());

  it('the next turn evaluates only its new message, and answers as without preparation', async () => {
    for (const [i, question] of QUESTIONS.entries()) {
      await using warm = model.createSession({ prepareTurns: true, system: `You keep the harbour light ${i}.` });
      await using plain = model.createSession({ system: `You keep the harbour light ${i}.` });
      const first = await warm.chat(question, OPTS).result;
      const plainFirst = await plain.chat(question, OPTS).result;
      expect(first.tokens).toEqual(plainFirst.tokens);
      const prepared = await settled(warm);
      // What any next message shares with this one: everything before its text.
      const history: ChatMessage[] = [{ role: 'system', content: `You keep the harbour light ${i}.` }, ...warm.history];
      const next = await model.promptTokens([...history, { role: 'user', content: 'And then?' }], OPTS);
      const other = await model.promptTokens([...history, { role: 'user', content: 'Something else entirely.' }], OPTS);
      const shared = commonPrefix(next, other);
      expect(commonPrefix(prepared, next), `conversation ${i}: prepared prefix`).toBeGreaterThanOrEqual(shared - 1);

      const second = await warm.chat('And then?', OPTS).result;
      const plainSecond = await plain.chat('And then?', OPTS).result;
      expect(second.tokens, `conversation ${i}: the answer`).toEqual(plainSecond.tokens);
      // Without preparation the answer's last token and the next header are evaluated again at least.
      expect(second.promptTokensReused, `conversation ${i}: reused`).toBeGreaterThan(plainSecond.promptTokensReused);
      expect(second.promptTokens - second.promptTokensReused).toBeLessThanOrEqual(next.length - shared + 1);
    }
  });

  it('runs in the background beside another session, which answers as alone; the next turn evaluates only its new message', async () => {
    const [a, b] = model.createSessions(2, { prepareTurns: true });
    try {
      const first = await a!.chat(QUESTIONS[0]!, OPTS).result;
      // Another session's request at once: its prompt goes first, its decode steps alternate with
      // the preparation's chunks, and its tokens are those it gets alone.
      const ask: ChatMessage[] = [{ role: 'user', content: QUESTIONS[1]! }];
      const beside = await b!.generate(ask, { maxTokens: 24 }).result;
      await using solo = model.createSession();
      expect(beside.tokens).toEqual((await solo.generate(ask, { maxTokens: 24 }).result).tokens);
      const prepared = await settled(a!);
      expect(prepared.length, 'the preparation ran').toBeGreaterThan(first.promptTokens);
      // A's conversation goes on from the prepared turn, with the answer a fresh session gives.
      const again = await a!.chat('And then?', OPTS).result;
      expect(again.promptTokensReused).toBe(Math.min(prepared.length, again.promptTokens - 2));
      await using fresh = model.createSession();
      fresh.setHistory(a!.history.slice(0, 2));
      const cold = await fresh.chat('And then?', OPTS).result;
      expect(again.tokens).toEqual(cold.tokens);
    } finally {
      await Promise.all([a!.close(), b!.close()]);
    }
  });

  it('save() and reset() during a preparation wait for it; the session stays usable', async () => {
    await using s = model.createSession({ prepareTurns: true });
    await s.chat(QUESTIONS[2]!, OPTS).result;
    await new Promise((r) => setImmediate(r));
    const saved = await s.save(join(dir, `${preset}-${seed}.state`));
    expect(saved.tokens).toBeGreaterThan(0);
    await s.chat('And then?', OPTS).result;
    await new Promise((r) => setImmediate(r));
    s.reset();
    const fresh = await s.chat(QUESTIONS[0]!, OPTS).result;
    expect(fresh.promptTokensReused).toBe(0);
    await using other = model.createSession();
    expect(fresh.tokens).toEqual((await other.chat(QUESTIONS[0]!, OPTS).result).tokens);
  });
});
