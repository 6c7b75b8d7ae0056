// The README is the front door (at most 250 lines); the reference lives in docs/ pages it links to.
// Checked here: docs/cli.md's `bmoe run` flag table is the one generated from the command (and so
// from the option table) — BMOE_WRITE_README=1 rewrites it instead of failing —, the README's
// length, and that every relative link of the README and of the reference pages resolves: the file
// exists and, for `#anchor`, a heading (GitHub's slug) or an id/name anchor in it does. Links from
// the package READMEs to this repository's GitHub pages are checked the same way.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { optionRows } from '@bmoe/engine/options';
import { describe, expect, it } from 'vitest';
import { README_BEGIN, RUN_FLAGS_PAGE, runFlagTable, withRunFlagTable } from '../src/commands/run-readme.js';
import { runCommand } from '../src/commands/run.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const README = join(ROOT, 'README.md');
/** The reference pages the README's sections moved to. */
const PAGES = ['cli', 'server', 'metrics', 'robustness', 'bench-commands', 'install', 'dependencies', 'development'].map((p) => `docs/${p}.md`);
const MAX_README_LINES = 250;
const GITHUB = 'https://github.com/bmoe-dev/bmoe';

const read = (file: string): string => readFileSync(file, 'utf8');
/** Markdown without its fenced code blocks (their `#` lines are not headings, their brackets not links). */
const withoutFences = (md: string): string => md.replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, '');

/** GitHub's anchor for a heading's text (github-slugger: lower case, punctuation dropped, spaces as '-'). */
function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '');
  return text.trim().toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
}

/** Every anchor a markdown file offers: its headings' slugs (repeats get -1, -2, …) and id/name attributes. */
function anchorsOf(md: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const body = withoutFences(md);
  for (const m of body.matchAll(/^ {0,3}#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of body.matchAll(/<a\s[^>]*(?:id|name)="([^"]+)"/g)) anchors.add(m[1]!);
  return anchors;
}

/** The link targets of a markdown file: inline links and images, reference definitions, href/src attributes. */
function linksOf(md: string): string[] {
  const body = withoutFences(md);
  const targets = [
    ...[...body.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!),
    ...[...body.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!),
    ...[...body.matchAll(/\s(?:href|src)="([^"]+)"/g)].map((m) => m[1]!),
  ];
  return targets;
}

/** What is wrong with `target` as written in `from` (a file under ROOT), or null when it resolves. */
function brokenLink(from: string, target: string): string | null {
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
  const anchor = hash < 0 ? null : decodeURIComponent(target.slice(hash + 1));
  const file = pathPart === '' ? from : join(dirname(from), pathPart);
  if (!existsSync(file)) return `${target}: no file ${relative(ROOT, file)}`;
  if (anchor === null) return null;
  if (statSync(file).isDirectory() || !file.endsWith('.md')) return `${target}: an anchor into something that is not a markdown file`;
  if (!anchorsOf(read(file)).has(anchor)) return `${target}: no heading or anchor #${anchor} in ${relative(ROOT, file)}`;
  return null;
}

/** Every broken relative link of a markdown file, as `file: target: why`. */
function brokenLinks(file: string): string[] {
  return linksOf(read(file))
    .filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t)) // http:, https:, mailto:, …
    .map((t) => brokenLink(file, t))
    .filter((e): e is string => e !== null)
    .map((e) => `${relative(ROOT, file)}: ${e}`);
}

