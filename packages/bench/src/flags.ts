// Flag parsers and defaults shared by the bench's commands (commands.ts, matrix-command.ts,
// serve-load.ts, soak-command.ts), and the flags of engine options, built from @bmoe/engine's
// option table as `bmoe run` builds its own (spelling, alias, range, message, help written once).
import { InvalidArgumentError, Option } from 'commander';
import { optionRow, parseValue, type OptionKey, type ValueSpec } from '@bmoe/engine/options';

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

/** The prompt of the commands that time decodes rather than whole texts (targets, waiting). */
export const SHORT_PROMPT = 'The quick brown fox jumps over the lazy dog';

/** The command line as `bmoe-bench …` (run through `bmoe bench` or not), for reports. */
export const invokedCommand = (): string => ['bmoe-bench', ...process.argv.slice(2).filter((a) => a !== 'bench')].join(' ');

/** What a bench command says differently from the option table (each use says why). */
export interface EngineFlagSay {
  /** What the flag sets in this command (whose cache, which server's threads). Default: the table's help. */
  help?: string;
  /** The command's default; null: none (leaving the flag out means something). Default: the table's, when it is a number. */
  default?: number | null;
  /** A higher lower bound than the table's. */
  min?: number;
  /** A number only: the table's 'auto' is not a value here. */
  noAuto?: boolean;
}

/**
 * The commander option of an engine option's flag (`-t, --threads <N>`, `--io-threads <N>`,
 * `--cache-mb <N|auto>`) for a bench command: its spelling, alias, argument, range and the
 * message a bad value gets come from the option table, so the bench takes a value exactly where
 * `bmoe run` takes it; the help and default too unless the command says otherwise (`say`).
 */
export function engineFlag(key: OptionKey, say: EngineFlagSay = {}): Option {
  const row = optionRow(key);
  if (!row.flag || (row.value.type !== 'int' && row.value.type !== 'number')) throw new Error(`engineFlag: '${key}' is not a numeric flag`);
  const spec: ValueSpec =
    row.value.type === 'int' ? { ...row.value, ...(say.min === undefined ? {} : { min: say.min }), ...(say.noAuto ? { orAuto: false } : {}) } : row.value;
  const arg = say.noAuto ? 'N' : (row.arg ?? 'N');
  const option = new Option(`${row.short ? `${row.short}, ` : ''}${row.flag} <${arg}>`, say.help ?? row.help).argParser((v) => {
    const r = parseValue(spec, v);
    if ('error' in r) throw new InvalidArgumentError(r.error);
    return r.value;
  });
  const def = say.default === undefined ? (typeof row.default === 'number' ? row.default : null) : say.default;
  return def === null ? option : option.default(def);
}

/**
 * `-t, --threads` of the bmoe processes a bench command runs: a fixed count, not the engine's
 * min(4, cores), so the rows of one run, and the same command on other machines, run at the same
 * threads.
 */
export const threadsFlag = (threads: number, help?: string): Option => engineFlag('threads', { default: threads, ...(help === undefined ? {} : { help }) });
