// `--csv FILE`: rows are appended to FILE.partial as tokens arrive and the file is renamed into
// place only when the run completes, so FILE is either absent or a complete, valid CSV. Rows are
// written 64 KiB at a time: a write per token put a syscall and a thread-pool hop beside every
// decode, whose two compute threads already hold both cores of a small machine.
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { csvHeader, csvRow, type TokenMetrics } from '@bmoe/engine/metrics';

/** Rows buffered before a write. */
const FLUSH_BYTES = 64 * 1024;

export class CsvFile {
  private pending = '';

  private constructor(
    readonly path: string,
    private readonly partial: string,
    private readonly fh: FileHandle,
  ) {}

  static async create(path: string): Promise<CsvFile> {
    const partial = `${path}.partial`;
    const fh = await open(partial, 'w');
    await fh.write(csvHeader());
    return new CsvFile(path, partial, fh);
  }

  async write(rec: TokenMetrics): Promise<void> {
    this.pending += csvRow(rec);
    if (this.pending.length >= FLUSH_BYTES) await this.flush();
  }

  private async flush(): Promise<void> {
    const rows = this.pending;
    this.pending = '';
    if (rows) await this.fh.write(rows);
  }

  /** Completes the file: flush, close, rename into place. */
  async commit(): Promise<void> {
    await this.flush();
    await this.fh.sync();
    await this.fh.close();
    await rename(this.partial, this.path);
  }

  /** Removes the partial file (error or abort): no truncated CSV is left behind. */
  async discard(): Promise<void> {
    await this.fh.close().catch(() => undefined);
    await rm(this.partial, { force: true });
  }
}