describe('the README', () => {
  it(`is at most ${MAX_README_LINES} lines`, () => {
    const lines = read(README).split('\n').length - (read(README).endsWith('\n') ? 1 : 0);
    expect(lines, `README.md has ${lines} lines: the reference belongs in docs/`).toBeLessThanOrEqual(MAX_README_LINES);
  });

  it('links to every reference page, and every relative link of it and of them resolves', () => {
    const readme = read(README);
    for (const page of PAGES) {
      expect(existsSync(join(ROOT, page)), page).toBe(true);
      expect(linksOf(readme).map((t) => t.replace(/#.*/, '')), `README.md does not link to ${page}`).toContain(page);
    }
    const broken = [README, ...PAGES.map((p) => join(ROOT, p))].flatMap(brokenLinks);
    expect(broken).toEqual([]);
  });

  it("package READMEs' links to this repository's pages resolve", () => {
    const readmes = ['packages', 'apps']
      .flatMap((dir) => readdirSync(join(ROOT, dir)).map((p) => join(ROOT, dir, p)))
      .flatMap((pkg) => [join(pkg, 'README.md'), ...(existsSync(join(pkg, 'npm')) ? readdirSync(join(pkg, 'npm')).map((t) => join(pkg, 'npm', t, 'README.md')) : [])])
      .filter((f) => existsSync(f));
    expect(readmes.length).toBeGreaterThan(5);
    const broken: string[] = [];
    for (const file of readmes) {
      for (const url of read(file).match(new RegExp(`${GITHUB}[^\\s)>\`'"]*`, 'g')) ?? []) {
        const rest = url.slice(GITHUB.length).replace(/[.,;:]+$/, '');
        const m = /^(?:\/(?:blob|tree)\/main\/([^#]*))?\/?(#.*)?$/.exec(rest);
        if (!m) continue; // …/issues and the like
        if (m[1] === undefined && m[2] === undefined) continue; // the repository itself
        const target = `${m[1] ?? 'README.md'}${m[2] ?? ''}`;
        const error = brokenLink(join(ROOT, 'README.md'), target);
        if (error) broken.push(`${relative(ROOT, file)}: ${url}: ${error}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds headings, links and anchors as GitHub does', () => {
    expect(slug('`bmoe serve`: an OpenAI-compatible local server')).toBe('bmoe-serve-an-openai-compatible-local-server');
    expect(slug('Soak: `bmoe serve` under hostile clients for 10 minutes (issue 13)')).toBe('soak-bmoe-serve-under-hostile-clients-for-10-minutes-issue-13');
    expect(slug('The numbers (this VM; details in [docs/benchmarks.md](docs/benchmarks.md))')).toBe('the-numbers-this-vm-details-in-docsbenchmarksmd');
    const md = '# A\n\n```sh\n# not a heading [x](nowhere.md)\n```\n\n## A\n\nSee [b](b.md#a-1), ![i](i.png) and <img src="c.png">.\n';
    expect([...anchorsOf(md)]).toEqual(['a', 'a-1']);
    expect(linksOf(md)).toEqual(['b.md#a-1', 'i.png', 'c.png']);
  });
});

describe(`the bmoe run flags in ${RUN_FLAGS_PAGE}`, () => {
  const PAGE = join(ROOT, RUN_FLAGS_PAGE);

  it('are the generated table', () => {
    const page = read(PAGE);
    const current = withRunFlagTable(page);
    if (process.env.BMOE_WRITE_README === '1' && current !== page) writeFileSync(PAGE, current);
    else expect(page, `${RUN_FLAGS_PAGE} is stale: run BMOE_WRITE_README=1 npx vitest run test/readme.test.ts in packages/cli`).toBe(current);
    expect(read(README), 'the table lives in the reference page only').not.toContain(README_BEGIN);
  });

  it('have one row per flag of bmoe run, with each option row default', () => {
    const table = runFlagTable();
    expect(table.split('\n')).toHaveLength(2 + runCommand(new Command('bmoe')).options.length);
    expect(table).toContain('| `--io-threads N` | 4 | parallel read lanes');
    expect(table).toContain('| `--cache-mb N\\|auto` | 0 |');
    for (const row of optionRows(['context', 'model', 'stream', 'generate'])) {
      // The default as text: every regex character escaped (mmproj's default names `mmproj*.gguf`).
      if (row.flag) expect(table, row.key).toMatch(new RegExp(`\`(-\\w, )?${row.flag}[^\`]*\` \\| ${row.defaultText.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\|`));
    }
  });
});
