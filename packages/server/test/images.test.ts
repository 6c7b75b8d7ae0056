// Images in `bmoe serve`, on tiny-gemma4 and its projector (random weights, two seeds): the openai
// client's `image_url` parts (data URLs), Anthropic `image` blocks (in messages and tool results)
// and Responses `input_image` parts are answered with the image's cells counted in the usage; a
// second turn about the same image finds its KV in the slot and answers as a cold request does,
// streamed and not; `kvDir` saves and restores a conversation holding an image; http(s) URLs are
// fetched only with `allowImageUrls`, within the byte limit; `/v1/models` says the model reads
// images; every bad image is a one-line 400 naming it, and the next request is answered.
import { once } from 'node:events';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { THREADS, native, postJson, startServer, type Started } from './helpers.js';

type Msg = OpenAI.Chat.Completions.ChatCompletionMessageParam;
type Usage = OpenAI.CompletionUsage & { prompt_tokens_details: { cached_tokens: number } };

const PRESET = 'tiny-gemma4';
const SEEDS = [1, 2];
/** The image byte limit of the servers that test it: the test image fits, the padded one does not. */
const LIMIT = 64 * 1024;
const PNG = makeTestImage({ width: 96, height: 64, format: 'png', seed: 1 });
const JPEG = makeTestImage({ width: 64, height: 80, format: 'jpeg', seed: 2 });
const QUESTION = 'What is in this picture?';

const dataUrl = (bytes: Uint8Array, mime = 'image/png'): string => `data:${mime};base64,${Buffer.from(bytes).toString('base64')}`;
/** A valid PNG followed by zeros (readers stop at its IEND): an image of any size. */
const padded = (bytes: number): Uint8Array => {
  const out = new Uint8Array(bytes);
  out.set(PNG);
  return out;
};
/** The test PNG with a header claiming 20000 × 10000 pixels (600 MB decoded). */
const HUGE_HEADER = (() => {
  const png = Buffer.from(PNG);
  png.writeUInt32BE(20000, 16);
  png.writeUInt32BE(10000, 20);
  return new Uint8Array(png);
})();

const imagePart = (url: string): OpenAI.Chat.Completions.ChatCompletionContentPartImage => ({ type: 'image_url', image_url: { url, detail: 'auto' } });
const ask = (url: string, text = QUESTION): Msg[] => [{ role: 'user', content: [imagePart(url), { type: 'text', text }] }];

let root: string;
/** The model of each seed; its projector (mmproj-F16.gguf) beside it, found by mmproj 'auto'. */
const models = new Map<number, string>();

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bmoe-server-images-'));
  for (const seed of SEEDS) {
    const dir = join(root, `seed-${seed}`);
    await mkdir(dir);
    await makeModel({ preset: PRESET, out: join(dir, 'model.gguf'), seed });
    await makeProjector({ preset: PRESET, out: join(dir, 'mmproj-F16.gguf'), seed });
    models.set(seed, join(dir, 'model.gguf'));
  }
});
afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

const modelOf = (seed: number): string => models.get(seed)!;

interface Answer {
  content: string;
  reasoning: string;
  usage: Usage;
}

/** A greedy chat answer, streamed (with the usage chunk) or not. */
async function chat(client: OpenAI, messages: Msg[], stream: boolean, maxTokens = 8): Promise<Answer> {
  const base = { model: 'm', messages, max_tokens: maxTokens, temperature: 0 };
  if (!stream) {
    const r = await client.chat.completions.create(base);
    const m = r.choices[0]!.message as OpenAI.Chat.Completions.ChatCompletionMessage & { reasoning_content?: string };
    return { content: m.content ?? '', reasoning: m.reasoning_content ?? '', usage: r.usage as Usage };
  }
  const chunks = await client.chat.completions.create({ ...base, stream: true, stream_options: { include_usage: true } });
  let content = '';
  let reasoning = '';
  let usage: Usage | null = null;
  for await (const c of chunks) {
    const d = c.choices[0]?.delta as (OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta & { reasoning_content?: string }) | undefined;
    content += d?.content ?? '';
    reasoning += d?.reasoning_content ?? '';
    if (c.usage) usage = c.usage as Usage;
  }
  return { content, reasoning, usage: usage! };
}

