// The metadata (key-value) section of a GGUF header. A file may claim arrays of hundreds of
// millions of items or strings of gigabytes that a sparse file makes cheap to fake, so what is
// turned into JavaScript values is bounded by a budget: a value over it is described (type,
// length, where it is) in `entries` but not loaded into `kv`. Scalar arrays over the budget are
// skipped without reading them; string arrays cost only their length fields.

import type { Cursor } from './cursor.js';
import { quoteName } from './quote.js';
import { GgufValueType, ggufScalarSize } from './types.js';
import type { GgufValue } from './values.js';

/** What the header says about one metadata value, whether or not it was loaded into `kv`. */
export interface GgufEntry {
  readonly type: GgufValueType;
  /** The item type of an array. */
  readonly itemType?: GgufValueType;
  /** Items of an array, bytes of a string, 1 for any other value. */
  readonly length: number;
  /** Absolute file offset where the key-value pair starts. */
  readonly offset: number;
  /** False when the value was over the read budget: it is described here but not in `kv`. */
  readonly loaded: boolean;
}

/** How much of the metadata readGguf turns into JavaScript values. */
export interface ReadOptions {
  /** Array items loaded over the whole file (default 4,194,304 = 2^22; real tokenizer tables hold ~1M). */
  maxItems?: number;
  /** String bytes loaded over the whole file (default 64 MiB; keys are bounded apart, see MAX_KEYS_BYTES). */
  maxStringBytes?: number;
}

export const DEFAULT_MAX_ITEMS = 1 << 22;
export const DEFAULT_MAX_STRING_BYTES = 64 << 20;
/** The GGUF specification's limit on a key's length. */
export const MAX_KEY_BYTES = 65_535;
/**
 * Strings one array may hold: 16x the largest tokenizer table. A string table is walked item by
 * item even when it is not loaded (its items have no fixed size), so this bounds the time (and the
 * page cache) a header may cost.
 */
export const MAX_STRING_ITEMS = 1 << 24;

/** Bytes all keys together may take (real headers: a few KB); keys cannot be skipped. */
export const MAX_KEYS_BYTES = 16 << 20;

/** What is left of the read budget; values draw from it as they are loaded. */
export interface Budget {
  items: number;
  bytes: number;
  keyBytes: number;
}

export interface Metadata {
  kv: Map<string, GgufValue>;
  entries: Map<string, GgufEntry>;
}

function isValueType(t: number): t is GgufValueType {
  return Number.isInteger(t) && t >= GgufValueType.UINT8 && t <= GgufValueType.FLOAT64;
}

/** Reads `count` key-value pairs (count was checked against the file size by the caller). */
export async function readMetadata(c: Cursor, count: number, budget: Budget): Promise<Metadata> {
  const kv = new Map<string, GgufValue>();
  const entries = new Map<string, GgufEntry>();
  for (let i = 0; i < count; i++) {
    const keyAt = c.pos;
    const keyBytes = await c.strLength(`key ${i}`);
    if (keyBytes > MAX_KEY_BYTES) c.fail(`metadata key ${i} is ${keyBytes} bytes long, GGUF allows at most ${MAX_KEY_BYTES}`, keyAt);
    if (keyBytes > budget.keyBytes) c.fail(`metadata keys take more than ${MAX_KEYS_BYTES} bytes (corrupt or hostile header)`, keyAt);
    budget.keyBytes -= keyBytes;
    const key = await c.strBytes(keyBytes, `key ${i}`);
    if (key.length === 0) c.fail(`metadata key ${i} is empty`, keyAt);
    if (entries.has(key)) c.fail(`duplicate metadata key ${quoteName(key)}`, keyAt);
    const typeAt = c.pos;
    const type = await c.u32(`type of ${quoteName(key)}`);
    if (!isValueType(type)) c.fail(`key ${quoteName(key)} has unknown value type ${type}`, typeAt);
    const { value, entry } = await readValue(c, type, key, keyAt, budget);
    entries.set(key, entry);
    if (value) kv.set(key, value);
  }
  return { kv, entries };
}

interface ValueRead {
  value: GgufValue | undefined;
  entry: GgufEntry;
}

