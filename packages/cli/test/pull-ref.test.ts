// bmoe pull's pure parts: reference parsing, quant matching and file selection, and the bench's
// `--model REF` rewriting (against the loopback hub).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isModelRef, parseModelRef, resolveModelFlags } from '../src/hub/index.js';
import { modelsDir } from '../src/hub/models-dir.js';
import { localName } from '../src/hub/pull.js';
import { groupModels, listNames, matchesQuant, selectFiles, selectProjector } from '../src/hub/select.js';
import { startFakeHub } from './fake-hub.js';

const f = (path: string) => ({ path, size: 1, sha256: null });

describe('model references', () => {
  it('parses hf: repositories, quants, revisions, files and URLs', () => {
    expect(parseModelRef('hf:acme/Model-GGUF:Q4_K_M')).toMatchObject({ kind: 'hf', repo: 'acme/Model-GGUF', revision: 'main', quant: 'Q4_K_M', file: null });
    expect(parseModelRef('hf:acme/m@v2.0')).toMatchObject({ repo: 'acme/m', revision: 'v2.0', quant: null });
    expect(parseModelRef('hf:acme/m/Q8_0/x-00001-of-00002.gguf')).toMatchObject({ repo: 'acme/m', file: 'Q8_0/x-00001-of-00002.gguf' });
    expect(parseModelRef('https://example.com/a/b.gguf')).toMatchObject({ kind: 'url' });
    expect(isModelRef('/tmp/model.gguf')).toBe(false);
    expect(isModelRef('hf:a/b')).toBe(true);
  });

  it('refuses malformed references and paths that leave the folder, in one line', () => {
    expect(() => parseModelRef('hf:acme')).toThrow(/is not a Hugging Face reference/);
    expect(() => parseModelRef('hf:acme/m/../../etc/x.gguf')).toThrow(/not a plain file path/);
    expect(() => parseModelRef('hf:acme/m/README.md')).toThrow(/does not name a \.gguf file/);
    expect(() => parseModelRef('https://example.com/a/b.bin')).toThrow(/does not name a \.gguf file/);
  });

  it('puts models in BMOE_MODELS_DIR, the Termux folder in Termux, else the cache', () => {
    expect(modelsDir({ BMOE_MODELS_DIR: '/m', HOME: '/h' })).toBe('/m');
    expect(modelsDir({ HOME: '/h', PREFIX: '/data/data/com.termux/files/usr' })).toBe('/h/bmoe/models');
    expect(modelsDir({ HOME: '/h' })).toBe('/h/.cache/bmoe/models');
    expect(modelsDir({ HOME: '/h', XDG_CACHE_HOME: '/c' })).toBe('/c/bmoe/models');
  });
});

describe('local names', () => {
  it('read back to one repository file: no two (repository, path) pairs share a name', () => {
    expect(localName('alice/m_x', 'y-Q4_K_M.gguf')).toBe('alice+m_x+y-Q4_K_M.gguf');
    expect(localName('alice/m', 'x_y-Q4_K_M.gguf')).toBe('alice+m+x_y-Q4_K_M.gguf');
    expect(localName('a/m', 'Q4_K_M/m-Q4_K_M-00001-of-00002.gguf')).toBe('a+m+Q4_K_M+m-Q4_K_M-00001-of-00002.gguf');
    expect(localName('a/m', 'x+y/50%.gguf')).toBe('a+m+x%2By+50%25.gguf');
    const pairs: [string, string][] = [
      ['a/b', 'c/d.gguf'],
      ['a/b', 'c+d.gguf'],
      ['a/b', 'c%2Bd.gguf'],
      ['a/b_c', 'd.gguf'],
      ['a/b', 'c_d.gguf'],
      ['a_b/c', 'd.gguf'],
      ['a/b_c_d', 'x.gguf'],
    ];
    expect(new Set(pairs.map(([repo, path]) => localName(repo, path))).size).toBe(pairs.length);
  });
});

describe('name lists in messages', () => {
  it('show at most 20 names and how many more', () => {
    expect(listNames(['a', 'b'])).toBe('a, b');
    const names = Array.from({ length: 10_000 }, (_, i) => `m${i}.gguf`);
    expect(listNames(names)).toBe(`${names.slice(0, 20).join(', ')} and 9980 more`);
    expect(listNames(names.slice(0, 20))).toBe(names.slice(0, 20).join(', '));
  });
});

