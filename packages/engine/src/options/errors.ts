// Option errors that know which options they are about. The message names options by their API
// keys ("stream.ioThreads must be ..."); the error keeps its parts, so a caller that knows the
// options by other names (the CLI: flags) renders the same error in its own words, without
// parsing message text:
//
//   throw optionError`${opt('ubatchSize')} must be at most ${opt('batchSize')} (${b}), got ${u}`;
//   describeOptionError(err, flagName)  // "--ubatch-size must be at most --batch-size (64), got 128"
import { BmoeError } from '../errors.js';
import { boolFlagFor, findOption, optionRow, type OptionKey, type OptionRow } from './table.js';

/** A reference to an option inside an error message; `value` when the message names one ("stream.moeStream: true"). */
export class OptionRef {
  constructor(
    readonly key: OptionKey,
    readonly value?: unknown,
  ) {}
}

/** An option named in a message. */
export function opt(key: OptionKey, value?: unknown): OptionRef {
  return new OptionRef(key, value);
}

/** One piece of an option error's message: text, or an option to be named. */
export type OptionErrorPart = string | { readonly option: OptionKey; readonly value?: unknown };

/** How options are called: by API key (the engine's messages) or by flag (the CLI's). */
export type OptionNamer = (row: OptionRow, value?: unknown) => string;

/** 'stream.ioThreads', "stream.cacheMb: 'auto'", 'stream.moeStream: true'. */
export const apiName: OptionNamer = (row, value) =>
  value === undefined ? row.key : `${row.key}: ${typeof value === 'string' ? `'${value}'` : String(value)}`;

/**
 * '--io-threads', '--cache-mb auto', '--moe-stream' (a boolean's flag is its value: false names the
 * row's '--no-…' flag where it has one, '--no-route-ahead'); the API key where there is no flag.
 */
export const flagName: OptionNamer = (row, value) => {
  if (!row.flag) return apiName(row, value);
  if (row.value.type === 'bool') return boolFlagFor(row, value) ?? row.flag;
  return value === undefined ? row.flag : `${row.flag} ${String(value)}`;
};

/** Renders message parts with a namer. */
export function renderParts(parts: readonly OptionErrorPart[], name: OptionNamer): string {
  return parts.map((p) => (typeof p === 'string' ? p : name(optionRow(p.option), p.value))).join('');
}

/** BmoeError('E_OPTION') about named options: `option` is the first one, `parts` the message to render in other words. */
export class OptionError extends BmoeError {
  readonly option: OptionKey | null;
  readonly parts: readonly OptionErrorPart[];

  constructor(parts: readonly OptionErrorPart[], options?: { cause?: unknown }) {
    super('E_OPTION', renderParts(parts, apiName), options);
    this.parts = parts;
    const first = parts.find((p) => typeof p !== 'string');
    this.option = first && typeof first !== 'string' ? first.option : null;
  }
}

/** A tagged template: `${opt(key)}` interpolations become named options, anything else text. */
export function optionError(strings: TemplateStringsArray, ...values: unknown[]): OptionError {
  const parts: OptionErrorPart[] = [];
  strings.forEach((s, i) => {
    if (s) parts.push(s);
    if (i >= values.length) return;
    const v = values[i];
    parts.push(v instanceof OptionRef ? { option: v.key, ...(v.value === undefined ? {} : { value: v.value }) } : String(v));
  });
  return new OptionError(parts);
}

/** An error about the option at `path` (a key of the table, else plain text) with a requirement. */
export function optionPathError(path: string, rest: string): BmoeError {
  const row = findOption(path);
  return row ? new OptionError([{ option: row.key as OptionKey }, rest]) : new BmoeError('E_OPTION', `${path}${rest}`);
}

/**
 * The message of an option error with its options named by `name`, or null when `err` is not
 * one (another error, or an E_OPTION that names no option). Duck-typed on `code` and `parts`, so
 * it works across copies of this module.
 */
export function describeOptionError(err: unknown, name: OptionNamer): string | null {
  if (!(err instanceof Error) || (err as { code?: unknown }).code !== 'E_OPTION') return null;
  const parts = (err as { parts?: unknown }).parts;
  if (!Array.isArray(parts)) return null;
  const ok = parts.every((p) => typeof p === 'string' || (p !== null && typeof p === 'object' && findOption((p as { option?: unknown }).option as string) !== undefined));
  return ok ? renderParts(parts as OptionErrorPart[], name) : null;
}
