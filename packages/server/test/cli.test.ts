// `bmoe serve` as a user starts it: the built executable as a child process, answered by the
// `openai` client; SIGTERM mid-request exits 0; usage and load errors are one line.
import { createServer as createHttpServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import { describe, expect, it } from 'vitest';
import { clientFor, fixture, native, runCli, type CliResult } from './helpers.js';

const LISTENING = /listening on (http:\/\/\S+) /;

/** Starts `bmoe serve`, resolves with its URL once ready, and with the exit once it ends. */
function serve(args: readonly string[], model = fixture()): { ready: Promise<{ url: string; child: ChildProcess }>; exit: Promise<CliResult> } {
  let onReady!: (v: { url: string; child: ChildProcess }) => void;
  let failed!: (e: Error) => void;
  const ready = new Promise<{ url: string; child: ChildProcess }>((resolve, reject) => {
    onReady = resolve;
    failed = reject;
  });
  let done = false;
  const exit = runCli(['serve', model, '--port', '0', '-t', '2', ...args], {
    onStderr: (text, child) => {
      const m = LISTENING.exec(text);
      if (!done && m?.[1] && /bmoe serve: ready/.test(text)) {
        done = true;
        onReady({ url: m[1], child });
      }
    },
  });
  void exit.then((r) => failed(new Error(`bmoe serve exited early (${r.code}): ${r.stderr}`)));
  return { ready, exit };
}

/** The status of GET `path` sent to `url` with another Host header (what a browser sends after a DNS rebinding). */
function statusAs(url: string, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(new URL(path, url), { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

describe.skipIf(!native)('bmoe serve', () => {
  it('serves the openai client, and on SIGTERM mid-stream finishes the request and exits 0', async () => {
    const { ready, exit } = serve([
      '--moe-stream', '--cache-mb', '4', '--model-id', 'tiny', '--allowed-hosts', 'phone.lan',
      '--alias', 'small, qwen', '--alias', 'other', '--cors', 'http://app.example,https://b.example', '--cors', 'http://c.example:3000',
      '--reasoning-budget', '0', '--reasoning-budget-message', 'Enough.',
    ]);
    const { url, child } = await ready;
    expect(await statusAs(url, '/health', 'phone.lan:8080')).toBe(200);
    expect(await statusAs(url, '/health', 'rebound.example:8080')).toBe(403);
    const client = clientFor(url);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['tiny', 'small', 'qwen', 'other']);
    // --cors: the listed origins (both flags, comma lists) get their preflight answered, another does not.
    for (const [origin, allowed] of [['http://app.example', true], ['https://b.example', true], ['http://c.example:3000', true], ['http://d.example', false]] as const) {
      const pre = await fetch(`${url}/v1/chat/completions`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST' } });
      expect(pre.headers.get('access-control-allow-origin'), origin).toBe(allowed ? origin : null);
    }
    const hello = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, temperature: 0 });
    expect(hello.usage?.completion_tokens).toBe(4);
    // This request reasons for some 130 tokens on its own (seed 1); --reasoning-budget 0 ends the
    // block at once, after the --reasoning-budget-message.
    const weather = { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
    const call = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'What is the weather in Paris?' }], tools: [weather], tool_choice: 'required', temperature: 1, seed: 1, max_tokens: 256 });
    expect(call.choices[0]?.finish_reason).toBe('tool_calls');
    expect((call.choices[0]?.message as { reasoning_content?: string }).reasoning_content).toBe('Enough.');

    const stream = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 16, temperature: 0, stream: true });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    child.kill('SIGTERM');
    let finish: string | null = null;
    for (let r = await it.next(); !r.done; r = await it.next()) finish = r.value.choices[0]?.finish_reason ?? finish;
    expect(finish).toBe('length');

    const r = await exit;
    expect(r.code).toBe(0);
    expect(r.signal).toBeNull();
    expect(r.stderr).toMatch(/SIGTERM: not accepting new requests/);
    expect(r.stderr).toMatch(/bmoe serve: stopped\n$/);
    await expect(fetch(`${url}/health`)).rejects.toThrow();
  });

  it('exits 1 with one line when the model cannot be loaded', async () => {
    const r = await runCli(['serve', '/nonexistent/model.gguf', '--port', '0']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^bmoe: error: \/nonexistent\/model\.gguf: no such file\n$/m);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('bmoe: error:'))).toHaveLength(1);
  });

  it('exits 1 with one line when the port is taken', async () => {
    const taken = createHttpServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const r = await runCli(['serve', fixture(), '--port', String(port)]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`bmoe: error: 127.0.0.1:${port} is already in use; choose another port\n`);
    } finally {
      taken.close();
    }
  });
});