/** The prompt's tokens as the engine prepares them, and where its (one) image ends and starts. */
async function promptOf(s: Started, image: Uint8Array, text = QUESTION): Promise<{ tokens: number[]; start: number; end: number }> {
  const tokens = await s.server.model!.promptTokens([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text }] }]);
  return { tokens, start: tokens.findIndex((t) => t < 0), end: tokens.findLastIndex((t) => t < 0) + 1 };
}

/** A 400 in OpenAI's shape, on one line, naming `param`, with a message matching `message`. */
function expectRefusal(r: { status: number; json: unknown }, param: string, message: RegExp, what = param): void {
  expect(r.status, what).toBe(400);
  const error = (r.json as { error: { message: string; type: string; param: string } }).error;
  expect(error, what).toMatchObject({ type: 'invalid_request_error', param });
  expect(error.message, what).toMatch(message);
  expect(error.message, what).not.toContain('\n');
}

describe.runIf(native)('images in chat completions (tiny-gemma4 + projector)', () => {
  it.each(SEEDS)('seed %i: an image counts in the usage; a second turn reuses its KV and answers as a cold request, streamed and not', async (seed) => {
    const s = await startServer({ model: modelOf(seed), parallel: 1 });
    try {
      const { tokens, start, end } = await promptOf(s, PNG);
      expect(end - start).toBeGreaterThan(8);
      const first = ask(dataUrl(PNG));
      for (const stream of [false, true]) {
        const a = await chat(s.client, first, stream);
        expect(a.usage.prompt_tokens, `stream ${stream}`).toBe(tokens.length);
        const second: Msg[] = [...first, { role: 'assistant', content: a.content }, { role: 'user', content: 'Say more about it.' }];
        const warm = await chat(s.client, second, stream);
        // Everything up to the first answer was in the slot: the image is not evaluated again.
        expect(warm.usage.prompt_tokens_details.cached_tokens, `stream ${stream}`).toBeGreaterThan(end);
        // Another conversation takes the one slot: the same turn is then evaluated from the start.
        await s.client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'Something else entirely' }], max_tokens: 1 });
        const cold = await chat(s.client, second, stream);
        expect(cold.usage.prompt_tokens_details.cached_tokens, `stream ${stream}`).toBeLessThan(start);
        expect(cold.usage.prompt_tokens).toBe(warm.usage.prompt_tokens);
        expect({ content: warm.content, reasoning: warm.reasoning }, `stream ${stream}`).toEqual({ content: cold.content, reasoning: cold.reasoning });
      }
    } finally {
      await s.server.close();
    }
  });

  it('a projector makes room for an image in the body: 1.5 MB of image is read where a model without one answers 413', async () => {
    const body = JSON.stringify({ model: 'm', messages: ask(dataUrl(padded(1_500_000))), max_tokens: 1 });
    const vision = await startServer({ model: modelOf(1) });
    const text = await startServer({ model: modelOf(1), load: { threads: THREADS, mmproj: 'none' } });
    try {
      const ok = await postJson(vision.url, '/v1/chat/completions', body);
      expect(ok.status).toBe(200);
      expect((ok.json as { usage: Usage }).usage.prompt_tokens).toBe((await promptOf(vision, PNG)).tokens.length);
      const refused = await postJson(text.url, '/v1/chat/completions', body);
      expect(refused).toMatchObject({ status: 413, json: { error: { code: 'request_too_large' } } });
      const status = (await (await fetch(`${vision.url}/v1/bmoe/status`)).json()) as { limits: Record<string, unknown> };
      expect(status.limits).toMatchObject({ bodyLimitBytes: 1048576, imageBodyLimitBytes: 1048576 + 4 * Math.ceil((20 * 1024 * 1024) / 3), imageMaxBytes: 20 * 1024 * 1024, maxImages: 16, imageUrls: false });
    } finally {
      await vision.server.close();
      await text.server.close();
    }
  });
});

