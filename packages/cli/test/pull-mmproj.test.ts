// `bmoe pull` of a vision model from the loopback hub (fake-hub.ts): the repository's image
// projector comes with the model (F16, else BF16, else F32), sha256-checked like the rest, into
// the same folder, paired with the model in the manifest; `--no-mmproj` leaves it. Then run, info
// and a second, offline run take the pulled projector with the model (the engine's 'auto' does
// not: pulled files are named owner+repo+path, and the models folder is every model's).
import { readFile, mkdtemp, mkdir, rm, writeFile, copyFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nativeBuild } from '@bmoe/engine';
import { makeModel, makeProjector, makeTestImage } from '@bmoe/gguf';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { startFakeHub, type FakeHub } from './fake-hub.js';
import { lines, runCli, type CliResult } from './helpers.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const blob = (n: number, seed: number): Buffer => Buffer.from(randomBytes(n).map((b) => b ^ seed));

let hub: FakeHub;
let root: string;
let dir: string;
let local: { model: string; mmproj: string; image: string };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'bmoe-pull-mmproj-'));
  const made = join(root, 'made');
  local = { model: join(made, 'vision-Q8_0.gguf'), mmproj: join(made, 'mmproj-F16.gguf'), image: join(root, 'a.png') };
  await makeModel({ preset: 'tiny-gemma4', out: local.model });
  await makeProjector({ preset: 'tiny-gemma4', out: local.mmproj, seed: 1 });
  await writeFile(local.image, makeTestImage({ width: 96, height: 64, format: 'png', seed: 1 }));
  hub = await startFakeHub({
    'acme/vision-GGUF': {
      files: [
        { path: 'README.md', data: Buffer.from('# vision\n') },
        { path: 'vision-Q8_0.gguf', data: await readFile(local.model) },
        { path: 'mmproj-F32.gguf', data: blob(3000, 1) },
        { path: 'mmproj-BF16.gguf', data: blob(2000, 2) },
        { path: 'mmproj-F16.gguf', data: await readFile(local.mmproj) },
      ],
    },
    'acme/bf16-GGUF': {
      files: [
        { path: 'm-Q4_K_M.gguf', data: blob(4000, 3) },
        { path: 'mmproj-m-f32.gguf', data: blob(3000, 4) },
        { path: 'mmproj-m-bf16.gguf', data: blob(2000, 5) },
      ],
    },
    'acme/badproj-GGUF': {
      files: [
        { path: 'b-Q4_K_M.gguf', data: blob(4000, 6) },
        { path: 'mmproj-F16.gguf', data: blob(2000, 7), served: blob(2000, 8) },
      ],
    },
  });
}, 300_000);

