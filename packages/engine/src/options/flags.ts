// Options → the `bmoe run` / `bmoe serve` flags that give them (what to type to reproduce a run),
// from the table: the short alias where there is one, table order, defaults of booleans left out.
import type { GenerateOptions, LoadOptions } from './api.js';
import { boolFlagFor, getPath, optionRow, optionRows, type OptionRow } from './table.js';

function flagsOf(rows: readonly OptionRow[], values: object): string[] {
  const out: string[] = [];
  for (const row of rows) {
    const value = getPath(values, row.key);
    if (!row.flag || value === undefined || value === null) continue;
    if (row.value.type === 'bool') {
      // '--overlap' sets true, '--no-odirect' and '--no-overlap' false: the flag that sets the value
      // is there when the value is not the default; a default given explicitly is said too where the
      // row has a second flag ('--no-moe-stream', '--route-ahead'). 'auto' has no flag: it is what
      // leaving both out means.
      const flag = boolFlagFor(row, value);
      if (flag && (value !== row.default || row.negation)) out.push(flag);
    } else {
      out.push(row.short ?? row.flag, String(value));
    }
  }
  return out;
}

/**
 * LoadOptions as flags; the streaming ones only when `stream.moeStream` is on (as the engine
 * requires), and `--no-moe-stream` when it is off explicitly (else the settings rule would decide).
 */
export function loadOptionFlags(load: LoadOptions): string[] {
  if (load.stream?.moeStream) return flagsOf(optionRows(['context', 'model', 'stream']), load);
  const flags = flagsOf(optionRows(['context', 'model']), load);
  return load.stream?.moeStream === false ? [...flags, ...flagsOf([optionRow('stream.moeStream')], load)] : flags;
}

/** GenerateOptions as flags (options without a flag, such as `logits`, left out). */
export function generateOptionFlags(generate: GenerateOptions): string[] {
  return flagsOf(optionRows(['generate']), generate);
}