describe('quant selection', () => {
  const files = ['M-Q4_K_M.gguf', 'M-q8_0.gguf', 'BF16/M-BF16-00001-of-00002.gguf', 'BF16/M-BF16-00002-of-00002.gguf', 'm.Q5_K_S.gguf', 'x_IQ2_XXS.gguf', 'mmproj-F16.gguf'].map(f);

  it('matches quant words in names, dotted names, folders and shards, case-insensitively', () => {
    const groups = groupModels(files);
    const find = (q: string) => groups.filter((g) => matchesQuant(g, q)).map((g) => g.key);
    expect(find('q4_k_m')).toEqual(['M-Q4_K_M.gguf']);
    expect(find('Q8_0')).toEqual(['M-q8_0.gguf']);
    expect(find('bf16')).toEqual(['BF16/M-BF16.gguf']);
    expect(find('Q5_K_S')).toEqual(['m.Q5_K_S.gguf']);
    expect(find('IQ2_XXS')).toEqual(['x_IQ2_XXS.gguf']);
    expect(find('Q4_K')).toEqual([]);
  });

  it('takes every shard in order, and refuses an incomplete split', () => {
    const sel = selectFiles(files, { text: 'hf:a/m:BF16', repo: 'a/m', quant: 'BF16', file: null });
    expect(sel.files.map((x) => x.path)).toEqual(['BF16/M-BF16-00001-of-00002.gguf', 'BF16/M-BF16-00002-of-00002.gguf']);
    const broken = [f('S-Q8_0-00001-of-00003.gguf'), f('S-Q8_0-00003-of-00003.gguf')];
    expect(() => selectFiles(broken, { text: 'hf:a/s', repo: 'a/s', quant: null, file: null })).toThrow(/split into 3 shards but the repository has 2 of them/);
  });

  it('without a quant takes the only model (projectors aside), else Q4_K_M, else lists them', () => {
    expect(selectFiles([f('one-Q8_0.gguf'), f('mmproj-one-F16.gguf')], { text: 'hf:a/o', repo: 'a/o', quant: null, file: null }).files[0]!.path).toBe('one-Q8_0.gguf');
    expect(() => selectFiles([f('a-Q8_0.gguf'), f('a-Q6_K.gguf')], { text: 'hf:a/b', repo: 'a/b', quant: null, file: null })).toThrow(
      'hf:a/b: the repository has 2 GGUF models: Q6_K, Q8_0; name one, e.g. hf:a/b:Q6_K',
    );
    expect(() => selectFiles([f('README.md')], { text: 'hf:a/r', repo: 'a/r', quant: null, file: null })).toThrow(/has no GGUF model files/);
  });
});

describe('the image projector fetched with a model', () => {
  const paths = (files: ReadonlyArray<{ path: string }> | null): string[] | null => files?.map((x) => x.path) ?? null;
  const pick = (repo: string[], model: string): string[] | null => paths(selectProjector(repo.map(f), [f(model)], 'hf:a/v'));

  it('F16 first, then BF16, then F32, then the rest by name; none when the repository has none', () => {
    expect(pick(['v-Q4_K_M.gguf', 'mmproj-F32.gguf', 'mmproj-BF16.gguf', 'mmproj-F16.gguf', 'mmproj-Q8_0.gguf'], 'v-Q4_K_M.gguf')).toEqual(['mmproj-F16.gguf']);
    expect(pick(['v-Q4_K_M.gguf', 'mmproj-v-f32.gguf', 'mmproj-v-bf16.gguf'], 'v-Q4_K_M.gguf')).toEqual(['mmproj-v-bf16.gguf']);
    expect(pick(['v-Q4_K_M.gguf', 'mmproj-Q8_0.gguf', 'mmproj-F32.gguf'], 'v-Q4_K_M.gguf')).toEqual(['mmproj-F32.gguf']);
    expect(pick(['v-Q4_K_M.gguf', 'mmproj-v-Q8_0.gguf', 'mmproj-a-Q8_0.gguf'], 'v-Q4_K_M.gguf')).toEqual(['mmproj-a-Q8_0.gguf']);
    expect(pick(['v-Q4_K_M.gguf', 'README.md'], 'v-Q4_K_M.gguf')).toBeNull();
  });

  it("prefers the model's folder, else takes one anywhere; a projector pulled by path brings none", () => {
    const repo = ['Q4_K_M/v-Q4_K_M-00001-of-00002.gguf', 'Q4_K_M/v-Q4_K_M-00002-of-00002.gguf', 'mmproj-F16.gguf', 'Q4_K_M/mmproj-BF16.gguf'];
    expect(pick(repo, 'Q4_K_M/v-Q4_K_M-00001-of-00002.gguf')).toEqual(['Q4_K_M/mmproj-BF16.gguf']);
    expect(pick(['Q4_K_M/v-Q4_K_M.gguf', 'mmproj-F16.gguf'], 'Q4_K_M/v-Q4_K_M.gguf')).toEqual(['mmproj-F16.gguf']);
    expect(pick(['mmproj-F16.gguf', 'mmproj-F32.gguf'], 'mmproj-F32.gguf')).toBeNull();
  });
});

describe('bench --model REF', () => {
  it('pulls references given to --model and leaves paths and other flags alone', async () => {
    const data = Buffer.from('GGUF bench model bytes');
    const hub = await startFakeHub({ 'acme/b-GGUF': { files: [{ path: 'b-Q8_0.gguf', data }] } });
    const dir = await mkdtemp(join(tmpdir(), 'bmoe-pull-bench-'));
    try {
      const env = { HF_ENDPOINT: hub.url, BMOE_MODELS_DIR: dir, HOME: dir };
      const out = await resolveModelFlags(['matrix', '--model', '/x/local.gguf', '--model=hf:acme/b-GGUF', '--out', 'o', '--', '--model', 'hf:z/z'], { env, log: () => undefined });
      const pulled = join(dir, 'acme+b-GGUF+b-Q8_0.gguf');
      expect(out).toEqual(['matrix', '--model', '/x/local.gguf', `--model=${pulled}`, '--out', 'o', '--', '--model', 'hf:z/z']);
      expect((await readFile(pulled)).equals(data)).toBe(true);
    } finally {
      await hub.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
