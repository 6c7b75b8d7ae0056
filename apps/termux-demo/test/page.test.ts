// The page in Debian's headless Chromium (playwright-core, /usr/bin/chromium) at a phone
// viewport, against the demo serving the tiny fixtures through the real @bmoe/server: a message
// streams tokens, the live panel fills with the server's numbers, Stop aborts the generation on
// the server, and the picker lists the folder's models and switches between them. Then what a
// hostile page or client meets: a browser sent by DNS rebinding gets 403, a body over the limit
// gets the server's 413 through the forwarder, and a demo with a key serves the page that has it.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type Demo } from '../src/demo.js';
import { chooseSettings } from '../src/settings.js';
import { fixture, streamingDevice } from './fixtures.js';

const CHROMIUM = process.env.BMOE_CHROMIUM ?? '/usr/bin/chromium';
const REBOUND = 'rebound.example';

let dir: string;
let demo: Demo;
let browser: Browser;
let page: Page;
const foreign: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-demo-page-'));
  await copyFile(fixture('tiny-qwen3moe'), join(dir, 'a-tiny-qwen3moe.gguf'));
  await copyFile(fixture('tiny-gpt-oss'), join(dir, 'b-tiny-gpt-oss.gguf'));
  demo = await startDemo({ modelsDir: dir, port: 0, device: await streamingDevice(fixture('tiny-qwen3moe')) });
  const s = await demo.settled();
  expect(s.state, s.error ?? '').toBe('ready');
  // rebound.example resolves to this machine, as a DNS-rebinding attacker's name would.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', `--host-resolver-rules=MAP ${REBOUND} 127.0.0.1`] });
  const context = await browser.newContext({ viewport: { width: 360, height: 800 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  page = await context.newPage();
  // Every request must stay on the demo's own origin (no CDN, no network beyond loopback).
  page.on('request', (req) => {
    if (!req.url().startsWith(demo.url) && !req.url().startsWith('data:')) foreign.push(req.url());
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await demo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The panel's value for a metric, as shown. */
const metric = (name: string): Promise<string> => page.locator(`[data-metric="${name}"]`).innerText();
const number = (text: string): number => Number.parseFloat(text.replace(/[^0-9.]/g, ''));

async function serverMetric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(new URL('/metrics', demo.url))).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe('the chat page at 360×800', () => {
  it('loads with the first model of the folder, streamed, and a page that fits the screen', async () => {
    await page.goto(`${demo.url}?temperature=0&max_tokens=24`);
    await expect.poll(() => page.locator('#model-name').innerText()).toBe('a-tiny-qwen3moe.gguf');
    expect(await page.locator('#model-mode').innerText()).toBe('streaming');
    // Nothing overflows sideways on a 360 px screen.
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBe(0);
    // Every panel label is readable whole (no ellipsis).
    const cut = await page.evaluate(() => [...document.querySelectorAll('.tile .l')].filter((l) => l.scrollWidth > l.clientWidth).map((l) => l.textContent));
    expect(cut).toEqual([]);
    expect(await page.locator('#send').isDisabled()).toBe(true);
  });

  it('answers a message and fills the live panel with the server numbers', async () => {
    const before = await serverMetric('bmoe_generated_tokens_total');
    await page.locator('#input').fill('Tell me about the sea');
    await page.locator('#send').click();
    const reply = page.locator('.msg.assistant').last();
    await expect.poll(() => reply.getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    const text = await reply.locator('.text').innerText();
    expect(text.length).toBeGreaterThan(0);
    // The stats line comes from the final chunk's usage + summary.
    expect(await reply.locator('.stats').innerText()).toMatch(/^24 tokens · [\d.]+ tok\/s · [\d.]+ MiB\/token from flash · cache hit \d+%$/);
    expect((await serverMetric('bmoe_generated_tokens_total')) - before).toBe(24);

    const toks = number(await metric('toks'));
    expect(toks).toBeGreaterThan(0);
    expect(number(await metric('flash'))).toBeGreaterThan(0);
    expect(await metric('hit')).toMatch(/^\d+%$/);
    expect(number(await metric('cache'))).toBeGreaterThan(0);
    expect(await metric('split')).toMatch(/^compute \d+% · flash \d+%$/);
    expect(number(await metric('mem'))).toBeGreaterThan(0);
    // Temperatures: a number where this machine exposes them, else the dash.
    expect(await metric('temp')).toMatch(/^(\d+|—) · (\d+|—)$/);
    // The chart drew something.
    const painted = await page.evaluate(() => {
      const c = document.getElementById('chart') as HTMLCanvasElement;
      const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
      return n;
    });
    expect(painted).toBeGreaterThan(100);
  });

  it('shows the reply growing as it streams, stops it mid-stream, and the server stops generating', async () => {
    await page.goto(`${demo.url}?temperature=0&max_tokens=3000`);
    await expect.poll(() => page.locator('#model-mode').innerText()).toBe('streaming');
    const disconnectedBefore = await serverMetric('bmoe_requests_total', '{endpoint="/v1/chat/completions",outcome="disconnected"}');
    const tokensBefore = await serverMetric('bmoe_generated_tokens_total');
    // Record each length the reply is shown at: it grows in steps as tokens arrive (the page paints
    // what came once per frame), not in one piece at the end. At hundreds of tokens per second
    // a page that painted every token would fall behind and freeze, Stop included.
    await page.evaluate(() => {
      const w = window as unknown as { shown: number[] };
      w.shown = [];
      new MutationObserver(() => {
        const n = [...document.querySelectorAll('.msg.assistant .text')].at(-1)?.textContent?.length ?? 0;
        if (n > 0 && n !== w.shown[w.shown.length - 1]) w.shown.push(n);
      }).observe(document.getElementById('log')!, { subtree: true, characterData: true, childList: true });
    });
    // As a phone's browser: the page's CPU 4× slower than this machine's (a page that painted
    // each token froze so, and Stop timed out).
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 4 });
    await page.locator('#input').fill('Write a very long story');
    await page.locator('#send').click();
    const reply = page.locator('.msg.assistant').last();
    // The reply is shown growing, step by step, while it streams; then Stop.
    const shown = (): Promise<number[]> => page.evaluate(() => (window as unknown as { shown: number[] }).shown);
    await expect.poll(async () => (await shown()).length).toBeGreaterThanOrEqual(3);
    await page.locator('#stop').click();
    await cdp.send('Emulation.setCPUThrottlingRate', { rate: 1 });
    await cdp.detach();
    await expect.poll(() => reply.getAttribute('data-done')).toBe('stopped');
    expect(await reply.locator('.stats').innerText()).toBe('stopped');
    // The server saw the client leave and ended the generation far short of max_tokens.
    await expect.poll(() => serverMetric('bmoe_requests_total', '{endpoint="/v1/chat/completions",outcome="disconnected"}')).toBe(disconnectedBefore + 1);
    const generated = (await serverMetric('bmoe_generated_tokens_total')) - tokensBefore;
    expect(generated).toBeLessThan(3000);
    await new Promise((r) => setTimeout(r, 500));
    expect((await serverMetric('bmoe_generated_tokens_total')) - tokensBefore).toBe(generated);
    // The turn is free again: the next message is answered.
    expect(await page.locator('#send').isHidden()).toBe(false);
    await page.goto(`${demo.url}?temperature=0&max_tokens=4`);
    await expect.poll(() => page.locator('#model-mode').innerText()).toBe('streaming');
    await page.locator('#input').fill('Shorter, please');
    await page.locator('#send').click();
    await expect.poll(() => page.locator('.msg.assistant').last().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
  });

  it('lists the folder in the model picker with size against RAM and settings, and switches models', async () => {
    await page.goto(`${demo.url}?temperature=0&max_tokens=8`);
    await expect.poll(() => page.locator('#model-mode').innerText()).toBe('streaming');
    await page.locator('#model-button').click();
    const items = page.locator('#picker-list li');
    await expect.poll(() => items.count()).toBe(2);
    const first = items.nth(0);
    expect(await first.locator('.file').innerText()).toBe('a-tiny-qwen3moe.gguf');
    expect(await first.getAttribute('class')).toContain('current');
    expect(await first.locator('.facts').innerText()).toMatch(/^9 MiB of 2\.\d GiB RAM \(0%\) · qwen3moe, 4 layers, 16 experts top-4, dense \d MiB$/);
    const expected = demo.state().model!.settings!;
    expect(await first.locator('.opts').innerText()).toBe(`--moe-stream · threads 1 · ctx 4096 · cache auto ≤ ${expected.cacheCeilMb} MiB · lanes 4 · overlap auto · route-ahead auto`);
    expect(await first.locator('.why').innerText()).toBe(expected.reason);
    expect(await first.locator('.load').isDisabled()).toBe(true);
    const second = items.nth(1);
    expect(await second.locator('.file').innerText()).toBe('b-tiny-gpt-oss.gguf');
    expect(await second.locator('.facts').innerText()).toContain('gpt-oss, 4 layers, 8 experts top-4');

    await second.locator('.load').click();
    await expect.poll(() => page.locator('#model-name').innerText(), { timeout: 60_000 }).toBe('b-tiny-gpt-oss.gguf');
    await expect.poll(() => page.locator('#model-mode').innerText(), { timeout: 60_000 }).not.toBe('loading');
    const s = demo.state();
    expect(s.state).toBe('ready');
    expect(s.model?.file).toBe('b-tiny-gpt-oss.gguf');
    expect(await page.locator('#model-mode').innerText()).toBe(s.model!.settings!.mode === 'stream' ? 'streaming' : 'resident');
    // The page's settings are the rule's for this device.
    expect(s.model!.settings).toEqual(chooseSettings(s.model as Parameters<typeof chooseSettings>[0], s.device));
    // The new model answers.
    await page.locator('#input').fill('Hello');
    await page.locator('#send').click();
    await expect.poll(() => page.locator('.msg.assistant').last().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    const models = (await (await fetch(new URL('/v1/models', demo.url))).json()) as { data: Array<{ id: string }> };
    expect(models.data[0]?.id).toBe('b-tiny-gpt-oss');
  });

  it('asked for no resource beyond its own origin', () => {
    expect(foreign).toEqual([]);
  });
});

describe('what a hostile page or client meets', () => {
  it('a browser that reached the demo by a foreign name (DNS rebinding) gets 403, not the page', async () => {
    const context = await browser.newContext();
    try {
      const rebound = await context.newPage();
      const res = await rebound.goto(`http://${REBOUND}:${new URL(demo.url).port}/`);
      expect(res?.status()).toBe(403);
      expect(JSON.parse(await res!.text())).toMatchObject({ error: { code: 'host_not_allowed' } });
      const api = await rebound.evaluate(async () => (await fetch('/api/state')).status);
      expect(api).toBe(403);
    } finally {
      await context.close();
    }
  });

  it("a body over the server's limit gets the server's 413 through the forwarder, with or without a length", async () => {
    const url = new URL('/v1/chat/completions', demo.url);
    const big = JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(10 * 1024 * 1024) }] });
    const sized = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: big });
    expect(sized.status).toBe(413);
    expect(await sized.json()).toEqual({ error: { message: 'the request body is larger than the limit of 1048576 bytes', type: 'invalid_request_error', param: null, code: 'request_too_large' } });
    const bytes = new TextEncoder().encode(big);
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        for (let at = 0; at < bytes.length; at += 64 * 1024) c.enqueue(bytes.subarray(at, at + 64 * 1024));
        c.close();
      },
    });
    const unsized = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chunked, duplex: 'half' } as RequestInit);
    expect(unsized.status).toBe(413);
    expect(((await unsized.json()) as { error: { code: string } }).error.code).toBe('request_too_large');
    // The demo still serves.
    const ok = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 }) });
    expect(ok.status).toBe(200);
  });

  it('a demo with an API key serves the page opened with it, and asks a page without it', async () => {
    const keyed = await startDemo({ modelsDir: dir, port: 0, apiKey: 'sekret', device: await streamingDevice(fixture('tiny-qwen3moe')) });
    const context = await browser.newContext({ viewport: { width: 360, height: 800 } });
    try {
      expect((await keyed.settled()).state).toBe('ready');
      expect((await fetch(new URL('/api/state', keyed.url))).status).toBe(401);
      expect((await fetch(new URL('/v1/models', keyed.url))).status).toBe(401);
      const withKey = await context.newPage();
      await withKey.goto(`${keyed.url}?temperature=0&max_tokens=4#key=sekret`);
      await expect.poll(() => withKey.locator('#model-mode').innerText()).toBe('streaming');
      // The key leaves the address bar (it stays in the page's storage).
      expect(new URL(withKey.url()).hash).toBe('');
      await withKey.locator('#input').fill('Hello');
      await withKey.locator('#send').click();
      await expect.poll(() => withKey.locator('.msg.assistant').last().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
      expect(await withKey.locator('.msg.assistant .stats').last().innerText()).toMatch(/^4 tokens/);

      const stranger = await browser.newPage();
      stranger.on('dialog', (d) => void d.dismiss());
      await stranger.goto(keyed.url);
      await expect.poll(() => stranger.locator('#empty').innerText()).toMatch(/^missing API key.*#key=/);
      await stranger.close();
    } finally {
      await context.close();
      await keyed.close();
    }
  });
});
