// POST /v1/embeddings as the real `openai` client meets it (it asks for base64 and decodes it):
// the vectors are Model.embed's for the same inputs in this process, bit for bit, as floats or
// base64, for texts and token arrays; usage counts the tokens; it answers while a chat completion
// streams on the slots; refusals are OpenAI-shaped 400s naming the field (or --pooling), 501
// without --embeddings; and `bmoe serve --embeddings --pooling mean` passes the flags on.
import type { ChildProcess } from 'node:child_process';
import { loadModel, type Model } from '@bmoe/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { float32Base64 } from '../src/embeddings/routes.js';
import { createServer } from '../src/index.js';
import { THREADS, clientFor, fixture, native, postJson, runCli, serverForSuite, startServer, type CliResult } from './helpers.js';

const TEXTS = ['The weather in Paris is fine', 'hello'];
const LONG = 'a '.repeat(600); // over the default ubatch size (512 tokens)

interface Wire {
  object: string;
  model: string;
  data: Array<{ object: string; index: number; embedding: number[] | string }>;
  usage: { prompt_tokens: number; total_tokens: number };
}
interface WireError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** A base64 answer's vector. */
const decode = (b64: string): Float32Array => {
  const buf = Buffer.from(b64, 'base64');
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
};

describe.skipIf(!native)('POST /v1/embeddings (tiny-qwen3moe, pooling mean)', () => {
  // No queue: a request that needed the slot's turn while a generation runs would get 429.
  const s = serverForSuite({ embeddings: true, pooling: 'mean', maxQueue: 0 });
  /** The same model in this process, loaded as the server loads it. */
  let ref: Model;
  beforeAll(async () => {
    ref = await loadModel(fixture(), { threads: THREADS });
  });
  afterAll(async () => ref?.close());

  const post = (body: unknown) => postJson(s.url, '/v1/embeddings', JSON.stringify(body));

  it("the openai client's answer (base64, decoded) is Model.embed's vectors exactly; usage counts the tokens", async () => {
    const got = await s.client.embeddings.create({ model: 'text-embedding-3-small', input: TEXTS });
    const want = await ref.embed(TEXTS, { pooling: 'mean' });
    expect(got.object).toBe('list');
    expect(got.model).toBe(s.server.modelId);
    expect(got.data.map((d) => [d.object, d.index])).toEqual([['embedding', 0], ['embedding', 1]]);
    got.data.forEach((d, i) => {
      expect(d.embedding).toHaveLength(ref.info.embeddingLength);
      expect(Float32Array.from(d.embedding)).toEqual(want.embeddings[i]);
    });
    const tokens = TEXTS.reduce((n, t) => n + ref.countTokens(t), 0);
    expect(want.promptTokens).toBe(tokens);
    expect(got.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
  });

  it("float and base64 answers are the same float32 values; a string input is one vector", async () => {
    const asFloat = (await post({ input: TEXTS[0], encoding_format: 'float' })).json as Wire;
    const asBase64 = (await post({ input: TEXTS[0], encoding_format: 'base64' })).json as Wire;
    const byDefault = (await post({ input: TEXTS[0] })).json as Wire;
    expect(asFloat.data).toHaveLength(1);
    const floats = asFloat.data[0]!.embedding as number[];
    expect(Array.isArray(floats)).toBe(true);
    expect(typeof asBase64.data[0]!.embedding).toBe('string');
    expect(decode(asBase64.data[0]!.embedding as string)).toEqual(Float32Array.from(floats));
    // 'float' is the default, as OpenAI's; the JSON numbers are the float32 values exactly.
    expect(byDefault.data[0]!.embedding).toEqual(floats);
    const want = (await ref.embed(TEXTS[0]!, { pooling: 'mean' })).embeddings[0]!;
    expect(Float32Array.from(floats)).toEqual(want);
    expect(floats.every((x, i) => x === want[i])).toBe(true);
    expect(asBase64.data[0]!.embedding).toBe(float32Base64(want));
  });

  it("token arrays embed as their text does (one array, several, mixed with strings)", async () => {
    const ids = ref.tokenize(TEXTS[0]!);
    const text = (await s.client.embeddings.create({ model: 'm', input: TEXTS[0]! })).data[0]!.embedding;
    const flat = await s.client.embeddings.create({ model: 'm', input: ids });
    expect(flat.data).toHaveLength(1);
    expect(flat.data[0]!.embedding).toEqual(text);
    expect(flat.usage.prompt_tokens).toBe(ids.length);
    const nested = await s.client.embeddings.create({ model: 'm', input: [ids, ref.tokenize(TEXTS[1]!)] });
    const mixed = (await post({ input: [TEXTS[0], ref.tokenize(TEXTS[1]!)] })).json as Wire;
    const texts = await s.client.embeddings.create({ model: 'm', input: TEXTS });
    expect(nested.data.map((d) => d.embedding)).toEqual(texts.data.map((d) => d.embedding));
    expect(mixed.data.map((d) => d.embedding)).toEqual(texts.data.map((d) => d.embedding));
  });

  it('answers while a chat completion streams on the slot (no queue: it does not wait for the slot); both succeed', async () => {
    const stream = await s.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Tell me a story' }], max_tokens: 64, temperature: 0, stream: true });
    const it = stream[Symbol.asyncIterator]();
    const first = await it.next(); // the generation runs now
    expect(first.done).toBe(false);
    const [embedded, finish] = await Promise.all([
      s.client.embeddings.create({ model: 'm', input: TEXTS }),
      (async () => {
        let reason: string | null = null;
        for (let r = await it.next(); !r.done; r = await it.next()) reason = r.value.choices[0]?.finish_reason ?? reason;
        return reason;
      })(),
    ]);
    expect(['length', 'stop']).toContain(finish);
    const want = await ref.embed(TEXTS, { pooling: 'mean' });
    embedded.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(want.embeddings[i]));
  });

  it('dimensions: the model\'s own size is accepted, another is a 400 unsupported_value', async () => {
    const n = ref.info.embeddingLength;
    const ok = await post({ input: 'hi', dimensions: n });
    expect(ok.status).toBe(200);
    expect((ok.json as Wire).data[0]!.embedding).toHaveLength(n);
    const r = await post({ input: 'hi', dimensions: 8 });
    expect(r.status).toBe(400);
    expect((r.json as WireError).error).toMatchObject({ type: 'invalid_request_error', param: 'dimensions', code: 'unsupported_value' });
    expect((r.json as WireError).error.message).toContain(`${n} dimensions`);
  });

  it.each([
    ['an empty array', { input: [] }, 'input', /must not be empty/],
    ['an empty string (0 tokens: this model adds no BOS)', { input: '' }, 'input', /input is empty \(0 tokens\)/],
    ['an empty string among others', { input: ['hi', ''] }, 'input[1]', /input\[1\] is empty/],
    ['an empty token array', { input: [[1, 2], []] }, 'input[1]', /must not be empty/],
    ['no input', { model: 'm' }, 'input', /missing required parameter 'input'/],
    ['an input over the ubatch size', { input: LONG }, 'input', /has \d+ tokens; an embedding takes at most 512/],
    ['one input of several over the ubatch size', { input: ['hi', LONG] }, 'input[1]', /has \d+ tokens; an embedding takes at most 512/],
    ['a token id outside the vocabulary', { input: [1, 2, 1e9] }, 'input[2]', /input\[2\] must be a token id from 0 to \d+, got 1000000000/],
    ['a token id in a nested array', { input: [[1], [1, 1e9]] }, 'input[1][1]', /input\[1\]\[1\] must be a token id/],
    ['a negative token id', { input: [1, -1] }, 'input[1]', /token id/],
    ['more than 2048 inputs', { input: Array.from({ length: 2049 }, () => 'a') }, 'input', /at most 2048/],
    ['a bad encoding_format', { input: 'hi', encoding_format: 'int8' }, 'encoding_format', /'float' or 'base64'/],
    ['a bad dimensions', { input: 'hi', dimensions: 0 }, 'dimensions', /positive integer/],
    ['embd_normalize other than 2', { input: 'hi', embd_normalize: 1 }, 'embd_normalize', /only 2/],
    ['an unknown field', { input: 'hi', content: 'hi' }, 'content', /unknown parameter/],
  ])('%s is a 400 naming %s', async (_what, body, param, message) => {
    const r = await post(body);
    expect(r.status, JSON.stringify(r.json)).toBe(400);
    const e = (r.json as WireError).error;
    expect(e.type).toBe('invalid_request_error');
    expect(e.param).toBe(param);
    expect(e.message).toMatch(message);
    expect(e.message).not.toContain('\n');
  });

  it('accepted without effect: user, encoding_format null; still serving after the refusals', async () => {
    const r = await post({ input: 'hi', user: 'someone', encoding_format: null, model: 'anything' });
    expect(r.status).toBe(200);
    expect((r.json as Wire).model).toBe(s.server.modelId);
  });
});

