// `--csv FILE`: rows are appended to FILE.partial as tokens arrive and the file is renamed into
// place only when the run completes, so FILE is either absent or a complete, valid CSV.
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { csvHeader, csvRow, type TokenMetrics } from '@bmoe/engine/metrics';

export class CsvFile {
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
    await this.fh.write(csvRow(rec));
  }

  /** Completes the file: flush, close, rename into place. */
  async commit(): Promise<void> {
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
