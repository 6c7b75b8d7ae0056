// The per-token CSV: header, one row per token, and a validating reader (the bench's analyzer
// reads CSVs back, so a file that does not match the schema must fail loudly, naming the line).
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { BmoeError } from '../errors.js';
import { COLUMNS, CSV_COLUMNS, tokenMetricsSchema, type TokenMetrics } from './columns.js';

/** Milliseconds are written with microsecond resolution: finer digits are timer noise. */
const MS_DECIMALS = 3;

/** The header line, with its trailing newline. */
export function csvHeader(): string {
  return stringify([CSV_COLUMNS]);
}

/** One record as a CSV line (trailing newline included). `null` is written as an empty cell. */
export function csvRow(rec: TokenMetrics): string {
  return csvRows([rec]);
}

/**
 * Records as CSV lines, in one call of the CSV writer: each call of it sets its options up again,
 * which for one row costs more than the row (measured per token with --cpu-prof on `bmoe run --csv`).
 */
export function csvRows(records: readonly TokenMetrics[]): string {
  return records.length === 0 ? '' : stringify(records.map((rec) => COLUMNS.map((c) => formatCell(rec[c.key], c.integer))));
}

/** A whole file: header plus one row per record. */
export function toCsv(records: readonly TokenMetrics[]): string {
  return csvHeader() + csvRows(records);
}

function formatCell(value: number | null, integer: boolean): string {
  if (value === null) return '';
  if (integer) return String(Math.round(value));
  const scale = 10 ** MS_DECIMALS;
  return String(Math.round(value * scale) / scale);
}

/**
 * Parses and validates a per-token CSV. The header must be exactly the schema's columns in order;
 * every cell must be a number (mem_available_bytes may be empty). Throws BmoeError('E_FORMAT')
 * naming the line and column of the first problem.
 */
export function parseMetricsCsv(text: string, source = 'metrics CSV'): TokenMetrics[] {
  let rows: string[][];
  try {
    rows = parse(text, { skip_empty_lines: true, trim: true, relax_column_count: true }) as string[][];
  } catch (err) {
    throw new BmoeError('E_FORMAT', `${source}: not valid CSV (${(err as Error).message})`);
  }
  const header = rows[0];
  if (!header) throw new BmoeError('E_FORMAT', `${source}: empty file, expected the header ${CSV_COLUMNS.join(',')}`);
  checkHeader(header, source);
  return rows.slice(1).map((row, i) => parseRow(row, i + 2, source));
}

function checkHeader(header: readonly string[], source: string): void {
  for (let i = 0; i < Math.max(header.length, CSV_COLUMNS.length); i++) {
    if (header[i] !== CSV_COLUMNS[i]) {
      const want = CSV_COLUMNS[i] ?? '(end of header)';
      const got = header[i] ?? '(end of header)';
      throw new BmoeError('E_FORMAT', `${source}: header column ${i + 1} is ${got}, expected ${want}`);
    }
  }
}

function parseRow(row: readonly string[], line: number, source: string): TokenMetrics {
  if (row.length !== COLUMNS.length) {
    throw new BmoeError('E_FORMAT', `${source}: line ${line} has ${row.length} cells, expected ${COLUMNS.length}`);
  }
  const rec: Record<string, number | null> = {};
  COLUMNS.forEach((c, i) => {
    const cell = row[i] ?? '';
    rec[c.key] = cell === '' ? null : Number(cell);
  });
  const parsed = tokenMetricsSchema.safeParse(rec);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = String(issue?.path[0] ?? '');
    const column = COLUMNS.find((c) => c.key === key)?.column ?? key;
    const cell = row[COLUMNS.findIndex((c) => c.key === key)];
    throw new BmoeError('E_FORMAT', `${source}: line ${line}, ${column} = '${cell ?? ''}' is not valid (${issue?.message ?? 'invalid'})`);
  }
  return parsed.data;
}