async function readValue(c: Cursor, type: GgufValueType, key: string, offset: number, budget: Budget): Promise<ValueRead> {
  const what = `the value of ${quoteName(key)}`;
  if (type === GgufValueType.STRING) {
    const n = await c.strLength(what);
    const entry = { type, length: n, offset, loaded: n <= budget.bytes };
    if (!entry.loaded) {
      c.skip(n);
      return { value: undefined, entry };
    }
    budget.bytes -= n;
    return { value: { type, value: await c.strBytes(n, what) }, entry };
  }
  if (type !== GgufValueType.ARRAY) {
    // The union is keyed by type; the scalar reader returns the matching JS type.
    const value = { type, value: await c.scalar(type, what) } as GgufValue;
    return { value, entry: { type, length: 1, offset, loaded: true } };
  }
  return readArray(c, key, offset, budget);
}

async function readArray(c: Cursor, key: string, offset: number, budget: Budget): Promise<ValueRead> {
  const name = quoteName(key);
  const itemTypeAt = c.pos;
  const itemType = await c.u32(`the array item type of ${name}`);
  if (!isValueType(itemType)) c.fail(`array ${name} has unknown item type ${itemType}`, itemTypeAt);
  if (itemType === GgufValueType.ARRAY) c.fail(`array ${name} nests arrays, which GGUF readers do not accept`, itemTypeAt);
  const countAt = c.pos;
  const count = await c.u64(`the array length of ${name}`);
  const strings = itemType === GgufValueType.STRING;
  const minItem = strings ? 8 : ggufScalarSize(itemType);
  if (count * BigInt(minItem) > BigInt(c.remaining())) {
    c.fail(`array ${name} claims ${count} items but the file ends ${c.remaining()} bytes later, at byte ${c.size} (truncated or corrupt)`, countAt);
  }
  const n = Number(count);
  if (strings && n > MAX_STRING_ITEMS) c.fail(`array ${name} claims ${n} strings, more than the ${MAX_STRING_ITEMS} bmoe reads (corrupt or hostile)`, countAt);
  const described = (loaded: boolean): GgufEntry => ({ type: GgufValueType.ARRAY, itemType, length: n, offset, loaded });
  const itemName = (i: number): string => `item ${i} of ${name}`;
  if (n > budget.items) {
    if (strings) await c.skipStrings(n, itemName);
    else c.skip(n * minItem);
    return { value: undefined, entry: described(false) };
  }
  budget.items -= n;
  if (strings) {
    const items = await readStrings(c, n, itemName, budget);
    if (items) return { value: { type: GgufValueType.ARRAY, itemType, value: items }, entry: described(true) };
    budget.items += n;
    return { value: undefined, entry: described(false) };
  }
  const items: (number | bigint | boolean)[] = new Array<number | bigint | boolean>(n);
  for (let i = 0; i < n; i++) items[i] = c.scalarSync(itemType) ?? (await c.scalar(itemType, itemName(i)));
  return { value: { type: GgufValueType.ARRAY, itemType, value: items } as GgufValue, entry: described(true) };
}

/**
 * `n` strings, or undefined (and the cursor past all of them) when their bytes exceed the
 * string budget: the items read so far are dropped and the budget they took is given back.
 */
async function readStrings(c: Cursor, n: number, itemName: (i: number) => string, budget: Budget): Promise<string[] | undefined> {
  const items: string[] = new Array<string>(n);
  let bytes = 0;
  for (let i = 0; i < n; i++) {
    const at = c.pos;
    const s = c.strSync() ?? (await readOne(c, itemName(i), budget.bytes - bytes));
    if (s !== undefined) bytes += c.pos - at - 8;
    if (s === undefined || bytes > budget.bytes) {
      c.pos = at;
      await c.skipStrings(n - i, (j) => itemName(i + j));
      return undefined;
    }
    items[i] = s;
  }
  budget.bytes -= bytes;
  return items;
}

/** One string item by the slow path, or undefined when it is longer than `left` bytes. */
async function readOne(c: Cursor, what: string, left: number): Promise<string | undefined> {
  const at = c.pos;
  const len = await c.strLength(what);
  if (len > left) {
    c.pos = at;
    return undefined;
  }
  return c.strBytes(len, what);
}
