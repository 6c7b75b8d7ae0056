// Writing a model as shards, laid out exactly as the pinned llama.cpp's
// `llama-gguf-split --split-max-size N` lays out the same model (tools/gguf-split/gguf-split.cpp
// split_strategy): tensors in order, a new shard whenever the next tensor (padded to 32 bytes)
// would take the shard's tensor bytes past N, never an empty shard; all metadata in the first
// shard followed by split.no, split.tensors.count and split.count; the other shards hold only
// those three keys. Streamed like writeGguf, one chunk at a time; the shards are written as
// `.partial` files and renamed only once all of them are complete.

import { createHash } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { quoteName } from './quote.js';
import { SPLIT_COUNT, SPLIT_NO, SPLIT_TENSORS_COUNT, splitPath } from './split.js';
import { GgufValueType } from './types.js';
import type { GgufValue } from './values.js';
import { layoutGguf, writeLayout, type GgufLayout, type GgufSpec, type TensorProducer, type WriteOptions, type WriteResult } from './writer.js';

/** GGUF_DEFAULT_ALIGNMENT: what llama-gguf-split pads every tensor to when it sizes shards. */
const SPLIT_PAD = 32;

/** A split model as written: `path` is the first shard (the model's name), `bytes` all shards. */
export interface SplitWriteResult extends WriteResult {
  /** Hex SHA-256 of the shards concatenated in order (what hashing `cat` of them gives). */
  readonly sha256: string;
  /** Every shard in order, with its own size and hash. */
  readonly shards: readonly WriteResult[];
}

/**
 * A `--split-max-size` value as llama-gguf-split reads it: a positive integer with M (10^6 bytes)
 * or G (10^9 bytes); also plain bytes. Throws RangeError on anything else.
 */
export function parseSplitSize(text: string): number {
  const m = /^([0-9]+)([MG]?)$/.exec(text.trim());
  const n = m ? Number(m[1]) * (m[2] === 'G' ? 1e9 : m[2] === 'M' ? 1e6 : 1) : NaN;
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new RangeError(`split size ${JSON.stringify(text)} is not a positive number of bytes, or of megabytes/gigabytes with M or G (300M, 2G)`);
  }
  return n;
}

/**
 * The shards of `layout` (a planned single file) at most `maxBytes` of tensor data each, named
 * `<prefix>-0000k-of-0000n.gguf`. Pure. Throws RangeError when the first tensor alone is larger
 * than `maxBytes` (llama-gguf-split refuses that too: its first shard would hold no tensor).
 */
export function layoutSplit(layout: GgufLayout, prefix: string, maxBytes: number): GgufLayout[] {
  if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) throw new RangeError(`split size ${maxBytes} is not a positive integer`);
  const groups: number[][] = [[]];
  let cur = 0;
  layout.tensors.forEach((t, i) => {
    const n = Math.ceil(t.bytes / SPLIT_PAD) * SPLIT_PAD;
    if (cur + n > maxBytes) {
      if (groups.at(-1)!.length === 0) {
        throw new RangeError(`split size ${maxBytes} bytes is smaller than tensor ${quoteName(t.name)} (${n} bytes): the first shard would hold no tensor`);
      }
      groups.push([]);
      cur = n;
    } else {
      cur += n;
    }
    groups.at(-1)!.push(i);
  });
  const count = groups.length;
  if (count > 0xffff) throw new RangeError(`split size ${maxBytes} bytes makes ${count} shards, more than split.count (u16) can say`);
  const meta = [...layout.kv].filter(([k]) => k !== SPLIT_NO && k !== SPLIT_COUNT && k !== SPLIT_TENSORS_COUNT);
  return groups.map((idx, k) => {
    const split: Array<[string, GgufValue]> = [
      [SPLIT_NO, { type: GgufValueType.UINT16, value: k }],
      [SPLIT_TENSORS_COUNT, { type: GgufValueType.INT32, value: layout.tensors.length }],
      [SPLIT_COUNT, { type: GgufValueType.UINT16, value: count }],
    ];
    const spec: GgufSpec = {
      kv: k === 0 ? [...meta, ...split] : split,
      tensors: idx.map((i) => layout.tensors[i]!),
      alignment: layout.alignment,
      alignmentKey: k === 0 || layout.alignment !== SPLIT_PAD,
    };
    const shard = layoutGguf(spec, splitPath(prefix, k, count));
    return { ...shard, tensors: shard.tensors.map((t) => ({ ...t, shard: k })) };
  });
}

/**
 * Write `layout` as shards of at most `maxBytes` tensor bytes each (layoutSplit), pulling every
 * tensor's bytes from `produce` with its index in `layout` (the info given is the shard's: offset
 * in the shard, `shard` set). Nothing is left at the shard paths on error or abort; existing
 * files there are replaced.
 */
export async function writeGgufSplit(
  prefix: string,
  layout: GgufLayout,
  maxBytes: number,
  produce: TensorProducer,
  opts: WriteOptions = {},
): Promise<SplitWriteResult> {
  const shards = layoutSplit(layout, prefix, maxBytes);
  const total = shards.reduce((s, l) => s + l.fileSize, 0);
  const whole = createHash('sha256');
  const written: WriteResult[] = [];
  const partials: string[] = [];
  const renamed: string[] = [];
  let first = 0;
  let before = 0;
  try {
    for (const shard of shards) {
      const own = createHash('sha256');
      const hash = { update: (c: Uint8Array): void => void (own.update(c), whole.update(c)) };
      const base = first;
      const done = before;
      partials.push(`${shard.path}.partial`);
      const bytes = await writeLayout(partials.at(-1)!, shard, (t, i) => produce(t, base + i), hash, {
        signal: opts.signal,
        onProgress: opts.onProgress && ((d: number) => opts.onProgress!(done + d, total)),
      });
      written.push({ path: shard.path, bytes, sha256: own.digest('hex') });
      first += shard.tensors.length;
      before += bytes;
    }
    for (const w of written) {
      await rename(`${w.path}.partial`, w.path);
      renamed.push(w.path);
    }
  } catch (e) {
    await Promise.all([...partials, ...renamed].map((p) => rm(p, { force: true })));
    throw e;
  }
  return { path: written[0]!.path, bytes: before, sha256: whole.digest('hex'), shards: written };
}
