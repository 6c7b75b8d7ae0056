// `--kv-dir DIR`: conversations evicted from a slot are written to DIR (the engine's session
// state files) and restored into a slot when they come back, across restarts too, within a disk
// budget (least recently used files go first). The disk is a cache: a full disk, a damaged file or
// a file of another model evicts or skips, and never fails a request.
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Session } from '@bmoe/engine';
import { messageOf } from './errors.js';

export interface KvEntry {
  /** File name in the directory (`conv-<hash>.kv`). */
  file: string;
  /** The tokens whose KV the file holds. */
  tokens: number[];
  bytes: number;
  lastUsed: number;
}

const INDEX = 'index.json';
const INDEX_MAX_BYTES = 256 * 1024 * 1024;
const FILE_NAME = /^conv-[0-9a-f]{24}\.kv$/;

export class KvStore {
  private entries: KvEntry[] = [];
  saves = 0;
  restores = 0;

  private constructor(
    readonly dir: string,
    readonly budgetBytes: number,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Opens DIR (created when missing) and its index; entries whose file is gone are dropped. An
   * unreadable index starts empty (its files are then unknown and left alone).
   */
  static async open(dir: string, budgetBytes: number, log: (line: string) => void): Promise<KvStore> {
    await mkdir(dir, { recursive: true });
    const store = new KvStore(dir, budgetBytes, log);
    let listed: KvEntry[] = [];
    try {
      // A regular file of bounded size only: a FIFO or a device there would hold the load forever.
      const st = await stat(join(dir, INDEX));
      if (!st.isFile() || st.size > INDEX_MAX_BYTES) throw new Error(`not a regular file of at most ${INDEX_MAX_BYTES} bytes`);
      const parsed: unknown = JSON.parse(await readFile(join(dir, INDEX), 'utf8'));
      if (Array.isArray(parsed)) listed = parsed.filter(isEntry);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log(`kv-dir: ${join(dir, INDEX)} is unreadable (${messageOf(err)}); starting with an empty index`);
    }
    for (const e of listed) {
      const st = await stat(join(dir, e.file)).catch(() => null);
      if (st?.isFile()) store.entries.push({ ...e, bytes: st.size });
    }
    await store.enforceBudget();
    await store.writeIndex();
    return store;
  }

  /** The saved conversations' tokens, in the order `restore` takes an index. */
  tokenLists(): number[][] {
    return this.entries.map((e) => e.tokens);
  }

  get usedBytes(): number {
    return this.entries.reduce((a, e) => a + e.bytes, 0);
  }

  get count(): number {
    return this.entries.length;
  }

  /** Writes the session's conversation (`tokens`, what it holds) unless the same is saved already. */
  async save(session: Session, tokens: readonly number[], clock: number): Promise<void> {
    const file = `conv-${createHash('sha256').update(Int32Array.from(tokens)).digest('hex').slice(0, 24)}.kv`;
    const known = this.entries.find((e) => e.file === file);
    if (known) {
      known.lastUsed = clock;
      return;
    }
    try {
      const { bytes } = await session.save(join(this.dir, file));
      this.entries.push({ file, tokens: [...tokens], bytes, lastUsed: clock });
      this.saves++;
    } catch (err) {
      // A full disk or a vanished directory: make room for later saves; this one is skipped.
      this.log(`kv-dir: could not save a conversation of ${tokens.length} tokens (${messageOf(err)}); evicting the oldest files`);
      await this.evict(Math.ceil(this.entries.length / 2));
    }
    await this.enforceBudget();
    await this.writeIndex();
  }

  /** Loads saved conversation `index` into the session; false (and the file dropped) when it cannot be used. */
  async restore(session: Session, index: number, clock: number): Promise<boolean> {
    const e = this.entries[index];
    if (!e) return false;
    try {
      await session.load(join(this.dir, e.file));
      e.lastUsed = clock;
      this.restores++;
      await this.writeIndex();
      return true;
    } catch (err) {
      this.log(`kv-dir: dropped ${e.file}: ${messageOf(err)}`);
      await this.remove(e);
      await this.writeIndex();
      return false;
    }
  }

  /** Least recently used files go until the total fits the budget. */
  private async enforceBudget(): Promise<void> {
    this.entries.sort((a, b) => a.lastUsed - b.lastUsed);
    while (this.entries.length > 0 && this.usedBytes > this.budgetBytes) await this.remove(this.entries[0]!);
  }

  private async evict(n: number): Promise<void> {
    this.entries.sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of this.entries.slice(0, n)) await this.remove(e);
  }

  private async remove(e: KvEntry): Promise<void> {
    this.entries = this.entries.filter((x) => x !== e);
    await rm(join(this.dir, e.file), { force: true }).catch(() => undefined);
  }

  private async writeIndex(): Promise<void> {
    const tmp = join(this.dir, `${INDEX}.tmp-${process.pid}`);
    try {
      await writeFile(tmp, JSON.stringify(this.entries));
      await rename(tmp, join(this.dir, INDEX));
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      this.log(`kv-dir: could not write ${join(this.dir, INDEX)} (${messageOf(err)})`);
    }
  }
}

function isEntry(v: unknown): v is KvEntry {
  const e = v as KvEntry;
  return (
    typeof e === 'object' && e !== null && typeof e.file === 'string' && FILE_NAME.test(e.file) &&
    Array.isArray(e.tokens) && e.tokens.every((t) => Number.isInteger(t)) && typeof e.lastUsed === 'number'
  );
}