describe.skipIf(!native)('bmoe serve with images', () => {
  it("takes --max-images, --image-max-bytes and --allow-image-urls, and its ready line names the projector", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'bmoe-serve-cli-images-'));
    try {
      const model = join(dir, 'model.gguf');
      await makeModel({ preset: 'tiny-gemma4', out: model });
      await makeProjector({ preset: 'tiny-gemma4', out: join(dir, 'mmproj-F16.gguf') });
      const png = `data:image/png;base64,${Buffer.from(makeTestImage({ width: 96, height: 64, format: 'png', seed: 1 })).toString('base64')}`;
      const { ready, exit } = serve(['--max-images', '1', '--image-max-bytes', '20000'], model);
      const { url, child } = await ready;
      const ask = (urls: string[]) =>
        fetch(`${url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ max_tokens: 2, messages: [{ role: 'user', content: [...urls.map((u) => ({ type: 'image_url', image_url: { url: u } })), { type: 'text', text: 'What?' }] }] }),
        }).then(async (r) => ({ status: r.status, body: (await r.json()) as { error?: { message: string } } }));
      const two = await ask([png, png]);
      expect(two.status).toBe(400);
      expect(two.body.error?.message).toMatch(/holds 2 images, over the limit of 1 \(bmoe serve --max-images\)/);
      const big = await ask([`data:image/png;base64,${Buffer.alloc(30000, 1).toString('base64')}`]);
      expect(big.status).toBe(400);
      expect(big.body.error?.message).toMatch(/image 1 is 30000 bytes, over the limit of 20000 \(bmoe serve --image-max-bytes\)/);
      const remote = await ask(['http://127.0.0.1:9/x.png']);
      expect(remote.status).toBe(400);
      expect(remote.body.error?.message).toMatch(/image URLs are off on this server \(bmoe serve --allow-image-urls turns them on\)/);
      const ok = await ask([png]);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      child.kill('SIGTERM');
      const r = await exit;
      expect(r.stderr).toMatch(/images on \(projector .*mmproj-F16\.gguf, gemma4v\)/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('bmoe serve usage', () => {
  it('--help documents the server flags and the model/streaming flags of run', async () => {
    const r = await runCli(['serve', '--help']);
    expect(r.code).toBe(0);
    for (const flag of ['--host', '--allowed-hosts', '--port', '--api-key', '--max-queue', '--model-id', '--alias', '--cors', '--reasoning-budget', '--reasoning-budget-message', '--threads', '--ctx-size', '--moe-stream', '--cache-mb', '--io-threads', '--overlap', '--no-overlap', '--prefetch', '--route-ahead', '--no-route-ahead', '--n-expert-used', '--no-odirect', '--dense-weights', '--force-cache']) {
      expect(r.stdout).toContain(flag);
    }
  });

  it.each([
    [['serve', 'm.gguf', '--port', '70000'], /must be an integer from 0 to 65535/],
    [['serve', 'm.gguf', '--max-queue', '-1'], /must be a non-negative integer/],
    [['serve', 'm.gguf', '--cache-mb', '100'], /--cache-mb requires --moe-stream/],
    [['serve'], /missing required argument 'model'/],
    [['serve', 'm.gguf', '--cors', 'app.example'], /'app\.example' is not an origin/],
    [['serve', 'm.gguf', '--cors', 'https://app.example/page'], /is not an origin: give scheme:\/\/host\[:port\]/],
    [['serve', 'm.gguf', '--reasoning-budget', '-2'], /--reasoning-budget <N>' argument '-2' is invalid\. must be an integer from -1 to 16777216/],
  ])('usage error %j exits 2 with one line', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('a --reasoning-budget-message over 4096 bytes (2049 × é) exits 2 with one line', async () => {
    const r = await runCli(['serve', 'm.gguf', '--reasoning-budget-message', 'é'.repeat(2049)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--reasoning-budget-message <MSG>' argument .* is invalid\. must be at most 4096 bytes \(UTF-8\)$/m);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
