// Issue 28, fuzzed: seeded random Jinja chat templates (fuzz-template-cases.ts: nested
// if/for/macro, recursion, big range(), string multiplication and doubling, filters that build big
// strings, deep parentheses, long operator chains, unbalanced tags) written into the tiny model's
// GGUF, loaded and asked for a chat reply, in child processes, 4 templates per child; and a few
// fixed cases met while writing it. Each must end in a reply or one short line: the load's
// E_MODEL '<file>: chat template: ...' or the request's E_OPTION 'could not format the
// conversation: chat template: ...' (or a prompt that does not fit or is empty), never a signal,
// a load or a request past the engine's 10 s bounds on renders (3 s of slack), or over 2 GiB of
// RSS. BMOE_FUZZ_SEED=<n> (default 28), BMOE_FUZZ_TEMPLATES=<n> (default 40), BMOE_FUZZ_ONLY=<i,j>
// (those cases alone, not the fixed ones) and BMOE_FUZZ_VERBOSE=1 as in fuzz-grammar.test.ts.
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { nativeBuild } from '../src/index.js';
import { batches, fuzzSuite, caseIndexes, runFuzzGroup, type ChildResult, type FuzzCase } from './fuzz-child.js';
import { caseRng, envNumber } from './fuzz-random.js';
import { randomTemplateCase } from './fuzz-template-cases.js';
import { CHATML, withChatTemplate } from './template-gguf.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const SEED = envNumber('BMOE_FUZZ_SEED', 28);
const COUNT = envNumber('BMOE_FUZZ_TEMPLATES', 40);
/** The load's renders get 10 s, a request's 10 s: a case gets both, and the rest of its load and two tokens. */
const LIMIT_MS = 10_000 + 10_000 + 10_000;

const CONVERSATIONS = [
  [{ role: 'user', content: 'Hello' }],
  [{ role: 'user', content: 'trap' }],
  [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'trap' },
    { role: 'assistant', content: 'ok' },
    { role: 'user', content: 'Hello' },
  ],
];

/** The engine's 10 s bounds, with room for a busy 2-core machine. */
const BOUND_MS = 13_000;

function judge(path: string, r: ChildResult): string | null {
  const m = r.message ?? '';
  if (r.loadMs > BOUND_MS) return `the load took ${Math.round(r.loadMs)} ms, past the 10 s bound on its template renders (${r.ok ? 'it loaded' : m})`;
  if (r.generateMs > BOUND_MS) return `the request took ${Math.round(r.generateMs)} ms, past the 10 s bound on its render (${r.ok ? 'it answered' : m})`;
  if (r.ok) return null;
  if (r.stage === 'load') return r.code === 'E_MODEL' && m.startsWith(`${path}: chat template: `) ? null : `load ${r.code}: ${m} (not E_MODEL '<file>: chat template: ...')`;
  if (r.code === 'E_OPTION' && m.startsWith('could not format the conversation: chat template: ')) return null;
  if (r.code === 'E_CONTEXT_FULL' || (r.code === 'E_OPTION' && m.startsWith('the prompt is empty'))) return null;
  return `generate ${r.code}: ${m} (not E_OPTION 'could not format the conversation: chat template: ...')`;
}

type TemplateCase = FuzzCase & { template: string };

function templateCase(index: number, dir: string): TemplateCase {
  const r = caseRng(SEED, index);
  const { shape, template } = randomTemplateCase(r);
  return caseOf(index, shape, template, r.pick(CONVERSATIONS), dir);
}

function caseOf(index: number, shape: string, template: string, input: (typeof CONVERSATIONS)[number], dir: string, fixed?: string): TemplateCase {
  const path = join(dir, `template-${fixed ? 'fixed-' : ''}${index}.gguf`);
  return {
    index,
    shape,
    ...(fixed ? { fixed } : {}),
    input: template,
    template,
    child: { model: path, load: { threads: 1, contextSize: 512 }, input, options: { maxTokens: 2, temperature: 0 }, limitMs: LIMIT_MS },
    judge: (res) => judge(path, res),
  };
}

/**
 * Cases met while writing this fuzz, around the shapes it draws from (seed 28 did not draw them):
 * the bounds on one string (then 64 MiB, now 4 MiB) and on time were checked only after a step, and these steps built
 * far more, or for longer, first (indent(), tojson(indent=) and replace() are now sized before they build). Measured then, without the 2 GiB watch: 2.7 GB and 17 s; 2.7 GB and
 * 22 s; 8.9 GB and 51 s; 10.4 GB and 61 s; still growing (4 GB) after 40 s; a request's error
 * naming std::bad_alloc (the load's probes swallowed it).
 */
const FIXED: { name: string; template: string }[] = [
  { name: 'a list of 100 strings of 60 MB', template: `{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = ns.l + ['x' * 60000000] %}{% endfor %}{{ ns.l|length }}${CHATML}` },
  { name: "replace('x', 'yy') on 60 MB", template: `{% set s = 'x' * 60000000 %}{{ s|replace('x', 'yy')|length }}${CHATML}` },
  { name: "'x'|indent(3000000000)", template: `{{ 'x'|indent(3000000000, true) }}${CHATML}` },
  { name: 'tojson(indent=1000000000)', template: `{{ [[[[1]]]]|tojson(indent=1000000000)|length }}${CHATML}` },
  { name: 'range(100000) as tojson(indent=100000)', template: `{{ (range(100000)|list)|tojson(indent=100000)|length }}${CHATML}` },
  { name: "'x'|indent(1000000000000)", template: `{{ 'x'|indent(1000000000000, true) }}${CHATML}` },
];

async function runTemplates(dir: string, model: string, name: string, group: TemplateCase[], tally: Map<string, number>): Promise<string[]> {
  for (const c of group) await withChatTemplate(model, c.child.model, c.template);
  try {
    return await runFuzzGroup(dir, name, SEED, group, tally);
  } finally {
    await Promise.all(group.map((c) => rm(c.child.model, { force: true })));
  }
}

describe.runIf(nativeAvailable)(`random chat templates through loadModel() and a chat request (seed ${SEED})`, () => {
  const suite = fuzzSuite('templates', SEED, COUNT, 'BMOE_FUZZ_SEED, BMOE_FUZZ_TEMPLATES, BMOE_FUZZ_ONLY, BMOE_FUZZ_VERBOSE');

  it.skipIf(process.env.BMOE_FUZZ_ONLY !== undefined)('fixed cases around the bounds on strings: within 2 GiB and 10 s too', async () => {
    const group = FIXED.map((f, i) => caseOf(i, 'fixed', f.template, CONVERSATIONS[0]!, suite.dir, f.name));
    expect(await runTemplates(suite.dir, suite.model, 'templates-fixed', group, suite.tally)).toEqual([]);
  }, 60_000 + FIXED.length * LIMIT_MS);

  for (const [n, indexes] of batches(caseIndexes(COUNT), 4).entries()) {
    it(`templates ${indexes.join(', ')} end in a reply or one line naming the template, never a signal, a hang or 2 GiB`, async () => {
      const group = indexes.map((i) => templateCase(i, suite.dir));
      expect(await runTemplates(suite.dir, suite.model, `templates-${n}`, group, suite.tally)).toEqual([]);
    }, 60_000 + indexes.length * LIMIT_MS);
  }
});
