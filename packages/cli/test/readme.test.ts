// The README's `bmoe run` flag table is the one generated from the command (and so from the option
// table). BMOE_WRITE_README=1 rewrites it instead of failing.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { optionRows } from '@bmoe/engine/options';
import { describe, expect, it } from 'vitest';
import { runFlagTable, withRunFlagTable } from '../src/commands/run-readme.js';
import { runCommand } from '../src/commands/run.js';

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));

describe("the README's bmoe run flags", () => {
  it('are the generated table', () => {
    const readme = readFileSync(README, 'utf8');
    const current = withRunFlagTable(readme);
    if (process.env.BMOE_WRITE_README === '1' && current !== readme) writeFileSync(README, current);
    else expect(readme, 'README.md is stale: run BMOE_WRITE_README=1 npx vitest run test/readme.test.ts in packages/cli').toBe(current);
  });

  it('have one row per flag of bmoe run, with each option row default', () => {
    const table = runFlagTable();
    expect(table.split('\n')).toHaveLength(2 + runCommand(new Command('bmoe')).options.length);
    expect(table).toContain('| `--io-threads N` | 4 | parallel read lanes');
    expect(table).toContain('| `--cache-mb N\\|auto` | 0 |');
    for (const row of optionRows(['context', 'model', 'stream', 'generate'])) {
      if (row.flag) expect(table, row.key).toMatch(new RegExp(`\`(-\\w, )?${row.flag}[^\`]*\` \\| ${row.defaultText.replace(/[()|]/g, '\\$&')} \\|`));
    }
  });
});
