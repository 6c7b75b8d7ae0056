// A split model served by its first shard: the status reports the whole model's bytes and every
// shard, streamed chat works; a missing shard fails the load with one line naming the file.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type BmoeStatus } from '../src/index.js';
import { THREADS, clientFor, native } from './helpers.js';

let dir: string;
let shards: string[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-server-split-'));
  shards = (await makeModel({ preset: 'tiny-gpt-oss', out: join(dir, 'm.gguf'), splitMaxBytes: 2_000_000 })).shards.map((s) => s.path);
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(!native)('a split model', () => {
  it('status: the whole model (every shard); a streamed chat answers', async () => {
    expect(shards.length).toBe(3);
    const total = (await Promise.all(shards.map((p) => stat(p)))).reduce((s, st) => s + st.size, 0);
    const s = await createServer({ model: shards[0]!, port: 0, load: { threads: THREADS, stream: { moeStream: true, cacheMb: 1, forceCache: true } } });
    try {
      const url = await s.listen();
      await s.ready;
      const st = (await (await fetch(`${url}/v1/bmoe/status`)).json()) as BmoeStatus;
      expect(st.model).toMatchObject({ path: shards[0], sizeBytes: total });
      expect(st.model.info?.shards.map((x) => x.path)).toEqual(shards);
      const res = await clientFor(url).chat.completions.create({ model: s.modelId, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, temperature: 0 });
      expect(res.usage?.completion_tokens).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });

  it('a missing shard: the load fails with one line naming it', async () => {
    await rm(shards[2]!);
    const s = await createServer({ model: shards[0]!, port: 0 });
    try {
      const url = await s.listen();
      await s.ready.catch(() => undefined);
      const st = (await (await fetch(`${url}/v1/bmoe/status`)).json()) as BmoeStatus;
      expect(st.status).toBe('failed');
      expect(st.error).toBe(`${shards[2]}: missing: no such file (shard 3 of 3 of ${shards[0]})`);
    } finally {
      await s.close();
    }
  });
});
