// Where the tests find the package and the fixture models (made by global-setup.ts).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inspectModel } from '@bmoe/engine';
import { deviceWithUsable, RULE, type DeviceFacts } from '../src/settings.js';

export const PKG_DIR = fileURLToPath(new URL('..', import.meta.url));
export const REPO_DIR = join(PKG_DIR, '..', '..');
export const FIXTURE_DIR = join(PKG_DIR, '.models');
export const FIXTURES = ['tiny-qwen3moe', 'tiny-gpt-oss'] as const;
export const fixture = (preset: (typeof FIXTURES)[number]): string => join(FIXTURE_DIR, `${preset}.gguf`);

const MiB = 1024 * 1024;

/**
 * A phone too small to hold `path` resident, with room for an expert cache of 2.5 working sets:
 * the settings rule then streams it through a warm-capable cache (cores: 1, so one compute
 * thread, which keeps a shared 2-core machine responsive; overlap and route-ahead auto, measured by the streamer).
 */
export async function streamingDevice(path: string): Promise<DeviceFacts> {
  const info = await inspectModel(path);
  const usable = info.denseBytes + RULE.overheadBytes + Math.ceil((2.5 * info.workingSetBytes) / MiB) * MiB;
  return deviceWithUsable(usable, 1);
}
