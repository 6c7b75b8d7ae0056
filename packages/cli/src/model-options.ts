// The flags of engine options, built from @bmoe/engine's option table: a row with a flag becomes a
// commander option (spelling, alias, parser, choices, help with its default), and the flags a user
// typed become LoadOptions / GenerateOptions by the rows' API keys. `bmoe run` and `bmoe serve`
// share the model and streaming flags, so both accept and check them identically.
import { Option, type Command } from 'commander';
import type { ChosenSettings } from '@bmoe/engine';
import {
  flagName,
  optionByFlag,
  optionRow,
  optionRows,
  setPath,
  type GenerateOptions,
  type LoadOptions,
  type OptionGroup,
  type OptionKey,
  type OptionRow,
} from '@bmoe/engine/options';
import { usageError } from './context.js';
import { parserFor } from './parse.js';

/** The parsed flags of a command (commander's `opts()`), by attribute name. */
export type ModelFlags = Record<string, unknown>;

/** What `--help` and docs/cli.md say about a flag: its meaning and its default. */
export interface FlagDoc {
  help: string;
  defaultText: string;
}

const DOCS = new WeakMap<Option, FlagDoc>();

/** The help and default a flag was made with (every option made here or by `cliOption`). */
export function flagDoc(option: Option): FlagDoc | undefined {
  return DOCS.get(option);
}

/** A flag of the CLI's own (not an engine option), documented like the table's. */
export function cliOption(flags: string, help: string, defaultText = '', parse?: (v: string) => unknown): Option {
  const option = new Option(flags, help);
  if (parse) option.argParser(parse);
  DOCS.set(option, { help, defaultText });
  return option;
}

/** The commander option of a table row; a command may say it differently (`help`, `defaultText`). */
export function tableOption(key: OptionKey, say: Partial<FlagDoc> = {}): Option {
  const row = optionRow(key);
  if (!row.flag) throw new Error(`option '${key}' has no flag`);
  const doc: FlagDoc = { help: say.help ?? row.help, defaultText: say.defaultText ?? row.defaultText };
  const isBool = row.value.type === 'bool';
  const flags = `${row.short ? `${row.short}, ` : ''}${row.flag}${isBool ? '' : ` <${row.arg ?? 'value'}>`}`;
  const option = new Option(flags, isBool ? doc.help : `${doc.help} (default ${doc.defaultText})`);
  if (row.value.type === 'enum') option.choices(row.value.values);
  else if (!isBool) option.argParser(parserFor(row.value));
  DOCS.set(option, doc);
  return option;
}

const flagged = (groups: readonly OptionGroup[]): OptionKey[] => optionRows(groups).flatMap((r) => (r.flag ? [r.key as OptionKey] : []));

/** The second flag of a boolean row ('--no-moe-stream', '--no-overlap', '--no-route-ahead'): same attribute, the other value. */
function negationOption(key: OptionKey): Option | null {
  const negation = optionRow(key).negation;
  return negation ? cliOption(negation.flag, negation.help) : null;
}

function addRows(cmd: Command, keys: readonly OptionKey[]): Command {
  for (const key of keys) {
    cmd.addOption(tableOption(key));
    const negation = negationOption(key);
    if (negation) cmd.addOption(negation);
  }
  return cmd;
}

/** A command on one MODEL (`run`, `chat`, `serve`): a GGUF file, or a hub reference pulled first. */
export function modelCommand(program: Command, name: string, description: string): Command {
  return program.command(name).description(description).argument('<model>', 'GGUF model file, or hf:owner/repo[:QUANT] / an https URL (pulled first)');
}

/** Adds the context flags (-t, -c, -b, --ubatch-size) to a command. */
export function addContextOptions(cmd: Command): Command {
  return addRows(cmd, flagged(['context']));
}

/**
 * Adds the weight and expert-streaming flags (--repack/--no-repack/--nr, --n-expert-used, --moe-stream, --cache-mb,
 * --overlap/--no-overlap, --route-ahead/--no-route-ahead, ...) to a command.
 */
export function addStreamingOptions(cmd: Command): Command {
  addRows(cmd, ['repack']).addOption(cliOption('--nr', 'same as --no-repack (llama.cpp -nr)').conflicts('repack'));
  // Neither --moe-stream nor --no-moe-stream: the settings rule decides (chooseLoad).
  return addRows(cmd, [...flagged(['model']).filter((k) => k !== 'repack'), ...flagged(['stream'])]);
}

/**
 * The sampling flags of `run` and `chat`, in llama.cpp's order: --temp, --top-k, --top-p, --seed,
 * --min-p, the repeat, presence and frequency penalties, the reasoning budget, then --context-shift.
 */
export const SAMPLING_KEYS = [
  'temperature', 'topK', 'topP', 'seed', 'minP', 'repeatPenalty', 'repeatLastN', 'presencePenalty', 'frequencyPenalty',
  'reasoningBudget', 'reasoningBudgetMessage', 'contextShift',
] as const satisfies readonly OptionKey[];

