// Conversations keep their KV: slots (`parallel`) chosen by the longest cached prefix, follow-up
// turns that evaluate only what is new (usage.prompt_tokens_details.cached_tokens, /metrics),
// parallel clients decoded together, 429 only when every slot and the queue are full, a client
// leaving without stalling the others, and `kvDir`: conversations a slot gives up saved and
// restored, across a restart, within a budget; a directory that cannot be written fails nothing.
// The real server, the real openai client, the tiny-qwen3moe fixture.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { native, scrape, serverForSuite, sleep, startServer, THREADS } from './helpers.js';

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
const model = 'tiny';
const system = (topic: string): Msg => ({ role: 'system', content: `You answer questions about ${topic}. `.repeat(12) });

async function turn(client: OpenAI, conv: Msg[], text: string, maxTokens = 6): Promise<{ cached: number; prompt: number }> {
  conv.push({ role: 'user', content: text });
  const r = await client.chat.completions.create({ model, messages: conv, max_tokens: maxTokens, temperature: 0 });
  conv.push({ role: 'assistant', content: r.choices[0]?.message.content ?? '' });
  const usage = r.usage as OpenAI.CompletionUsage;
  return { cached: usage.prompt_tokens_details?.cached_tokens ?? -1, prompt: usage.prompt_tokens };
}

describe.runIf(native)('turn preparation: the answer evaluated while the client reads it', () => {
  it('a follow-up evaluates only its new message; the answers are those of a server that does not prepare', async () => {
    const warm = await startServer({ parallel: 1 });
    const plain = await startServer({ parallel: 1, prepareTurns: false });
    try {
      for (const topic of ['lighthouses', 'glaciers', 'orchards']) {
        const a: Msg[] = [system(topic)];
        const b: Msg[] = [system(topic)];
        await turn(warm.client, a, 'Hello');
        await turn(plain.client, b, 'Hello');
        expect(a).toEqual(b);
        await sleep(1000); // the client reads the answer
        const [w, p] = [await turn(warm.client, a, 'Tell me more'), await turn(plain.client, b, 'Tell me more')];
        expect(a.at(-1), topic).toEqual(b.at(-1));
        // Without preparation the answer's last token and the next header at least are evaluated again.
        expect(w.cached, topic).toBeGreaterThan(p.cached);
        // What is left is the new message and the generation prompt: under 20 tokens of the tiny template.
        expect(w.prompt - w.cached, topic).toBeLessThan(20);
      }
    } finally {
      await Promise.all([warm.server.close(), plain.server.close()]);
    }
  });
});