describe.runIf(native)('one server with a projector (seed 1, image limit 64 KiB, 3 images a request)', () => {
  const s = {} as Started;
  beforeAll(async () => {
    Object.assign(s, await startServer({ model: modelOf(1), imageMaxBytes: LIMIT, maxImages: 3 }));
  });
  afterAll(async () => {
    await (s.server as Started['server'] | undefined)?.close();
  });

  it('/v1/models says the model reads images; /v1/bmoe/status shows its projector', async () => {
    const list = await s.client.models.list();
    expect(list.data[0]).toMatchObject({ id: 'model', architecture: { input_modalities: ['text', 'image'], output_modalities: ['text'] } });
    const status = (await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as { model: { info: { projector: unknown } }; limits: Record<string, unknown> };
    expect(status.model.info.projector).toMatchObject({ projectorType: 'gemma4v', path: expect.stringMatching(/mmproj-F16\.gguf$/) });
    expect(status.limits).toMatchObject({ imageMaxBytes: LIMIT, maxImages: 3, imageUrls: false });
  });

  it('every bad image is a one-line 400 naming its field, and the next request is answered', async () => {
    const at = 'messages[0].content[0].image_url.url';
    const cases: Array<[string, Msg[], string, RegExp]> = [
      ['a PNG cut short', ask(dataUrl(PNG.slice(0, 200))), at, /^invalid '.+': image 1: the 96x64 image could not be decoded/],
      ['random bytes', ask(dataUrl(new Uint8Array(3000).map((_, i) => (i * 7919) % 251))), at, /image 1: not an image format this build reads/],
      ['an image over the limit', ask(dataUrl(padded(LIMIT + 1))), at, new RegExp(`image 1 is ${LIMIT + 1} bytes, over the limit of ${LIMIT} \\(bmoe serve --image-max-bytes\\)`)],
      ['a header claiming 20000x10000 pixels', ask(dataUrl(HUGE_HEADER)), at, /image 1 is 20000x10000 = 200000000 pixels, over the limit of \d+$/],
      ['an http URL (URLs off)', ask('http://127.0.0.1:9/a.png'), at, /image 1: image URLs are off on this server \(bmoe serve --allow-image-urls turns them on\)/],
      ['a file path', ask('/etc/hostname'), at, /image 1: must be a data URL \(data:image\/png;base64,\.\.\.\), got "\/etc\/hostname"/],
      ['a data URL without base64', ask('data:image/png,abc'), at, /image 1: a data URL must be base64/],
      ['a data URL with no bytes', ask('data:image/png;base64,'), at, /image 1: the data URL holds no bytes/],
      ['base64 with other characters', ask('data:image/png;base64,iVBO$$$'), at, /image 1: the data URL's base64 has characters outside base64/],
      [
        'the second of two images',
        [{ role: 'user', content: [imagePart(dataUrl(PNG)), { type: 'text', text: 'and' }, imagePart(dataUrl(JPEG.slice(0, 100)))] }],
        'messages[0].content[2].image_url.url',
        /^invalid 'messages\[0\]\.content\[2\]\.image_url\.url': image 2: /,
      ],
      [
        'four images (3 allowed)',
        [{ role: 'user', content: [1, 2, 3, 4].map(() => imagePart(dataUrl(PNG))) }],
        'messages[0].content[3].image_url.url',
        /the request holds 4 images, over the limit of 3 \(bmoe serve --max-images\)/,
      ],
      ['an image in a system message', [{ role: 'system', content: [imagePart(dataUrl(PNG))] } as unknown as Msg, { role: 'user', content: 'Hi' }], 'messages[0].content[0].type', /a system message cannot hold images; only user messages carry them/],
      ['an image part without a URL', [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] } as unknown as Msg], at, /missing required parameter/],
      ['an audio part', [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }], 'messages[0].content[0].type', /must be a content part/],
    ];
    for (const [what, messages, param, message] of cases) {
      const r = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ model: 'm', messages, max_tokens: 2 }));
      expectRefusal(r, param, message, what);
      const next = await s.client.chat.completions.create({ model: 'm', messages: ask(dataUrl(JPEG)), max_tokens: 2, temperature: 0 });
      expect(next.choices[0]!.finish_reason, what).toBeDefined();
    }
    // The openai client raises it as its BadRequestError.
    const err = await s.client.chat.completions.create({ model: 'm', messages: ask(dataUrl(HUGE_HEADER)), max_tokens: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err).toMatchObject({ status: 400, param: 'messages[0].content[0].image_url.url' });
    // Streamed too: the images are read before the stream opens, so the refusal is a plain 400.
    const streamed = await s.client.chat.completions.create({ model: 'm', messages: ask(dataUrl(PNG.slice(0, 200))), max_tokens: 2, stream: true }).catch((e: unknown) => e);
    expect(streamed).toBeInstanceOf(OpenAI.BadRequestError);
    expect((streamed as Error).message).toMatch(/image 1: the 96x64 image could not be decoded/);
  });

  it("Anthropic: an image block (base64) and an image in a tool result are read; count_tokens counts them; a url needs allowImageUrls", async () => {
    const client = new Anthropic({ baseURL: s.url, apiKey: 'k', maxRetries: 0, timeout: 30_000 });
    const image: Anthropic.ImageBlockParam = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: Buffer.from(PNG).toString('base64') } };
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: [image, { type: 'text', text: QUESTION }] }];
    const r = await client.messages.create({ model: 'm', max_tokens: 4, messages });
    expect(r.type).toBe('message');
    const counted = await client.messages.countTokens({ model: 'm', messages });
    expect(r.usage.input_tokens + (r.usage.cache_read_input_tokens ?? 0)).toBe(counted.input_tokens);
    const { start, end } = await promptOf(s, PNG);
    const textOnly = await client.messages.countTokens({ model: 'm', messages: [{ role: 'user', content: QUESTION }] });
    expect(counted.input_tokens - textOnly.input_tokens).toBeGreaterThanOrEqual(end - start);

    // A screenshot a tool returned (llama.cpp's multimodal tool result).
    const tools: Anthropic.Tool[] = [{ name: 'screenshot', description: 'Takes a screenshot', input_schema: { type: 'object', properties: {} } }];
    const withResult = (content: Anthropic.ToolResultBlockParam['content']): Anthropic.MessageParam[] => [
      { role: 'user', content: 'What is on the screen?' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'call_1', name: 'screenshot', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_1', content }] },
    ];
    const shot = await client.messages.create({ model: 'm', max_tokens: 4, tools, messages: withResult([{ type: 'text', text: 'here it is' }, image]) });
    expect(shot.type).toBe('message');
    const withImage = await client.messages.countTokens({ model: 'm', tools, messages: withResult([{ type: 'text', text: 'here it is' }, image]) });
    const without = await client.messages.countTokens({ model: 'm', tools, messages: withResult([{ type: 'text', text: 'here it is' }]) });
    expect(withImage.input_tokens - without.input_tokens).toBeGreaterThanOrEqual(end - start);

    const url = await postJson(s.url, '/v1/messages', JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } }] }] }));
    expect(url).toMatchObject({ status: 400, json: { type: 'error', error: { type: 'invalid_request_error', message: expect.stringMatching(/^invalid 'messages\[0\]\.content\[0\]\.source': image 1: image URLs are off/) } } });
    const file = await postJson(s.url, '/v1/messages', JSON.stringify({ model: 'm', max_tokens: 4, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'file', file_id: 'f' } }] }] }));
    expect(file).toMatchObject({ status: 400, json: { error: { message: expect.stringMatching(/the Files API is not supported/) } } });
  });

  it('Responses: an input_image (data URL) is read and counted, a follow-up finds it cached; file_id is refused', async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(PNG), detail: 'auto' }, { type: 'input_text', text: QUESTION }] }];
    const r = await s.client.responses.create({ model: 'm', input, max_output_tokens: 4, temperature: 0 });
    const { tokens, end } = await promptOf(s, PNG);
    expect(r.usage?.input_tokens).toBe(tokens.length);
    expect((await s.client.responses.inputTokens.count({ model: 'm', input })).input_tokens).toBe(tokens.length);
    const next = await s.client.responses.create({ model: 'm', previous_response_id: r.id, input: 'Say more about it.', max_output_tokens: 4, temperature: 0 });
    expect(next.usage?.input_tokens_details.cached_tokens).toBeGreaterThan(end);

    const file = await postJson(s.url, '/v1/responses', JSON.stringify({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1', detail: 'auto' }] }] }));
    expect(file.status).toBe(400);
    expect(file.json).toMatchObject({ error: { param: 'input[0].content[0].file_id', code: 'unsupported_parameter', message: expect.stringMatching(/file ids are not supported/) } });
    const bad = await postJson(s.url, '/v1/responses', JSON.stringify({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(HUGE_HEADER) }] }] }));
    expectRefusal(bad, 'input[0].content[0].image_url', /image 1 is 20000x10000 = 200000000 pixels/);
  });
});

