// Flag value parsers for commander, from the option table's value specs: a flag checks its value
// with the same rule and message as the engine option it sets. A bad value throws
// InvalidArgumentError, which commander turns into its one-line usage error
// ("option '-n, --n-predict <N>' argument '-5' is invalid. must be a positive integer").
import { InvalidArgumentError } from 'commander';
import { optionRow, parseValue, type OptionKey, type ValueSpec } from '@bmoe/engine/options';

/** A commander argument parser for values of `spec`. */
export function parserFor(spec: ValueSpec): (v: string) => number | string | boolean {
  return (v) => {
    const r = parseValue(spec, v);
    if ('error' in r) throw new InvalidArgumentError(r.error);
    return r.value;
  };
}

const intParser = (min: number, max?: number) => parserFor({ type: 'int', min, ...(max === undefined ? {} : { max }) }) as (v: string) => number;

export const positiveInt = intParser(1);
export const nonNegativeInt = intParser(0);
/** An integer in [min, max]. */
export const intRange = (min: number, max: number): ((v: string) => number) => intParser(min, max);
export const uint32 = intParser(0, 0xffffffff);
export const nonNegativeNumber = parserFor({ type: 'number', min: 0 }) as (v: string) => number;
export const probability = parserFor(optionRow('topP').value) as (v: string) => number;
/** `--cache-mb N|auto`. */
export const cacheMb = parserFor(optionRow('stream.cacheMb' satisfies OptionKey).value) as (v: string) => number | 'auto';
