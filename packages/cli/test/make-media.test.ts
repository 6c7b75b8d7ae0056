// `make-model --mmproj` and `make-image`, through the built executable: the files they write are
// @bmoe/gguf's makeProjector / makeTestImage outputs byte for byte, and bad requests are one line.
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kvString, makeProjector, makeTestImage, readGguf } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lines, runCli } from './helpers.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'bmoe-cli-media-'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const sha256Of = async (path: string): Promise<string> => createHash('sha256').update(await readFile(path)).digest('hex');
const row = (stdout: string, label: string): string | undefined => new RegExp(`^${label}\\s{2,}(.+)$`, 'm').exec(stdout)?.[1];

describe('bmoe make-model --mmproj', () => {
  it("writes the model and the preset's projector with the same seed", async () => {
    const model = join(dir, 'm.gguf');
    const mmproj = join(dir, 'sub', 'mmproj.gguf');
    const r = await runCli(['make-model', '--preset', 'mini-qwen35moe', '--out', model, '--mmproj', mmproj, '--seed', '3'], { timeoutMs: 300_000 });
    expect(r.stderr).not.toMatch(/error/);
    expect(r.code).toBe(0);
    expect(row(r.stdout, 'path')).toBe(model);
    expect(row(r.stdout, 'mmproj')).toBe(mmproj);
    expect(row(r.stdout, 'mmproj size')).toMatch(/\(\d+ bytes\)$/);
    expect(row(r.stdout, 'mmproj sha256')).toBe(await sha256Of(mmproj));
    const f = await readGguf(mmproj);
    expect(kvString(f.kv, 'clip.projector_type')).toBe('qwen3vl_merger');
    const same = await makeProjector({ preset: 'mini-qwen35moe', seed: 3, out: join(dir, 'same.gguf') });
    expect(row(r.stdout, 'mmproj sha256')).toBe(same.sha256);
  });

  it('a preset without a projector is one usage error line naming those with one; nothing is written', async () => {
    const out = join(dir, 'q.gguf');
    const r = await runCli(['make-model', '--preset', 'tiny-qwen3moe', '--out', out, '--mmproj', join(dir, 'q-mmproj.gguf')]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/--mmproj: preset tiny-qwen3moe \(qwen3moe\) has no projector; presets with one: /);
    for (const p of ['mini-qwen35moe', 'tiny-gemma4']) expect(r.stderr).toContain(p);
    expect(existsSync(out)).toBe(false);
  });

  it('--mmproj does not apply to llama.cpp fixtures', async () => {
    const r = await runCli(['make-model', '--preset', 'tiny-olmoe', '--out', join(dir, 'o.gguf'), '--mmproj', join(dir, 'o-mmproj.gguf')]);
    expect(r.code).toBe(2);
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(/--mmproj does not apply to tiny-olmoe/);
  });
});

describe('bmoe make-image', () => {
  it.each([
    ['png', 'x.png'],
    ['jpeg', 'sub/x.JPG'],
  ] as const)('writes a %s, the format following the extension', async (format, name) => {
    const out = join(dir, name);
    const r = await runCli(['make-image', '--out', out, '--width', '40', '--height', '30', '--seed', '4']);
    expect(r.code).toBe(0);
    expect(row(r.stdout, 'path')).toBe(out);
    expect(row(r.stdout, 'image')).toBe(`40x30 ${format}`);
    const bytes = await readFile(out);
    expect(new Uint8Array(bytes)).toEqual(makeTestImage({ width: 40, height: 30, seed: 4, format }));
    expect(row(r.stdout, 'sha256')).toBe(await sha256Of(out));
  });

  it.each([
    [['make-image', '--out', 'x.gif', '--width', '4', '--height', '4'], /must be \.png, \.jpg or \.jpeg/],
    [['make-image', '--out', 'x.png', '--width', '4'], /needs --out, --width and --height/],
    [['make-image', '--out', 'x.png', '--width', '0', '--height', '4'], /'0' is invalid/],
  ])('%j is a usage error: exit 2, one line', async (args, message) => {
    const r = await runCli(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(lines(r.stderr)).toHaveLength(1);
    expect(r.stderr).toMatch(message);
  });
});