describe.runIf(native)('slots keep conversations (parallel 2)', () => {
  const s = serverForSuite({ parallel: 2 });

  it('two conversations alternating: every follow-up turn finds its history in its slot', async () => {
    const a: Msg[] = [system('the sea')];
    const b: Msg[] = [system('the mountains')];
    const first = [await turn(s.client, a, 'Hello'), await turn(s.client, b, 'Hello')];
    for (const f of first) expect(f.cached).toBeLessThan(f.prompt / 4);
    for (let t = 0; t < 3; t++) {
      for (const conv of [a, b]) {
        const before = conv.length;
        const r = await turn(s.client, conv, `And question ${t}?`);
        // Everything up to the last answer is cached: only the new user turn is evaluated.
        expect(r.cached, `turn ${t}, conversation with ${before} messages`).toBeGreaterThan(r.prompt * 0.6);
      }
    }
    // The returning conversation's answer is the one a cold server gives to the same messages.
    const last = a.slice(0, -1);
    const cold = await startServer({ parallel: 1 });
    try {
      const coldAnswer = await cold.client.chat.completions.create({ model, messages: last, max_tokens: 6, temperature: 0 });
      expect(coldAnswer.usage?.prompt_tokens_details?.cached_tokens).toBe(0);
      expect(coldAnswer.choices[0]?.message.content).toBe((a.at(-1) as { content: string }).content);
    } finally {
      await cold.server.close();
    }
    const m = await scrape(s.url);
    expect(m.get('bmoe_prompt_tokens_cached_total')).toBeGreaterThan(0);
    expect(m.get('bmoe_slots')).toBe(2);
    expect(m.get('bmoe_slots_busy')).toBe(0);
    const status = (await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as { slots: { total: number; busy: number } };
    expect(status.slots).toEqual({ total: 2, busy: 0 });
  });

  it('two clients at once are decoded together: their streams overlap, neither waits for the other', async () => {
    const stream = async (text: string): Promise<{ first: number; last: number; n: number }> => {
      const st = await s.client.chat.completions.create({ model, messages: [{ role: 'user', content: text }], max_tokens: 48, temperature: 0, stream: true });
      let first = 0;
      let last = 0;
      let n = 0;
      for await (const c of st) {
        if (!c.choices[0]?.delta.content) continue;
        last = performance.now();
        if (n++ === 0) first = last;
      }
      return { first, last, n };
    };
    const [x, y] = await Promise.all([stream('Tell me a long story about a fox'), stream('Count slowly from one to fifty')]);
    expect(x.n).toBeGreaterThan(10);
    expect(y.n).toBeGreaterThan(10);
    // Queued one after the other, one would start after the other ended.
    expect(y.first).toBeLessThan(x.last);
    expect(x.first).toBeLessThan(y.last);
  });

  it('a client that leaves mid-stream does not stall the other', async () => {
    const ac = new AbortController();
    const leaving = (async () => {
      const st = await s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Go on and on' }], max_tokens: 400, temperature: 0, stream: true }, { signal: ac.signal });
      let n = 0;
      try {
        for await (const c of st) if (c.choices[0]?.delta.content && ++n === 3) ac.abort();
      } catch {
        // aborted by us
      }
    })();
    const staying = s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Say something' }], max_tokens: 24, temperature: 0 });
    await leaving;
    const r = await staying;
    expect(r.choices[0]?.finish_reason).toBeDefined();
    expect(r.usage?.completion_tokens).toBeGreaterThan(0);
  });
});

describe.runIf(native)('429 only when every slot and the queue are full', () => {
  const s = serverForSuite({ parallel: 2, maxQueue: 1 });

  it('2 slots + 1 waiting are served; the 4th request at that moment gets 429', async () => {
    const ac = new AbortController();
    const long = async (): Promise<void> => {
      // Holding its slot until aborted below (3000 tokens take seconds even on the tiny model). The
      // abort may come before the stream's first event, while the request itself is still pending.
      try {
        const st = await s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Write a lot' }], max_tokens: 3000, temperature: 0, stream: true }, { signal: ac.signal });
        for await (const _ of st) void _;
      } catch {
        // aborted by us
      }
    };
    const running = [long(), long()];
    await waitUntil(async () => (await scrape(s.url)).get('bmoe_slots_busy') === 2);
    const waiting = s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Me next' }], max_tokens: 2 });
    await waitUntil(async () => (await scrape(s.url)).get('bmoe_queue_depth') === 1);
    const refused = await s.client.chat.completions.create({ model, messages: [{ role: 'user', content: 'And me' }], max_tokens: 2 }).then(
      () => null,
      (e: { status?: number }) => e.status,
    );
    expect(refused).toBe(429);
    ac.abort();
    expect((await waiting).choices).toHaveLength(1);
    await Promise.all(running);
  });
});

/** Polls `ok` every 20 ms for up to 10 s. */
async function waitUntil(ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 10_000;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.runIf(native)('kvDir: conversations saved when a slot is reused, restored when they return', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-kvdir-'));
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('one slot, three conversations: each comes back restored; a restarted server restores them too', async () => {
    const kvDir = join(dir, 'kv');
    const convs: Msg[][] = [[system('rivers')], [system('deserts')], [system('forests')]];
    let started = await startServer({ parallel: 1, kvDir, load: { threads: THREADS, contextSize: 1024 } });
    try {
      for (const c of convs) await turn(started.client, c, 'Hello');
      // The slot held only the last one: the first two come back from the directory.
      for (const c of convs) expect((await turn(started.client, c, 'Tell me more')).cached).toBeGreaterThan(c.length * 2);
      const m = await scrape(started.url);
      expect(m.get('bmoe_kv_dir_saves_total')).toBeGreaterThanOrEqual(2);
      expect(m.get('bmoe_kv_dir_restores_total')).toBeGreaterThanOrEqual(2);
      expect((await readdir(kvDir)).filter((f) => f.endsWith('.kv')).length).toBeGreaterThanOrEqual(2);
      const status = (await (await fetch(`${started.url}/v1/bmoe/status`)).json()) as { kvDir: { bytes: number; budgetBytes: number; files: number } };
      expect(status.kvDir.files).toBeGreaterThanOrEqual(2);
      expect(status.kvDir.bytes).toBeLessThanOrEqual(status.kvDir.budgetBytes);
    } finally {
      await started.server.close();
    }
    started = await startServer({ parallel: 1, kvDir, load: { threads: THREADS, contextSize: 1024 } });
    try {
      const r = await turn(started.client, convs[0]!, 'Back again');
      expect(r.cached).toBeGreaterThan(r.prompt / 2);
    } finally {
      await started.server.close();
    }
  });

  it('a budget smaller than one conversation keeps nothing, and a directory that disappears fails no request', async () => {
    const kvDir = join(dir, 'tiny-budget');
    const started = await startServer({ parallel: 1, kvDir, kvDirMb: 1, load: { threads: THREADS, contextSize: 4096 } });
    try {
      const big = (topic: string): Msg[] => [{ role: 'system', content: `Facts about ${topic}. `.repeat(300) }];
      const [a, b] = [big('ice'), big('fire')];
      await turn(started.client, a, 'Hi');
      await turn(started.client, b, 'Hi'); // a is saved (over 1 MiB) and evicted at once
      expect((await readdir(kvDir)).filter((f) => f.endsWith('.kv'))).toEqual([]);
      await rm(kvDir, { recursive: true, force: true });
      const r = await turn(started.client, a, 'Still there?'); // b cannot be saved: the request goes on
      expect(r.prompt).toBeGreaterThan(0);
      const status = (await (await fetch(`${started.url}/health`)).json()) as { status: string };
      expect(status.status).toBe('ready');
    } finally {
      await started.server.close();
    }
  });
});
