// THE per-token metrics schema. Its columns are written once, in core-native's contract
// (contract/token-metrics.mjs → TOKEN_COLUMNS of @bmoe/core-native/contract, from which the C++
// token_metrics struct and the addon's record are generated too). One name per thing: the
// snake_case column is the name in the CSV, the docs, the C++ struct and, by one rule, in
// Prometheus (./prometheus.ts); its camelCase is the TypeScript field and the key of the native
// addon's record. The TokenMetrics type, COLUMNS and the zod schema are derived here. Adding a
// metric: one row in the contract and its measurement.
import { TOKEN_COLUMNS } from '@bmoe/core-native/contract';
import { z } from 'zod';

/**
 * How a field aggregates over a run: `id` identifies the token; `time` (ms) and `counter` are
 * per-token deltas that add up; `gauge` is a level sampled after the token.
 */
export type FieldKind = 'id' | 'time' | 'counter' | 'gauge';

/** `wall_ms` → `wallMs`, as a type. */
type CamelCase<S extends string> = S extends `${infer Head}_${infer Tail}` ? `${Head}${Capitalize<CamelCase<Tail>>}` : S;

type Spec = (typeof TOKEN_COLUMNS)[number];

/** One generated token's measurements, one field per column of COLUMNS. Units are in the names. */
export type TokenMetrics = { [C in Spec as CamelCase<C['column']>]: C extends { nullable: true } ? number | null : number };

export interface ColumnDef {
  /** The CSV column / docs / C++ name (snake_case, unit suffix). */
  readonly column: string;
  /** The TypeScript / native record key (camelCase of `column`). */
  readonly key: keyof TokenMetrics;
  readonly kind: FieldKind;
  /** Whole numbers only (written without decimals); false for the `time` (ms) fields. */
  readonly integer: boolean;
  /** May be null (unknown); written as an empty CSV cell. */
  readonly nullable: boolean;
  /** Filled by the native addon (its record is generated from the same contract); false = read in JS after the token. */
  readonly native: boolean;
  readonly description: string;
}

/** The columns, in CSV order: the order of the spec's per-token CSV. */
export const COLUMNS: readonly ColumnDef[] = TOKEN_COLUMNS.map((c) => ({
  column: c.column,
  key: camelCase(c.column) as keyof TokenMetrics,
  kind: c.kind,
  // Times are milliseconds with a fraction; everything else counts whole things.
  integer: c.kind !== 'time',
  nullable: 'nullable' in c && c.nullable,
  native: !('native' in c && !c.native),
  description: c.description,
}));

/** The CSV header fields, in order. */
export const CSV_COLUMNS: readonly string[] = COLUMNS.map((c) => c.column);

/** `wall_ms` → `wallMs`. */
export function camelCase(snake: string): string {
  return snake.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase());
}

/** `wallMs` → `wall_ms`. */
export function snakeCase(camel: string): string {
  return camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

function fieldSchema(c: ColumnDef): z.ZodType<number | null> {
  const base = c.kind === 'time' ? z.number().nonnegative().finite() : z.number().int().nonnegative();
  return (c.nullable ? base.nullable() : base).describe(c.description);
}

type Shape = { [K in keyof TokenMetrics]: z.ZodType<TokenMetrics[K]> };

/** Runtime validation of one per-token record: exactly the keys of COLUMNS. */
export const tokenMetricsSchema = z.strictObject(Object.fromEntries(COLUMNS.map((c) => [c.key, fieldSchema(c)])) as Shape);

/** A record with every field zero (and the nullable ones unknown): handy for tests and fillers. */
export function emptyTokenMetrics(): TokenMetrics {
  const rec: Record<string, number | null> = {};
  for (const c of COLUMNS) rec[c.key] = c.nullable ? null : 0;
  return rec as TokenMetrics;
}
