// A copy of a GGUF with some metadata replaced: what a model file's author may change without
// touching the weights (a chat template, a token id). Tensors are copied byte for byte, one at a
// time; the copy is written as `.partial` and renamed once complete, like writeGguf.
import { open } from 'node:fs/promises';
import { readGguf } from './reader.js';
import type { GgufValue } from './values.js';
import { writeGguf, type WriteResult } from './writer.js';

/**
 * Copies `src` to `out` with each key of `metadata` set to its value (added when absent), or
 * removed when the value is null. `general.alignment` is kept from the source.
 */
export async function rewriteGguf(src: string, out: string, metadata: Readonly<Record<string, GgufValue | null>>): Promise<WriteResult> {
  const file = await readGguf(src);
  const kv: [string, GgufValue][] = [];
  for (const [k, v] of file.kv) {
    if (k === 'general.alignment') continue;
    const next = k in metadata ? metadata[k] : v;
    if (next !== null && next !== undefined) kv.push([k, next]);
  }
  for (const [k, v] of Object.entries(metadata)) {
    if (v !== null && !file.kv.has(k)) kv.push([k, v]);
  }
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const fh = await open(src, 'r');
  try {
    const tensors = file.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type }));
    return await writeGguf(out, { kv, tensors, alignment: file.alignment }, async function* (t) {
      const from = byName.get(t.name);
      if (!from) throw new Error(`${src}: no tensor ${t.name}`);
      const buf = Buffer.alloc(from.bytes);
      await fh.read(buf, 0, from.bytes, from.offset);
      yield buf;
    });
  } finally {
    await fh.close();
  }
}