afterAll(async () => {
  await hub?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

beforeEach(async () => {
  dir = join(root, `models-${Math.random().toString(36).slice(2)}`);
  await mkdir(dir);
  hub.requests.length = 0;
});

const env = (): NodeJS.ProcessEnv => ({ HF_ENDPOINT: hub.url, HF_TOKEN: '', BMOE_MODELS_DIR: dir });
const pull = (args: string[]): Promise<CliResult> => runCli(['pull', ...args], { env: env() });
const cdnPaths = (): string[] => hub.requests.filter((q) => q.path.startsWith('/cdn/')).map((q) => q.path);

describe('bmoe pull and image projectors', () => {
  it("fetches the model and its F16 projector into the same folder, both sha256-checked, paired in the manifest; again: both already here", async () => {
    const r = await pull(['hf:acme/vision-GGUF']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${join(dir, 'acme+vision-GGUF+vision-Q8_0.gguf')}\n`);
    const projector = join(dir, 'acme+vision-GGUF+mmproj-F16.gguf');
    expect((await readFile(projector)).equals(await readFile(local.mmproj))).toBe(true);
    expect(r.stderr).toMatch(/^bmoe pull: hf:acme\/vision-GGUF: with its image projector mmproj-F16\.gguf \(--no-mmproj skips it\)$/m);
    expect(r.stderr).toMatch(/^bmoe pull: hf:acme\/vision-GGUF: 2 files, /m);
    expect(r.stderr).toMatch(/^bmoe pull: acme\+vision-GGUF\+mmproj-F16\.gguf: .*, sha256 verified$/m);
    expect(cdnPaths().sort()).toEqual(['/cdn/acme/vision-GGUF/mmproj-F16.gguf', '/cdn/acme/vision-GGUF/vision-Q8_0.gguf']);
    const manifest = JSON.parse(await readFile(join(dir, '.bmoe-pull.json'), 'utf8')) as { projectors: Record<string, string>; refs: Record<string, string[]> };
    expect(manifest.projectors).toEqual({ 'acme+vision-GGUF+vision-Q8_0.gguf': 'acme+vision-GGUF+mmproj-F16.gguf' });
    expect(manifest.refs['hf:acme/vision-GGUF']).toEqual(['acme+vision-GGUF+vision-Q8_0.gguf']);

    hub.requests.length = 0;
    const again = await pull(['hf:acme/vision-GGUF']);
    expect(again.code, again.stderr).toBe(0);
    expect(lines(again.stderr).filter((l) => l.includes('already here'))).toHaveLength(2);
    expect(cdnPaths()).toEqual([]);
  });

  it('--no-mmproj fetches the model alone', async () => {
    const r = await pull(['hf:acme/vision-GGUF', '--no-mmproj']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/: 1 file, /);
    expect(r.stderr).not.toMatch(/projector/);
    expect(cdnPaths()).toEqual(['/cdn/acme/vision-GGUF/vision-Q8_0.gguf']);
    const manifest = JSON.parse(await readFile(join(dir, '.bmoe-pull.json'), 'utf8')) as { projectors: Record<string, string> };
    expect(manifest.projectors).toEqual({});
  });

  it('BF16 when there is no F16; a projector whose bytes do not match its sha256 is refused like a model', async () => {
    const r = await pull(['hf:acme/bf16-GGUF']);
    expect(r.code, r.stderr).toBe(0);
    expect(cdnPaths().sort()).toEqual(['/cdn/acme/bf16-GGUF/m-Q4_K_M.gguf', '/cdn/acme/bf16-GGUF/mmproj-m-bf16.gguf']);

    const bad = await pull(['hf:acme/badproj-GGUF']);
    expect(bad.code).toBe(1);
    const errors = lines(bad.stderr).filter((l) => l.startsWith('bmoe: error:'));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/mmproj-F16\.gguf: checksum mismatch: the published sha256 is [0-9a-f]{64}, the downloaded bytes have [0-9a-f]{64}; refused/);
  });

  it.runIf(nativeAvailable)('run, info and an offline run take the pulled projector with the model (hf: REF and its local path)', async () => {
    // The reference: the same files side by side, as the engine's 'auto' finds them.
    const sampled = ['--image', local.image, '-p', 'What is in this picture?', '-n', '8', '-t', '2', '--temp', '1.5', '--seed', '7'];
    const direct = await runCli(['run', local.model, ...sampled], { timeoutMs: 120_000 });
    expect(direct.code, direct.stderr).toBe(0);

    const byRef = await runCli(['run', 'hf:acme/vision-GGUF', ...sampled], { env: env(), timeoutMs: 120_000 });
    expect(byRef.code, byRef.stderr).toBe(0);
    expect(byRef.stdout).toBe(direct.stdout);
    expect(cdnPaths()).toContain('/cdn/acme/vision-GGUF/mmproj-F16.gguf');

    const pulled = join(dir, 'acme+vision-GGUF+vision-Q8_0.gguf');
    const info = await runCli(['info', pulled], { env: env() });
    expect(info.stdout).toMatch(new RegExp(`^projector\\s+${join(dir, 'acme+vision-GGUF+mmproj-F16.gguf').replace(/[.+]/g, '\\$&')} \\(`, 'm'));

    hub.requests.length = 0;
    const offline = await runCli(['run', 'hf:acme/vision-GGUF', ...sampled], { env: env(), timeoutMs: 120_000 });
    expect(offline.code, offline.stderr).toBe(0);
    expect(offline.stdout).toBe(direct.stdout);
    expect(hub.requests).toEqual([]);
    const byPath = await runCli(['run', pulled, ...sampled], { env: env(), timeoutMs: 120_000 });
    expect(byPath.stdout).toBe(direct.stdout);

    // A model pulled without its projector is a model without one.
    const bare = join(root, 'bare');
    await mkdir(bare);
    await copyFile(local.model, join(bare, 'vision-Q8_0.gguf'));
    const none = await runCli(['run', join(bare, 'vision-Q8_0.gguf'), ...sampled]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/has no projector beside it/);
  });
});
