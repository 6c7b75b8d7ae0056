// Flag parsers and defaults shared by the bench's commands (commands.ts, matrix-command.ts).
import { InvalidArgumentError } from 'commander';

export const num = (min: number) => (v: string): number => {
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new InvalidArgumentError(`expected a number ≥ ${min}, got ${v}`);
  return n;
};

export const int = (min: number) => (v: string): number => {
  const n = num(min)(v);
  if (!Number.isInteger(n)) throw new InvalidArgumentError(`expected a whole number ≥ ${min}, got ${v}`);
  return n;
};

/** A repeatable flag's values, in order. */
export const collect = (v: string, prev: string[] = []): string[] => [...prev, v];

export const DEFAULT_PROMPT = 'Write an essay about the history of computing, from the abacus to the smartphone.';

/** The command line as `bmoe-bench …` (run through `bmoe bench` or not), for reports. */
export const invokedCommand = (): string => ['bmoe-bench', ...process.argv.slice(2).filter((a) => a !== 'bench')].join(' ');
