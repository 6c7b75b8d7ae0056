// What one option's value may be, and the one-line requirement a bad value is told. The engine's
// zod schemas and the CLI's flag parsers both check values with `checkValue`, so an option has
// one range and one message wherever it is given. Pure: no zod, no native code.

/** An integer in [min, max]; `orAuto` also accepts the string 'auto'. */
export interface IntSpec {
  readonly type: 'int';
  readonly min: number;
  /** Default: Number.MAX_SAFE_INTEGER (no bound beyond being a safe integer). */
  readonly max?: number;
  /** The unit a user writes the number in, shown in the requirement ('MiB'). */
  readonly unit?: string;
  /** The string 'auto' is a value too. */
  readonly orAuto?: boolean;
}

/** A finite number >= min (> min when `minExclusive`) when min is given, and <= max when given. */
export interface NumberSpec {
  readonly type: 'number';
  /** Default: no lower bound (any finite number). */
  readonly min?: number;
  readonly minExclusive?: boolean;
  readonly max?: number;
}

/** true or false; `orAuto` also accepts the string 'auto' (a tri-state: forced on, forced off, or decided at run time). */
export interface BoolSpec {
  readonly type: 'bool';
  readonly orAuto?: boolean;
}

export interface EnumSpec {
  readonly type: 'enum';
  readonly values: readonly string[];
}

export interface StringSpec {
  readonly type: 'string';
}

export type ValueSpec = IntSpec | NumberSpec | BoolSpec | EnumSpec | StringSpec;

/** The value a spec describes, as a TypeScript type. */
export type ValueOf<S extends ValueSpec> = S extends IntSpec
  ? S['orAuto'] extends true
    ? number | 'auto'
    : number
  : S extends NumberSpec
    ? number
    : S extends BoolSpec
      ? S['orAuto'] extends true
        ? boolean | 'auto'
        : boolean
      : S extends EnumSpec
        ? S['values'][number]
        : string;

const quote = (s: string): string => `'${s}'`;

/** "'a' or 'b'", "'a', 'b' or 'c'". */
function either(values: readonly string[]): string {
  const q = values.map(quote);
  return q.length <= 1 ? (q[0] ?? "''") : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`;
}

function intMessages(spec: IntSpec): { base: string; range: string } {
  const unit = spec.unit && spec.orAuto ? ` (${spec.unit})` : '';
  const auto = spec.orAuto ? " or 'auto'" : '';
  const base = `must be a${spec.min >= 1 ? ' positive' : spec.min >= 0 ? ' non-negative' : 'n'} integer${unit}${auto}`;
  const max = spec.max ?? Number.MAX_SAFE_INTEGER;
  const bounded = spec.min > 1 || spec.min < 0 || max < Number.MAX_SAFE_INTEGER;
  return { base, range: bounded ? `must be an integer from ${spec.min} to ${max}${unit}${auto}` : base };
}

function numberMessage(spec: NumberSpec): string {
  if (spec.min === undefined) return spec.max === undefined ? 'must be a finite number' : `must be a number <= ${spec.max}`;
  if (spec.max === undefined) return `must be a number ${spec.minExclusive ? '>' : '>='} ${spec.min}`;
  return `must be a number in ${spec.minExclusive ? '(' : '['}${spec.min}, ${spec.max}]`;
}

/**
 * The requirement a value breaks, or null when it is a good value. Integers: a non-integer or a
 * value below 0 (or 1 when min >= 1) is told the base rule ("must be a positive integer"), one
 * outside a narrower range is told the range ("must be an integer from 1 to 64").
 */
export function checkValue(spec: ValueSpec, v: unknown): string | null {
  switch (spec.type) {
    case 'int': {
      if (spec.orAuto && v === 'auto') return null;
      const { base, range } = intMessages(spec);
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || (spec.min >= 0 && v < Math.min(spec.min, 1))) return base;
      return v < spec.min || v > max ? range : null;
    }
    case 'number': {
      const message = numberMessage(spec);
      if (typeof v !== 'number' || !Number.isFinite(v)) return message;
      const low = spec.min !== undefined && (spec.minExclusive ? v <= spec.min : v < spec.min);
      return low || (spec.max !== undefined && v > spec.max) ? message : null;
    }
    case 'bool':
      if (spec.orAuto) return typeof v === 'boolean' || v === 'auto' ? null : "must be true, false or 'auto'";
      return typeof v === 'boolean' ? null : 'must be true or false';
    case 'enum':
      return typeof v === 'string' && spec.values.includes(v) ? null : `must be ${either(spec.values)}`;
    case 'string':
      return typeof v === 'string' ? null : 'must be a string';
  }
}

/**
 * A flag's text as the value it stands for (numbers strictly: "1e3", "0x10", "" are not
 * integers), then checked: returns the value, or the requirement it breaks as `{ error }`.
 */
export function parseValue(spec: ValueSpec, text: string): { value: number | string | boolean } | { error: string } {
  let v: unknown = text;
  if (spec.type === 'int' && !(spec.orAuto && text === 'auto')) v = /^[-+]?\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
  else if (spec.type === 'number') v = text.trim() === '' ? Number.NaN : Number(text);
  else if (spec.type === 'bool') v = text === 'true' ? true : text === 'false' ? false : text; // 'auto' stays text
  const error = checkValue(spec, v);
  return error === null ? { value: v as number | string | boolean } : { error };
}

/** A value as a user typed it: strings quoted, everything else as JS prints it, short. */
export function show(v: unknown): string {
  let s: string;
  if (typeof v === 'string') s = JSON.stringify(v);
  else if (v === undefined || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else if (typeof v === 'function') s = 'a function';
  else {
    try {
      s = JSON.stringify(v) ?? String(v);
    } catch {
      s = String(v);
    }
  }
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}
