// Tiny synthetic models per test run (made with @bmoe/gguf's makeModel, ~9 MB each, under a second):
// tiny-qwen3moe for most tests, tiny-gpt-oss for tool calls,
// handed to the tests through vitest's provide/inject. The tests also spawn the built `bmoe`
// executable (identity with `bmoe run`, SIGTERM on `bmoe serve`): when vitest runs outside turbo,
// this rebuilds @bmoe/server's and @bmoe/cli's dist if a source file is newer than it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeModel } from '@bmoe/gguf';
import type { TestProject } from 'vitest/node';
import { buildIfStale } from '../../../tooling/test-utils.mjs';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Path of the tiny-qwen3moe fixture. */
    fixture: string;
    /** Path of the tiny-gpt-oss fixture (harmony format: its tool-call grammar). */
    gptOssFixture: string;
  }
}

export const FIXTURE_PRESET = 'tiny-qwen3moe';

export default async function setup(project: TestProject): Promise<() => void> {
  const packages = fileURLToPath(new URL('../../', import.meta.url));
  buildIfStale(join(packages, 'server'), 'index.js');
  buildIfStale(join(packages, 'cli'), 'bin.js');
  const dir = mkdtempSync(join(tmpdir(), 'bmoe-server-test-'));
  const fixture = join(dir, `${FIXTURE_PRESET}.gguf`);
  await makeModel({ preset: FIXTURE_PRESET, out: fixture });
  project.provide('fixture', fixture);
  const gptOss = join(dir, 'tiny-gpt-oss.gguf');
  await makeModel({ preset: 'tiny-gpt-oss', out: gptOss });
  project.provide('gptOssFixture', gptOss);
  return () => rmSync(dir, { recursive: true, force: true });
}
