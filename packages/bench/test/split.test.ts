// A split model benched by its first shard: the row records the whole model's bytes (every shard),
// not the first shard's.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchRowSchema } from '@bmoe/engine/metrics';
import { makeModel } from '@bmoe/gguf';
import { afterAll, expect, it } from 'vitest';

const BENCH = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const CLI = fileURLToPath(new URL('../../cli/dist/bin.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'bmoe-bench-split-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

it('a matrix row of a split model records all its shards in fileBytes', async () => {
  const made = await makeModel({ preset: 'tiny-gpt-oss', out: join(root, 'm.gguf'), splitMaxBytes: 2_000_000 });
  expect(made.shards.length).toBeGreaterThan(1);
  const out = join(root, 'out');
  const argv = [BENCH, 'matrix', '--model', made.path, '--configs', 'smoke', '--n', '4', '-t', '2', '--out', out, '--no-progress', '--prompt', 'Once upon a time'];
  const code = await new Promise<number | null>((resolve, reject) => {
    const child = spawn(process.execPath, argv, { stdio: 'ignore', env: { ...process.env, BMOE_CLI: CLI } });
    child.on('error', reject);
    child.on('close', resolve);
  });
  expect(code).toBe(0);
  const rec = benchRowSchema.parse(JSON.parse(readFileSync(join(out, 'm-00001-of-00003__mmap.metrics.json'), 'utf8')));
  expect(rec.status).toBe('ok');
  expect(rec.model.fileBytes).toBe(made.shards.reduce((s, x) => s + statSync(x.path).size, 0));
  expect(rec.model.fileBytes).toBeGreaterThan(statSync(made.path).size);
}, 180_000);
