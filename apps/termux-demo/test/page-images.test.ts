// Photos in the chat page, in Debian's headless Chromium at a phone viewport, against the demo
// serving a tiny vision model (tiny-gemma4 and its generated projector, in a folder of their own)
// and a text model through the real @bmoe/server: the attach button shows for the model that
// takes images only, a photo goes out as an `image_url` data-URL part (observed on the request the
// page sent) and comes back in the next turn's history, a big photo is drawn down to 1024 px
// before it leaves the page, and a photo the server cannot read gets its one-line refusal.
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemo, type Demo } from '../src/demo.js';
import { fixture, streamingDevice } from './fixtures.js';

const CHROMIUM = process.env.BMOE_CHROMIUM ?? '/usr/bin/chromium';
const VISION = 'gemma4/model.gguf';
const TEXT = 'a-tiny-qwen3moe.gguf';

interface SentPart {
  type: string;
  text?: string;
  image_url?: { url: string };
}
interface SentMessage {
  role: string;
  content: string | SentPart[];
}

let dir: string;
let demo: Demo;
let browser: Browser;
let page: Page;
/** The bodies of the chat requests the page sent, as they went out. */
const sent: Array<{ messages: SentMessage[] }> = [];
interface Usage {
  prompt_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
}
/** The usage each chat answer's stream ended with (in the order the answers finished). */
const usages: Usage[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-demo-images-'));
  await copyFile(fixture('tiny-qwen3moe'), join(dir, TEXT));
  // The vision model and its projector in a folder of their own, as the hub ships them.
  await makeModel({ preset: 'tiny-gemma4', out: join(dir, VISION) });
  await makeProjector({ preset: 'tiny-gemma4', out: join(dir, 'gemma4', 'mmproj-F16.gguf'), seed: 1 });
  demo = await startDemo({ modelsDir: dir, model: VISION, port: 0, device: await streamingDevice(join(dir, VISION)) });
  const s = await demo.settled();
  expect(s.state, s.error ?? '').toBe('ready');
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 360, height: 800 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  page = await context.newPage();
  page.on('request', (req) => {
    if (req.method() === 'POST' && new URL(req.url()).pathname === '/v1/chat/completions') sent.push(req.postDataJSON() as { messages: SentMessage[] });
  });
  page.on('requestfinished', async (req) => {
    if (req.method() !== 'POST' || new URL(req.url()).pathname !== '/v1/chat/completions') return;
    const body = (await (await req.response())?.text().catch(() => '')) ?? ''; // '' for a page navigated away from
    const chunks = body.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { usage?: Usage });
    const usage = chunks.find((c) => c.usage)?.usage;
    if (usage) usages.push(usage);
  });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await demo?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const png = (width: number, height: number, seed: number): Buffer => Buffer.from(makeTestImage({ width, height, format: 'png', seed }));
const lastReply = () => page.locator('.msg.assistant').last();
const metric = (name: string): Promise<string> => page.locator(`[data-metric="${name}"]`).innerText();

/** The size of the image a data URL holds, as the browser decodes it. */
function decodedSize(url: string): Promise<[number, number]> {
  return page.evaluate(async (src) => {
    const img = new Image();
    img.src = src;
    await img.decode();
    return [img.naturalWidth, img.naturalHeight] as [number, number];
  }, url);
}

async function openPage(): Promise<void> {
  await page.goto(`${demo.url}?temperature=0&max_tokens=8`);
  await expect.poll(() => page.locator('#model-name').innerText()).toBe(VISION);
  await expect.poll(() => page.locator('#attach').isVisible()).toBe(true);
}

