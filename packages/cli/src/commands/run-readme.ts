// The `bmoe run` flag table of docs/cli.md (the CLI reference the README links to), generated from
// the command itself (whose engine flags come from @bmoe/engine's option table), so the docs cannot
// drift from `bmoe run --help`. packages/cli/test/readme.test.ts checks the page holds exactly this
// (and rewrites it on request: BMOE_WRITE_README=1).
import { Command } from 'commander';
import { flagDoc } from '../model-options.js';
import { runCommand } from './run.js';

/** The page that holds the table, from the repository root. */
export const RUN_FLAGS_PAGE = 'docs/cli.md';
export const README_BEGIN = '<!-- bmoe run flags: generated from the option table by packages/cli/src/commands/run-readme.ts; BMOE_WRITE_README=1 npx vitest run test/readme.test.ts (in packages/cli) rewrites it -->';
export const README_END = '<!-- end of bmoe run flags -->';

const cell = (s: string): string => s.replace(/\|/g, '\\|');

/** The markdown table: one row per flag of `bmoe run`, in help order. */
export function runFlagTable(): string {
  const run = runCommand(new Command('bmoe'));
  const rows = run.options.map((option) => {
    const doc = flagDoc(option);
    if (!doc) throw new Error(`bmoe run ${option.flags} has no help for ${RUN_FLAGS_PAGE} (make it with tableOption or cliOption)`);
    const flags = option.flags.replace(/<([^>]+)>/g, '$1');
    return `| \`${cell(flags)}\` | ${cell(doc.defaultText)} | ${cell(doc.help)} |`;
  });
  return ['| flag | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** `page` (the text of RUN_FLAGS_PAGE) with the text between the markers replaced by the current table; throws without the markers. */
export function withRunFlagTable(page: string): string {
  const begin = page.indexOf(README_BEGIN);
  const end = page.indexOf(README_END);
  if (begin < 0 || end < begin) throw new Error(`${RUN_FLAGS_PAGE} lacks the markers ${README_BEGIN} … ${README_END}`);
  return `${page.slice(0, begin + README_BEGIN.length)}\n${runFlagTable()}\n${page.slice(end)}`;
}
