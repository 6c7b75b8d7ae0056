#!/usr/bin/env node
// Takes docs/screenshot.png: the demo serving a model of MODELS_DIR, a two-turn conversation in
// Debian's Chromium at 390×844 (device pixel ratio 2), captured while the second reply streams.
// The device is planned as a phone whose spare RAM holds the dense weights and half the experts,
// so the model streams through a warm cache; every number on the page is measured on this machine.
//
//   node scripts/screenshot.mjs MODELS_DIR [OUT]     (build first: npx tsup)
import { availableParallelism } from 'node:os';
import { inspectModel } from '@bmoe/engine';
import { chromium } from 'playwright-core';
import { deviceWithUsable, listModels, RULE, startDemo } from '../dist/index.js';

const [modelsDir, out = new URL('../docs/screenshot.png', import.meta.url).pathname] = process.argv.slice(2);
if (!modelsDir) {
  console.error('usage: node scripts/screenshot.mjs MODELS_DIR [OUT]');
  process.exit(2);
}

const MiB = 1024 * 1024;
const cores = availableParallelism();
const [first] = await listModels(modelsDir, deviceWithUsable(64 * 1024 * MiB, cores));
if (!first) throw new Error(`no GGUF in ${modelsDir}`);
const info = await inspectModel(first.path);
const usable = info.denseBytes + RULE.overheadBytes + Math.ceil(info.expertBytes / 2 / MiB) * MiB;
const device = deviceWithUsable(usable, cores);

const demo = await startDemo({ modelsDir, port: 0, device, log: (l) => console.error(`demo: ${l}`) });
const state = await demo.settled();
if (state.state !== 'ready') throw new Error(`the model did not load: ${state.error}`);
const browser = await chromium.launch({ executablePath: process.env.BMOE_CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox'] });
try {
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true });
  await page.goto(`${demo.url}?max_tokens=48`);
  await page.waitForFunction(() => document.getElementById('model-mode')?.textContent === 'streaming');
  const ask = async (text) => {
    await page.fill('#input', text);
    await page.click('#send');
  };
  await ask('Why can a phone run a model bigger than its RAM?');
  await page.waitForFunction(() => document.querySelector('.msg.assistant')?.dataset.done === 'complete', null, { timeout: 120_000 });
  await ask('And what does the expert cache do?');
  await page.waitForFunction(() => (document.querySelectorAll('.msg.assistant')[1]?.textContent ?? '').length > 60, null, { timeout: 120_000 });
  await page.screenshot({ path: out });
  console.error(`wrote ${out}`);
  await page.click('#stop').catch(() => undefined);
} finally {
  await browser.close();
  await demo.close();
}
