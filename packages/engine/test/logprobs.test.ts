// Log-probabilities (GenerateOptions.logprobs / promptLogprobs): the model's distribution at each
// position, as llama-server reports n_probs — the log-softmax of the raw logits, before sampling —
// the same resident and streamed, and a prompt scored position by position agrees with the
// generation that wrote it. Skipped while the addon is not built (a failure under CI).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { loadModel, nativeBuild, type GenerateOptions, type Model, type TokenEvent } from '../src/index.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());

let dir: string;
let path: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-engine-logprobs-'));
  path = join(dir, 'tiny-qwen3moe.gguf');
  await makeModel({ preset: 'tiny-qwen3moe', out: path });
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

function logSoftmax(logits: Float32Array, id: number): number {
  let max = -Infinity;
  for (const x of logits) max = Math.max(max, x);
  let sum = 0;
  for (const x of logits) sum += Math.exp(x - max);
  return logits[id]! - (max + Math.log(sum));
}

async function run(model: Model, prompt: string, options: GenerateOptions) {
  await using s = model.createSession();
  const gen = s.generate(prompt, options);
  const events: TokenEvent[] = [];
  for await (const ev of gen) events.push(ev);
  return { events, res: await gen.result };
}

describe.runIf(nativeAvailable)('logprobs (native, tiny-qwen3moe)', () => {
  let resident: Model;
  beforeAll(async () => {
    resident = await loadModel(path, { threads: 2, contextSize: 512 });
  });
  afterAll(async () => resident?.close());

  it("each token's logprob is the log-softmax of its logits, with the N most likely tokens, greedy and sampled", async () => {
    for (const options of [{ temperature: 0 }, { temperature: 1, seed: 3 }] as GenerateOptions[]) {
      const { events } = await run(resident, 'The weather in Paris is', { ...options, maxTokens: 8, logprobs: 5, logits: true });
      expect(events).toHaveLength(8);
      for (const ev of events) {
        expect(ev.logprob).toBeCloseTo(logSoftmax(ev.logits!, ev.tokenId), 4);
        const top = ev.topLogprobs!;
        expect(top).toHaveLength(5);
        for (const t of top) expect(t.logprob).toBeCloseTo(logSoftmax(ev.logits!, t.tokenId), 4);
        for (let i = 1; i < top.length; i++) expect(top[i]!.logprob).toBeLessThanOrEqual(top[i - 1]!.logprob);
        // The most likely token beats every logit; a greedy run takes it.
        expect(Math.max(...ev.logits!)).toBe(ev.logits![top[0]!.tokenId]);
        if (options.temperature === 0) expect(top[0]!.tokenId).toBe(ev.tokenId);
        expect(new TextDecoder().decode(top[0]!.bytes)).toBe(top[0]!.text);
      }
    }
  });

  it('logprobs 0 gives the token its own only; without the option nothing is computed', async () => {
    const zero = await run(resident, 'The sea', { maxTokens: 3, logprobs: 0 });
    for (const ev of zero.events) expect([typeof ev.logprob, ev.topLogprobs]).toEqual(['number', []]);
    const none = await run(resident, 'The sea', { maxTokens: 3 });
    for (const ev of none.events) expect([ev.logprob, ev.topLogprobs]).toEqual([undefined, undefined]);
  });

  it('promptLogprobs scores every prompt token after the ones before it, as a prompt ending before it sees it', async () => {
    const prompt = 'The weather in Paris is';
    const first = await run(resident, prompt, { maxTokens: 6, logprobs: 2 });
    const whole = prompt + first.res.text;
    const ids = resident.tokenize(whole);
    const promptIds = resident.tokenize(prompt);
    // The generated text tokenizes back to the generated tokens (the test's premise).
    expect(ids).toEqual([...promptIds, ...first.res.tokens]);
    const scored = await run(resident, whole, { maxTokens: 1, logprobs: 2, promptLogprobs: true });
    const lp = scored.res.promptLogprobs!;
    expect(lp.map((p) => p.tokenId)).toEqual(ids);
    expect(lp[0]!.logprob).toBeNull();
    for (let i = 1; i < lp.length; i++) expect(lp[i]!.topLogprobs).toHaveLength(2);
    // The generated part: scored in one prompt batch = the log-softmax of the logits after each
    // prefix evaluated as a prompt (batch-invariant prompts: the same bits). A decode's own
    // logprob is not compared: one-token decodes take other kernels, and a near tie between two
    // experts may route them elsewhere.
    for (let k = 0; k < first.events.length; k++) {
      const prefix = prompt + first.events.slice(0, k).map((e) => e.text).join('');
      expect(resident.tokenize(prefix)).toEqual(ids.slice(0, promptIds.length + k));
      const after = await run(resident, prefix, { maxTokens: 1, logits: true });
      const logits = after.events[0]!.logits!;
      const max = Math.max(...logits);
      let sum = 0;
      for (const l of logits) sum += Math.exp(l - max);
      expect(lp[promptIds.length + k]!.logprob).toBeCloseTo(logits[ids[promptIds.length + k]!]! - max - Math.log(sum), 4);
    }
    // A prompt already cached is scored whole all the same.
    await using s = resident.createSession();
    await s.generate(whole, { maxTokens: 1 }).result;
    const again = await s.generate(whole, { maxTokens: 1, promptLogprobs: true }).result;
    expect(again.promptTokensReused).toBe(0);
    expect(again.promptLogprobs!.map((p) => p.logprob)).toEqual(lp.map((p) => p.logprob));
  });

  it('streamed experts (cache 0) give the same logprobs as resident', async () => {
    const streamed = await loadModel(path, { threads: 2, contextSize: 512, stream: { moeStream: true, cacheMb: 0 } });
    try {
      const a = await run(resident, 'Once upon a time', { maxTokens: 8, logprobs: 3, promptLogprobs: true });
      const b = await run(streamed, 'Once upon a time', { maxTokens: 8, logprobs: 3, promptLogprobs: true });
      expect(b.events.map((e) => [e.tokenId, e.logprob, e.topLogprobs])).toEqual(a.events.map((e) => [e.tokenId, e.logprob, e.topLogprobs]));
      expect(b.res.promptLogprobs).toEqual(a.res.promptLogprobs);
    } finally {
      await streamed.close();
    }
  });
});