/** Adds the generation flags of `keys` (-n, --temp, ...) to a command, in the order given. */
export function addGenerateOptions(cmd: Command, keys: readonly OptionKey[]): Command {
  return addRows(cmd, keys);
}

/** The table rows the user gave a flag for on the command line, with the parsed values. */
function givenRows(cmd: Command, flags: ModelFlags, groups: readonly OptionGroup[]): Array<[OptionRow, unknown]> {
  const out: Array<[OptionRow, unknown]> = [];
  for (const option of cmd.options) {
    const row = option.long ? optionByFlag(option.long) : undefined;
    // A row with a negation has two options on one attribute: count it once.
    if (!row || !groups.includes(row.group) || out.some(([r]) => r === row)) continue;
    const attr = option.attributeName();
    if (cmd.getOptionValueSource(attr) === 'cli') out.push([row, flags[attr]]);
  }
  return out;
}

/**
 * The flags as LoadOptions; a streaming flag without --moe-stream (or with --no-moe-stream) is a
 * usage error (exit 2). --no-moe-stream gives `stream: { moeStream: false }`; neither flag gives
 * no `stream`, which leaves the choice to the settings rule (chooseLoad).
 */
export function loadOptions(cmd: Command, flags: ModelFlags): LoadOptions {
  const load: Record<string, unknown> = {};
  for (const [row, value] of givenRows(cmd, flags, ['context', 'model'])) setPath(load, row.key, value);
  if (flags.nr === true) setPath(load, optionRow('repack').key, false);
  const stream = givenRows(cmd, flags, ['stream']);
  const moeStream = optionRow('stream.moeStream');
  const asked = stream.find(([row]) => row === moeStream);
  const stray = stream.find(([row]) => row !== moeStream);
  if (asked?.[1] !== true) {
    // A boolean is named by the flag given ('--no-route-ahead'), a value flag without its value.
    if (stray) usageError(cmd, `${flagName(stray[0], stray[0].value.type === 'bool' ? stray[1] : undefined)} requires ${flagName(moeStream, true)}`);
    if (asked) setPath(load, moeStream.key, false);
    return load as LoadOptions;
  }
  for (const [row, value] of stream) setPath(load, row.key, value);
  const s = (load as LoadOptions).stream;
  if (s?.cacheCeilMb !== undefined && s.cacheMb !== 'auto') {
    usageError(cmd, `${flagName(optionRow('stream.cacheCeilMb'))} applies only to ${flagName(optionRow('stream.cacheMb'), 'auto')}`);
  }
  return load as LoadOptions;
}

/**
 * The settings rule on a model file with the flags given (neither --moe-stream nor --no-moe-stream:
 * the rule decides streaming; -t and the other flags are kept). Reads the header and this machine's
 * memory (the memory cgroup included); a missing or malformed model throws its one-line error.
 * The caller loads with `settings.load` and prints `settingsLine(settings)` on stderr.
 */
export async function chooseLoad(model: string, given: LoadOptions): Promise<ChosenSettings> {
  const { chooseSettingsFor } = await import('@bmoe/engine');
  return (await chooseSettingsFor(model, given)).settings;
}

/**
 * MODEL as run, chat and serve load it: a path, or a hub REF pulled first (with its image
 * projector, unless --mmproj names one or none); and the load options with the projector to load
 * (--mmproj as given, else the one pulled with the model, else the engine's 'auto').
 */
export async function resolveModel(model: string, given: LoadOptions): Promise<{ path: string; given: LoadOptions }> {
  const { resolveModelArg } = await import('./hub/index.js');
  const { projectorOption } = await import('./projector.js');
  const path = await resolveModelArg(model, { mmproj: given.mmproj === undefined || given.mmproj === 'auto' });
  const mmproj = await projectorOption(path, given.mmproj);
  return { path, given: mmproj === undefined ? given : { ...given, mmproj } };
}

/**
 * What `run` and `chat` do before loading: MODEL resolved (resolveModel), the settings rule
 * applied to the flags given (its one line on stderr), and the generation flags given.
 */
export async function prepareGeneration(cmd: Command, model: string, flags: ModelFlags): Promise<{ path: string; load: LoadOptions; generate: GenerateOptions }> {
  const { path, given } = await resolveModel(model, loadOptions(cmd, flags));
  const settings = await chooseLoad(path, given);
  process.stderr.write(`${settingsLine(settings)}\n`);
  return { path, load: settings.load, generate: generateOptions(cmd, flags) };
}

/** The one stderr line saying what was chosen and why: `bmoe: streaming experts (…), cache auto ≤ 772 MiB, 4 read lanes, 2 threads`. */
export function settingsLine(settings: ChosenSettings): string {
  return `bmoe: ${settings.reason}`;
}

/** The generation flags given as GenerateOptions (the engine fills in the rest). */
export function generateOptions(cmd: Command, flags: ModelFlags): GenerateOptions {
  const out: Record<string, unknown> = {};
  for (const [row, value] of givenRows(cmd, flags, ['generate'])) setPath(out, row.key, value);
  return out as GenerateOptions;
}