describe.runIf(native)('image URLs with allowImageUrls (seed 1, limit 64 KiB)', () => {
  const s = {} as Started;
  let http: Server;
  let base: string;
  beforeAll(async () => {
    http = createHttpServer((req, res) => {
      if (req.url === '/a.png') return void res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
      if (req.url === '/big.png') return void res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(LIMIT + 1) }).end(padded(LIMIT + 1));
      if (req.url === '/chunked.png') {
        // No content-length: the body's size shows only as it comes.
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(padded(LIMIT));
        return void res.end(new Uint8Array(1000));
      }
      res.writeHead(404).end('not here');
    });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
    Object.assign(s, await startServer({ model: modelOf(1), imageMaxBytes: LIMIT, allowImageUrls: true }));
  });
  afterAll(async () => {
    await (s.server as Started['server'] | undefined)?.close();
    http?.close();
  });

  it('a URL is fetched and read as its bytes; one over the limit, missing or unreachable is a 400', async () => {
    const fromUrl = await chat(s.client, ask(`${base}/a.png`), false);
    const fromData = await chat(s.client, ask(dataUrl(PNG)), false);
    expect(fromUrl.usage.prompt_tokens).toBe((await promptOf(s, PNG)).tokens.length);
    expect(fromUrl.content).toBe(fromData.content);
    const at = 'messages[0].content[0].image_url.url';
    const cases: Array<[string, RegExp]> = [
      [`${base}/big.png`, new RegExp(`image 1 is ${LIMIT + 1} bytes, over the limit of ${LIMIT} \\(bmoe serve --image-max-bytes\\)`)],
      [`${base}/chunked.png`, new RegExp(`image 1: ${base}/chunked\\.png sent more than ${LIMIT} bytes, the limit`)],
      [`${base}/missing.png`, /image 1: http:\/\/127\.0\.0\.1:\d+\/missing\.png answered 404 Not Found/],
      ['http://127.0.0.1:9/closed.png', /image 1: could not fetch http:\/\/127\.0\.0\.1:9\/closed\.png: /],
      ['ftp://example.com/a.png', /image 1: must be a data URL \(data:image\/png;base64,\.\.\.\) or an http\(s\) URL/],
    ];
    for (const [url, message] of cases) {
      expectRefusal(await postJson(s.url, '/v1/chat/completions', JSON.stringify({ model: 'm', messages: ask(url), max_tokens: 2 })), at, message, url);
      expect((await chat(s.client, ask(`${base}/a.png`), false, 1)).usage.prompt_tokens, url).toBe(fromUrl.usage.prompt_tokens);
    }
    // Anthropic's url source and the Responses API's image_url take URLs alike.
    const anthropic = await postJson(s.url, '/v1/messages', JSON.stringify({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url', url: `${base}/a.png` } }, { type: 'text', text: QUESTION }] }] }));
    expect(anthropic.status).toBe(200);
    const responses = await s.client.responses.create({ model: 'm', input: [{ role: 'user', content: [{ type: 'input_image', image_url: `${base}/a.png`, detail: 'auto' }, { type: 'input_text', text: QUESTION }] }], max_output_tokens: 2 });
    expect(responses.usage?.input_tokens).toBe(fromUrl.usage.prompt_tokens);
  });
});

describe.runIf(native)('a conversation holding an image in kvDir (seed 1, one slot)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-server-images-kv-'));
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is saved when another conversation takes the slot and restored when it comes back', async () => {
    const s = await startServer({ model: modelOf(1), parallel: 1, kvDir: dir });
    try {
      const first = ask(dataUrl(PNG));
      const a = await chat(s.client, first, false);
      const other = await chat(s.client, [{ role: 'user', content: 'Tell me about the sea. '.repeat(8) }], false);
      expect(other.usage.prompt_tokens).toBeGreaterThan(32);
      const second: Msg[] = [...first, { role: 'assistant', content: a.content }, { role: 'user', content: 'Say more about it.' }];
      const back = await chat(s.client, second, false);
      expect(back.usage.prompt_tokens_details.cached_tokens).toBeGreaterThan((await promptOf(s, PNG)).end);
      const status = (await (await fetch(`${s.url}/v1/bmoe/status`)).json()) as { kvDir: { saves: number; restores: number } };
      expect(status.kvDir.saves).toBeGreaterThanOrEqual(1);
      expect(status.kvDir.restores).toBeGreaterThanOrEqual(1);
    } finally {
      await s.server.close();
    }
  });
});

