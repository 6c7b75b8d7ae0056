// Options → the `bmoe run` / `bmoe serve` flags that give them (what to type to reproduce a run),
// from the table: the short alias where there is one, table order, defaults of booleans left out.
import type { GenerateOptions, LoadOptions } from '../options.js';
import { getPath, optionRows, type OptionGroup, type OptionRow } from './table.js';

function flagsOf(rows: readonly OptionRow[], values: object): string[] {
  const out: string[] = [];
  for (const row of rows) {
    const value = getPath(values, row.key);
    if (!row.flag || value === undefined || value === null) continue;
    if (row.value.type === 'bool') {
      // '--overlap' sets true, '--no-odirect' sets false: the flag is there when the value is not the default.
      if (value !== row.default) out.push(row.flag);
    } else {
      out.push(row.short ?? row.flag, String(value));
    }
  }
  return out;
}

/** LoadOptions as flags; the streaming ones only when `stream.moeStream` is on (as the engine requires). */
export function loadOptionFlags(load: LoadOptions): string[] {
  const groups: OptionGroup[] = load.stream?.moeStream ? ['context', 'model', 'stream'] : ['context', 'model'];
  return flagsOf(optionRows(groups), load);
}

/** GenerateOptions as flags (options without a flag, such as `logits`, left out). */
export function generateOptionFlags(generate: GenerateOptions): string[] {
  return flagsOf(optionRows(['generate']), generate);
}
