// Issue 28, fuzzed: seeded random JSON schemas (fuzz-constraints-cases.ts: nesting, min/max pairs
// inverted, huge, negative or fractional, ±1e300 bounds, many properties, big enums, patterns with
// nested groups and repetitions, $ref cycles, schemas of the wrong shape) through generate() on
// the tiny model, as `jsonSchema` (raw prompt or chat) or as a tool's parameters, in child
// processes, 50 per child. Each must end in a result or in E_OPTION with one short line starting
// with the option ('jsonSchema: ...', 'tools: ...', 'tools.0.function.parameters ...'), never a
// signal, a hang past the engine's own limits or over 2 GiB of RSS. A tool's schema is also in
// the prompt: a chat that no longer fits the context may end in E_CONTEXT_FULL.
// BMOE_FUZZ_SEED=<n> (default 28), BMOE_FUZZ_SCHEMAS=<n> (default 150), BMOE_FUZZ_ONLY=<i,j> and
// BMOE_FUZZ_VERBOSE=1 as in fuzz-grammar.test.ts.
import { describe, expect, it } from 'vitest';
import { requireNative } from '../../../tooling/test-utils.mjs';
import { nativeBuild } from '../src/index.js';
import { batches, fuzzSuite, caseIndexes, runFuzzGroup, type FuzzCase } from './fuzz-child.js';
import { randomSchemaCase } from './fuzz-constraints-cases.js';
import { caseRng, envNumber } from './fuzz-random.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const SEED = envNumber('BMOE_FUZZ_SEED', 28);
const COUNT = envNumber('BMOE_FUZZ_SCHEMAS', 150);
const STEP_MS = 10_000;
const CHAT = [{ role: 'user', content: 'Give me the data.' }];

type Mode = 'jsonSchema' | 'jsonSchema-chat' | 'tools';

function schemaCase(index: number, model: string): FuzzCase {
  const r = caseRng(SEED, index);
  const { shape, schema } = randomSchemaCase(r);
  const maxTokens = r.int(1, 3);
  const sampling = { maxTokens, temperature: r.pick([0, 0.8, 1.5]), seed: r.int(0, 1_000_000) };
  const mode = r.weighted<Mode>([[5, 'jsonSchema'], [2, 'jsonSchema-chat'], [3, 'tools']]);
  const toolChoice = r.pick(['required', 'auto', { type: 'function', function: { name: 'f' } }]);
  return caseOf(index, shape, schema, mode, sampling, toolChoice, model);
}

function caseOf(index: number, shape: string, schema: unknown, mode: Mode, sampling: { maxTokens: number }, toolChoice: unknown, model: string, fixed?: string): FuzzCase {
  const options = mode === 'tools' ? { ...sampling, tools: [{ type: 'function', function: { name: 'f', description: 'A tool.', parameters: schema } }], toolChoice } : { ...sampling, jsonSchema: schema };
  const option = mode === 'tools' ? 'tools' : 'jsonSchema';
  return {
    index,
    shape: `${shape}/${mode}`,
    ...(fixed ? { fixed } : {}),
    input: JSON.stringify(schema),
    child: { model, load: { threads: 1, contextSize: 4096 }, input: mode === 'jsonSchema' ? 'x' : CHAT, options, limitMs: sampling.maxTokens * STEP_MS + 15_000 },
    judge: (res) => {
      // The option's name first: 'jsonSchema: minItems 5 is above...', 'tools.0.function.parameters must be...'.
      if (res.ok || (res.code === 'E_OPTION' && new RegExp(`^${option}[:.[ ]`).test(res.message ?? ''))) return null;
      if (mode === 'tools' && res.code === 'E_CONTEXT_FULL') return null;
      return `${res.stage} ${res.code}: ${res.message} (not E_OPTION '${option}: ...')`;
    },
  };
}

/** Met with other seeds while writing this fuzz (seed 1, case #199): the schema's grammar refused under the name 'grammar'. */
const LEFT_RECURSIVE = { $ref: '#/$defs/A', $defs: { A: { anyOf: [{ $ref: '#/$defs/A' }, { type: 'null' }] } } };
const FIXED: { name: string; schema: unknown; mode: Mode }[] = [
  { name: 'a $ref cycle that llama.cpp finds left-recursive, raw prompt', schema: LEFT_RECURSIVE, mode: 'jsonSchema' },
  { name: 'the same in a chat', schema: LEFT_RECURSIVE, mode: 'jsonSchema-chat' },
  { name: 'the same as a tool', schema: LEFT_RECURSIVE, mode: 'tools' },
];

describe.runIf(nativeAvailable)(`random JSON schemas through generate() (seed ${SEED})`, () => {
  const suite = fuzzSuite('schema', SEED, COUNT, 'BMOE_FUZZ_SEED, BMOE_FUZZ_SCHEMAS, BMOE_FUZZ_ONLY, BMOE_FUZZ_VERBOSE');

  it.skipIf(process.env.BMOE_FUZZ_ONLY !== undefined)('fixed cases end in a result or one line naming the option', async () => {
    const group = FIXED.map((f, i) => caseOf(i, 'fixed', f.schema, f.mode, { maxTokens: 2 }, 'required', suite.model, f.name));
    expect(await runFuzzGroup(suite.dir, 'schemas-fixed', SEED, group, suite.tally)).toEqual([]);
  }, 120_000);

  for (const [n, indexes] of batches(caseIndexes(COUNT), 50).entries()) {
    const limit = 60_000 + indexes.length * (3 * STEP_MS + 15_000);
    it(`cases ${indexes[0]}..${indexes[indexes.length - 1]} end in a result or one line naming the option, never a signal, a hang or 2 GiB`, async () => {
      const group = indexes.map((i) => schemaCase(i, suite.model));
      expect(await runFuzzGroup(suite.dir, `schemas-${n}`, SEED, group, suite.tally)).toEqual([]);
    }, limit);
  }
});