describe.runIf(native)('a model without a projector (mmproj none)', () => {
  it('refuses images in one line on every API, lists text input only, and answers text', async () => {
    const s = await startServer({ model: modelOf(1), load: { threads: THREADS, mmproj: 'none' } });
    try {
      const why = /the model takes no images: it was loaded without a projector \(bmoe serve --mmproj FILE, or an mmproj\*\.gguf beside the model\)/;
      const chatR = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages: ask(dataUrl(PNG)), max_tokens: 2 }));
      expectRefusal(chatR, 'messages[0].content[0].image_url.url', why);
      expect(chatR.json).toMatchObject({ error: { code: 'unsupported_value' } });
      const responses = await postJson(s.url, '/v1/responses', JSON.stringify({ input: [{ role: 'user', content: [{ type: 'input_image', image_url: dataUrl(PNG) }] }] }));
      expectRefusal(responses, 'input[0].content[0].image_url', why);
      const anthropic = await postJson(s.url, '/v1/messages', JSON.stringify({ max_tokens: 2, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: Buffer.from(PNG).toString('base64') } }] }] }));
      expect(anthropic).toMatchObject({ status: 400, json: { error: { message: expect.stringMatching(why) } } });
      expect((await s.client.models.list()).data[0]).toMatchObject({ architecture: { input_modalities: ['text'] } });
      expect((await chat(s.client, [{ role: 'user', content: 'Hi' }], false, 2)).usage.prompt_tokens).toBeGreaterThan(0);
    } finally {
      await s.server.close();
    }
  });
});
