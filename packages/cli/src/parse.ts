// Flag value parsers for commander. A bad value throws InvalidArgumentError, which commander turns
// into its one-line usage error ("option '-n, --n-predict <N>' argument '-5' is invalid. ...").
import { InvalidArgumentError } from 'commander';

function int(value: string, min: number, max: number, what: string): number {
  const n = Number(value);
  if (!/^[-+]?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(`must be ${what}`);
  }
  return n;
}

export const positiveInt = (v: string): number => int(v, 1, Number.MAX_SAFE_INTEGER, 'a positive integer');
export const nonNegativeInt = (v: string): number => int(v, 0, Number.MAX_SAFE_INTEGER, 'a non-negative integer');
/** An integer in [min, max] (limits the engine also enforces, checked here so they are usage errors). */
export const intRange =
  (min: number, max: number) =>
  (v: string): number =>
    int(v, min, max, `an integer from ${min} to ${max}`);
export const uint32 = (v: string): number => int(v, 0, 0xffffffff, 'an integer from 0 to 4294967295');

export function nonNegativeNumber(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('must be a number >= 0');
  return n;
}

export function probability(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n <= 0 || n > 1) throw new InvalidArgumentError('must be a number in (0, 1]');
  return n;
}

/** `--cache-mb N|auto`. */
export function cacheMb(v: string): number | 'auto' {
  if (v === 'auto') return 'auto';
  try {
    return nonNegativeInt(v);
  } catch {
    throw new InvalidArgumentError("must be a non-negative integer (MiB) or 'auto'");
  }
}