describe.skipIf(!native)('POST /v1/embeddings refused by the server', () => {
  it('without embeddings: 501, as llama-server, whatever the body', async () => {
    const { server, url, client } = await startServer();
    try {
      for (const body of ['{"input":"hi"}', '{"nonsense":1}']) {
        const r = await postJson(url, '/v1/embeddings', body);
        expect(r.status).toBe(501);
        expect((r.json as WireError).error).toMatchObject({ type: 'not_supported_error', param: null, code: 'embeddings_disabled' });
        expect((r.json as WireError).error.message).toMatch(/This server does not support embeddings\. Start it with `--embeddings`/);
      }
      await expect(client.embeddings.create({ model: 'm', input: 'hi' })).rejects.toMatchObject({ status: 501 });
    } finally {
      await server.close();
    }
  });

  it("pooling 'model' on a generative model (its own pooling is none): 400 naming --pooling, and it keeps serving", async () => {
    const { server, url, client } = await startServer({ embeddings: true });
    try {
      for (let i = 0; i < 2; i++) {
        const r = await postJson(url, '/v1/embeddings', JSON.stringify({ input: ['hi'] }));
        expect(r.status).toBe(400);
        const e = (r.json as WireError).error;
        expect(e).toMatchObject({ type: 'invalid_request_error', param: null, code: 'invalid_pooling' });
        expect(e.message).toMatch(/pooling 'model'.*none.*--pooling/);
      }
      const chat = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 });
      expect(chat.usage?.completion_tokens).toBe(4);
      expect((await fetch(`${url}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it('createServer refuses pooling without embeddings, and a pooling it does not know', async () => {
    await expect(createServer({ model: fixture(), pooling: 'mean' })).rejects.toMatchObject({ code: 'E_OPTION', message: expect.stringMatching(/pooling applies only with embeddings: true/) });
    await expect(createServer({ model: fixture(), embeddings: true, pooling: 'max' as 'mean' })).rejects.toMatchObject({ code: 'E_OPTION', message: expect.stringMatching(/pooling must be one of 'model', 'mean', 'cls', 'last'/) });
  });
});

const LISTENING = /listening on (http:\/\/\S+) /;

/** `bmoe serve` with `args`: its URL once ready, and its exit. */
function serve(args: readonly string[]): { ready: Promise<{ url: string; child: ChildProcess; stderr: string }>; exit: Promise<CliResult> } {
  let onReady!: (v: { url: string; child: ChildProcess; stderr: string }) => void;
  let failed!: (e: Error) => void;
  const ready = new Promise<{ url: string; child: ChildProcess; stderr: string }>((resolve, reject) => {
    onReady = resolve;
    failed = reject;
  });
  let done = false;
  const exit = runCli(['serve', fixture(), '--port', '0', '-t', String(THREADS), ...args], {
    onStderr: (text, child) => {
      const m = LISTENING.exec(text);
      if (!done && m?.[1] && /bmoe serve: ready.*\n/.test(text)) {
        done = true;
        onReady({ url: m[1], child, stderr: text });
      }
    },
  });
  void exit.then((r) => failed(new Error(`bmoe serve exited early (${r.code}): ${r.stderr}`)));
  return { ready, exit };
}

describe.skipIf(!native)('bmoe serve --embeddings', () => {
  it('--embeddings --pooling mean serves the vectors Model.embed gives', async () => {
    const { ready, exit } = serve(['--embeddings', '--pooling', 'mean']);
    const { url, child, stderr } = await ready;
    try {
      expect(stderr).toMatch(/\/v1\/embeddings on \(pooling mean\)/);
      const got = await clientFor(url).embeddings.create({ model: 'm', input: TEXTS });
      const ref = await loadModel(fixture(), { threads: THREADS });
      try {
        const want = await ref.embed(TEXTS, { pooling: 'mean' });
        got.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(want.embeddings[i]));
      } finally {
        await ref.close();
      }
    } finally {
      child.kill('SIGTERM');
    }
    expect((await exit).code).toBe(0);
  });
});

describe('bmoe serve --pooling usage', () => {
  it.each([
    [['serve', 'm.gguf', '--pooling', 'mean'], /--pooling requires --embeddings/],
    [['serve', 'm.gguf', '--embeddings', '--pooling', 'max'], /argument 'max' is invalid\. Allowed choices are model, mean, cls, last/],
  ])('usage error %j exits 2 with one line', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('--help documents --embeddings and --pooling', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.stdout).toContain('--embeddings');
    expect(r.stdout).toMatch(/--pooling <type>/);
  });
});
