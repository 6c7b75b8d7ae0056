// Issue 28, fuzzed: seeded random GBNF grammars (fuzz-constraints-cases.ts: nesting, repetitions
// {m,n} of every size and order, nested through rules, recursion, wide alternations, many rules,
// huge texts, malformed syntax) through generate() on the tiny model, in child processes, 50 per
// child. Each must end in a result or in E_OPTION with one short line starting 'grammar: ', never
// a signal, a hang past the engine's own limits (10 s per sampling step) or over 2 GiB of RSS.
// A failure names the seed, the case and its grammar. BMOE_FUZZ_SEED=<n> (default 28),
// BMOE_FUZZ_GRAMMARS=<n> (default 200) and BMOE_FUZZ_ONLY=<i,j> (those cases alone) vary the run;
// BMOE_FUZZ_VERBOSE=1 prints every case. Needs the native addon (skips without it, fails under CI).
import { describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { nativeBuild } from '../src/index.js';
import { batches, fuzzSuite, caseIndexes, runFuzzGroup, type FuzzCase } from './fuzz-child.js';
import { randomGrammarCase } from './fuzz-constraints-cases.js';
import { caseRng, envNumber } from './fuzz-random.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const SEED = envNumber('BMOE_FUZZ_SEED', 28);
const COUNT = envNumber('BMOE_FUZZ_GRAMMARS', 200);
/** The engine bounds a sampling step at 10 s: a case gets that per token, and its load and prompt besides. */
const STEP_MS = 10_000;

function grammarCase(index: number, model: string): FuzzCase {
  const r = caseRng(SEED, index);
  const { shape, grammar } = randomGrammarCase(r);
  const maxTokens = r.int(1, 3);
  const options = { grammar, maxTokens, temperature: r.pick([0, 0.8, 1.5]), seed: r.int(0, 1_000_000) };
  return {
    index,
    shape,
    input: grammar,
    child: { model, load: { threads: 1, contextSize: 512 }, input: r.pick(['x', 'The answer is', '{"a":']), options, limitMs: maxTokens * STEP_MS + 10_000 },
    judge: (res) => (res.ok || (res.code === 'E_OPTION' && res.message?.startsWith('grammar: ')) ? null : `${res.stage} ${res.code}: ${res.message} (not E_OPTION 'grammar: ...')`),
  };
}

describe.runIf(nativeAvailable)(`random grammars through generate() (seed ${SEED})`, () => {
  const suite = fuzzSuite('grammar', SEED, COUNT, 'BMOE_FUZZ_SEED, BMOE_FUZZ_GRAMMARS, BMOE_FUZZ_ONLY, BMOE_FUZZ_VERBOSE');

  for (const [n, indexes] of batches(caseIndexes(COUNT), 50).entries()) {
    const limit = 60_000 + indexes.length * (3 * STEP_MS + 10_000);
    it(`cases ${indexes[0]}..${indexes[indexes.length - 1]} end in a result or one line 'grammar: ...', never a signal, a hang or 2 GiB`, async () => {
      const group = indexes.map((i) => grammarCase(i, suite.model));
      expect(await runFuzzGroup(suite.dir, `grammars-${n}`, SEED, group, suite.tally)).toEqual([]);
    }, limit);
  }
});