describe('photos in the chat at 360×800', () => {
  it('a model that takes images: the photo goes out as an image_url part, shows in the chat, and comes back in the next turn', async () => {
    await openPage();
    // The file input opens the camera on a phone.
    expect(await page.locator('#photo-input').getAttribute('accept')).toBe('image/*');
    expect(await page.locator('#photo-input').getAttribute('capture')).toBe('environment');
    const photo = png(320, 240, 3);
    await page.locator('#photo-input').setInputFiles({ name: 'blocks.png', mimeType: 'image/png', buffer: photo });
    await expect.poll(() => page.locator('#photos .thumb img').count()).toBe(1);
    // A photo alone can be sent; with it, a question.
    expect(await page.locator('#send').isDisabled()).toBe(false);
    await page.locator('#input').fill('What is in this photo?');
    const n = sent.length;
    await page.locator('#send').click();
    await expect.poll(() => lastReply().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    expect((await lastReply().locator('.text').innerText()).length).toBeGreaterThan(0);
    expect(await lastReply().locator('.stats').innerText()).toMatch(/^8 tokens · [\d.]+ tok\/s/);
    // The composer is empty again; the photo is in the user's bubble.
    expect(await page.locator('#photos').isHidden()).toBe(true);
    const user = page.locator('.msg.user').last();
    expect(await user.locator('.photos img').count()).toBe(1);
    expect(await user.locator('.text').innerText()).toBe('What is in this photo?');
    // What went out: the small PNG as it is, as a data URL, then the text.
    const url = `data:image/png;base64,${photo.toString('base64')}`;
    expect(sent.length).toBe(n + 1);
    expect(sent[n]!.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'image_url', image_url: { url } },
          { type: 'text', text: 'What is in this photo?' },
        ],
      },
    ]);
    expect(await user.locator('.photos img').getAttribute('src')).toBe(url);
    // The live panel filled as for text.
    expect(Number.parseFloat(await metric('toks'))).toBeGreaterThan(0);
    expect(Number.parseFloat(await metric('flash'))).toBeGreaterThan(0);

    await expect.poll(() => usages.length).toBe(n + 1);
    const first = usages[n]!;

    // The next turn sends the history with the photo in it, as it was, and the server reuses the
    // first turn's cache, image included, instead of encoding the image again.
    const reply = await lastReply().locator('.text').innerText();
    await page.locator('#input').fill('And its colours?');
    await page.locator('#send').click();
    await expect.poll(() => lastReply().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    expect(sent.length).toBe(n + 2);
    const history = sent[n + 1]!.messages;
    expect(history).toHaveLength(3);
    expect(history[0]).toEqual(sent[n]!.messages[0]);
    expect(history[1]).toEqual({ role: 'assistant', content: reply });
    expect(history[2]).toEqual({ role: 'user', content: 'And its colours?' });
    await expect.poll(() => usages.length).toBe(n + 2);
    const second = usages[n + 1]!;
    expect(second.prompt_tokens_details?.cached_tokens).toBeGreaterThanOrEqual(first.prompt_tokens);
    // The image's tokens were part of the first prompt (the question alone is far fewer).
    const textOnly = await fetch(new URL('/v1/chat/completions', demo.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'What is in this photo?' }], max_tokens: 1 }),
    });
    const textTokens = ((await textOnly.json()) as { usage: Usage }).usage.prompt_tokens;
    expect(first.prompt_tokens).toBeGreaterThan(textTokens + 32);
  });

  it('several photos wait in the composer, each with a remove button; a big one is drawn down to 1024 px as a JPEG before it is sent', async () => {
    await openPage();
    const big = Buffer.from(makeTestImage({ width: 3000, height: 2000, format: 'jpeg', seed: 5 }));
    await page.locator('#photo-input').setInputFiles([
      { name: 'camera.jpg', mimeType: 'image/jpeg', buffer: big },
      { name: 'small.png', mimeType: 'image/png', buffer: png(64, 48, 7) },
    ]);
    await expect.poll(() => page.locator('#photos .thumb').count()).toBe(2);
    await page.locator('#photos .thumb').nth(1).locator('.remove').click();
    expect(await page.locator('#photos .thumb').count()).toBe(1);
    expect(await page.locator('#photos .thumb img').getAttribute('alt')).toBe('camera.jpg');
    await page.locator('#input').fill('Describe it');
    const n = sent.length;
    await page.locator('#send').click();
    await expect.poll(() => lastReply().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    const parts = sent[n]!.messages[0]!.content as SentPart[];
    expect(parts.map((p) => p.type)).toEqual(['image_url', 'text']);
    const url = parts[0]!.image_url!.url;
    expect(url.startsWith('data:image/jpeg;base64,')).toBe(true);
    expect(await decodedSize(url)).toEqual([1024, 683]);
    expect(Buffer.from(url.slice(url.indexOf(',') + 1), 'base64').length).toBeLessThan(big.length);
  });

  it('a detailed photo whose request is over 1 MiB goes through: a model with a projector takes bodies with room for an image', async () => {
    await openPage();
    // Noise, made in the page as PNGs: as detailed as a sharp camera photo, no smaller as a JPEG.
    const noise = async (seed: number): Promise<Buffer> =>
      Buffer.from(
        await page.evaluate(async (s) => {
          const canvas = document.createElement('canvas');
          canvas.width = 1024;
          canvas.height = 1024;
          const ctx = canvas.getContext('2d')!;
          const pixels = ctx.createImageData(1024, 1024);
          let x = s;
          for (let i = 0; i < pixels.data.length; i++) {
            x = (Math.imul(x, 1103515245) + 12345) >>> 0;
            pixels.data[i] = i % 4 === 3 ? 255 : x >>> 24;
          }
          ctx.putImageData(pixels, 0, 0);
          return canvas.toDataURL('image/png').split(',')[1]!;
        }, seed),
        'base64',
      );
    await page.locator('#photo-input').setInputFiles([
      { name: 'noise-1.png', mimeType: 'image/png', buffer: await noise(1) },
      { name: 'noise-2.png', mimeType: 'image/png', buffer: await noise(2) },
    ]);
    await expect.poll(() => page.locator('#photos .thumb').count()).toBe(2);
    const n = sent.length;
    await page.locator('#send').click();
    // Answered, not refused (a forwarder at the 1 MiB of text requests would answer 413).
    await expect.poll(() => page.locator('.msg.assistant[data-done], .msg.error').count(), { timeout: 60_000 }).toBe(1);
    expect(await page.locator('.msg.error').allInnerTexts()).toEqual([]);
    expect(await lastReply().getAttribute('data-done')).toBe('complete');
    expect(JSON.stringify(sent[n]).length).toBeGreaterThan(1024 * 1024);
  });

  it("a photo the server cannot read: the server's one-line message in the chat, the photo back in the composer, and the page goes on", async () => {
    await openPage();
    const junk = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7919 + 13) % 251));
    await page.locator('#photo-input').setInputFiles({ name: 'x.png', mimeType: 'image/png', buffer: junk });
    await expect.poll(() => page.locator('#photos .thumb').count()).toBe(1);
    await page.locator('#input').fill('What is this?');
    await page.locator('#send').click();
    const error = page.locator('.msg.error').last();
    await expect.poll(() => error.count()).toBe(1);
    // The message is the server's own answer to that request.
    const direct = await fetch(new URL('/v1/chat/completions', demo.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: `data:image/png;base64,${junk.toString('base64')}` } }, { type: 'text', text: 'What is this?' }] }] }),
    });
    expect(direct.status).toBe(400);
    const message = ((await direct.json()) as { error: { message: string } }).error.message;
    expect(message).not.toContain('\n');
    expect(await error.innerText()).toBe(message);
    // The turn is back in the composer, to retry or change; the refused bubble is marked so.
    expect(await page.locator('.msg.user').last().getAttribute('class')).toContain('failed');
    expect(await page.locator('.msg.assistant').count()).toBe(0);
    await expect.poll(() => page.locator('#photos .thumb').count()).toBe(1);
    expect(await page.locator('#input').inputValue()).toBe('What is this?');
    // Without the photo, the same question is answered.
    await page.locator('#photos .thumb .remove').click();
    expect(await page.locator('#photos').isHidden()).toBe(true);
    const n = sent.length;
    await page.locator('#send').click();
    await expect.poll(() => lastReply().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');
    expect(sent[n]!.messages).toEqual([{ role: 'user', content: 'What is this?' }]);
  });

  it('a text model hides the attach button (checked again when the picker switches), and the picker says which model takes images', async () => {
    await openPage();
    await page.locator('#model-button').click();
    const items = page.locator('#picker-list li');
    await expect.poll(() => items.count()).toBe(2);
    expect(await items.nth(0).locator('.file').innerText()).toBe(TEXT);
    expect(await items.nth(0).locator('.facts').innerText()).not.toContain('images');
    expect(await items.nth(1).locator('.file').innerText()).toBe(VISION);
    expect(await items.nth(1).locator('.facts').innerText()).toMatch(/ · images: gemma4\/mmproj-F16\.gguf \(5 MiB\)$/);

    // Once the text model serves, the page asks the server about it and hides the button.
    const asked = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/models', { timeout: 60_000 });
    await items.nth(0).locator('.load').click();
    await expect.poll(() => page.locator('#model-name').innerText(), { timeout: 60_000 }).toBe(TEXT);
    await expect.poll(() => page.locator('#model-mode').innerText(), { timeout: 60_000 }).not.toBe('loading');
    expect(demo.state().state).toBe('ready');
    await asked;
    await page.waitForTimeout(300);
    expect(await page.locator('#attach').isHidden()).toBe(true);
    await page.locator('#input').fill('Hello');
    await page.locator('#send').click();
    await expect.poll(() => lastReply().getAttribute('data-done'), { timeout: 60_000 }).toBe('complete');

    await page.locator('#model-button').click();
    await expect.poll(() => items.count()).toBe(2);
    await items.nth(1).locator('.load').click();
    await expect.poll(() => page.locator('#model-name').innerText(), { timeout: 60_000 }).toBe(VISION);
    await expect.poll(() => page.locator('#attach').isVisible(), { timeout: 60_000 }).toBe(true);
  });
});
