// `bmoe make-model --preset tiny-<arch>` for every MoE architecture of the pinned llama.cpp: its own
// fixture writer (tests/test-llama-archs.cpp, built as llama-arch-fixtures) saves a small random
// model of the architecture — 2 layers, F32, 128-row embedding, every tensor the architecture has
// (shared experts, dense leading layers, recurrent blocks, ...). Those files carry no vocabulary
// (llama.cpp aborts on their first token), so bmoe writes them again with a 128-token SentencePiece
// vocabulary: single characters, then filler words; the tensors are copied byte for byte.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { llamaToolPath } from '@bmoe/engine';
import { gv, readGguf, writeGguf, type GgufValue } from '@bmoe/gguf';

export const ARCH_FIXTURE_TOOL = 'llama-arch-fixtures';
const CHARS = '▁abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?;:\'"()-';

/** llama.cpp's SentencePiece ("llama") vocabulary of exactly `n` tokens: <unk>, <s>, </s>, characters, filler words. */
export function fixtureVocabulary(n: number): [string, GgufValue][] {
  const tokens = ['<unk>', '<s>', '</s>', ...CHARS];
  const letters = CHARS.slice(1, 27);
  for (let i = 0; tokens.length < n; i++) tokens.push(`▁${letters[i % 26]}${letters[Math.floor(i / 26) % 26]}${i}`);
  tokens.length = n;
  return [
    ['tokenizer.ggml.model', gv.str('llama')],
    ['tokenizer.ggml.tokens', gv.strs(tokens)],
    ['tokenizer.ggml.scores', gv.f32s(tokens.map((_, i) => -i))],
    // 2 = unknown, 3 = control, 1 = normal (LLAMA_TOKEN_TYPE_*)
    ['tokenizer.ggml.token_type', gv.i32s(tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : 1)))],
    ['tokenizer.ggml.unknown_token_id', gv.u32(0)],
    ['tokenizer.ggml.bos_token_id', gv.u32(1)],
    ['tokenizer.ggml.eos_token_id', gv.u32(2)],
  ];
}

/** Runs llama.cpp's fixture writer for `arch` (or every architecture) into `dir`. */
export async function writeLlamaFixtures(dir: string, arch?: string): Promise<void> {
  const tool = llamaToolPath(ARCH_FIXTURE_TOOL);
  if (!tool) throw new Error(`${ARCH_FIXTURE_TOOL} is not built (it is built with the native addon: npm run setup)`);
  await mkdir(dir, { recursive: true }); // the writer does not create it (and then saves nothing)
  await promisify(execFile)(tool, [...(arch ? ['-a', arch] : []), '-o', dir], { maxBuffer: 64 << 20 });
}

/** Writes `fixture` (a file of llama.cpp's fixture writer) to `out` with a vocabulary. */
export async function addVocabulary(fixture: string, out: string): Promise<{ path: string; bytes: number; sha256: string }> {
  const file = await readGguf(fixture);
  const rows = file.tensors.find((t) => t.name === 'token_embd.weight')?.dims[1];
  if (rows === undefined) throw new Error(`${fixture}: no token_embd.weight to size a vocabulary by`);
  const kv: [string, GgufValue][] = [...file.kv].filter(([k]) => !k.startsWith('tokenizer.') && k !== 'general.alignment');
  kv.push(...fixtureVocabulary(rows));
  const src = await open(fixture, 'r');
  try {
    const tensors = file.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type }));
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const res = await writeGguf(out, { kv, tensors, alignment: file.alignment }, async function* (t) {
      const from = byName.get(t.name)!;
      const buf = Buffer.alloc(from.bytes);
      await src.read(buf, 0, from.bytes, from.offset);
      yield buf;
    });
    return { path: res.path, bytes: res.bytes, sha256: res.sha256 };
  } finally {
    await src.close();
  }
}

/** `tiny-<arch>`: llama.cpp's MoE fixture of `arch`, with a vocabulary, at `out`. */
export async function makeArchFixture(arch: string, out: string): Promise<{ path: string; bytes: number; sha256: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'bmoe-arch-'));
  try {
    try {
      await writeLlamaFixtures(dir, arch);
    } catch (err) {
      if (!llamaToolPath(ARCH_FIXTURE_TOOL)) throw err;
      throw new Error(`tiny-${arch}: the pinned llama.cpp knows no architecture '${arch}' (llama.cpp's names, e.g. tiny-olmoe, tiny-qwen2moe)`);
    }
    const made = join(dir, `${arch}-moe.gguf`);
    try {
      return await addVocabulary(made, out);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' || /no such file/.test(String(err))) {
        throw new Error(`tiny-${arch}: llama.cpp's fixture writer makes no MoE model of architecture '${arch}'`);
      }
      throw err;
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
