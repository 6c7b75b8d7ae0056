// Issue 28's findings, each as it was met: grammars, JSON schemas, tools and chat templates that
// crashed (SIGSEGV in llama.cpp's recursive parsers), hung (nested repetitions, endless template
// loops) or ate memory (S{5,1}, range(1e9), 'x' * 1e8) now end in one line naming the option and
// the bound, quickly. The cases that killed or froze the process run in child processes with a
// time and a memory limit; the rest (abort latency, the event loop) in this one.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadBinding } from '@bmoe/core-native';
import { makeModel } from '@bmoe/gguf';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale, requireNative } from '../../../tooling/test-utils.mjs';
import { nativeBuild } from '../src/index.js';
import { rssOf } from './fuzz-child.js';
import { CHATML, withChatTemplate } from './template-gguf.js';

const nativeAvailable = await requireNative('the native addon', () => nativeBuild());
const ENGINE_DIST = pathToFileURL(fileURLToPath(new URL('../dist/index.js', import.meta.url))).href;

/** What a child runs: load the model, one generation, one JSON line (and the child's stderr size). */
interface ChildCase {
  input: string | { role: string; content: string }[];
  options: Record<string, unknown>;
}

const CHILD = `
const { loadModel } = await import(process.argv[1]);
const c = JSON.parse((await import('node:fs')).readFileSync(process.argv[3], 'utf8'));
const t0 = performance.now();
let out;
try {
  const model = await loadModel(process.argv[2], { threads: 1, contextSize: 256 });
  const t1 = performance.now();
  try {
    const r = await model.createSession().generate(c.input, { maxTokens: 2, ...c.options }).result;
    out = { ok: true, stage: 'generate', tokens: r.generatedTokens, ms: performance.now() - t1 };
  } catch (e) { out = { ok: false, stage: 'generate', code: e.code ?? null, message: String(e.message), ms: performance.now() - t1 }; }
  await model.close();
} catch (e) { out = { ok: false, stage: 'load', code: e.code ?? null, message: String(e.message), ms: performance.now() - t0 }; }
process.stdout.write(JSON.stringify(out) + '\\n');
`;

interface ChildResult {
  ok: boolean;
  stage: 'load' | 'generate';
  code?: string | null;
  message?: string;
  ms: number;
}

interface Outcome {
  result: ChildResult | null;
  signal: NodeJS.Signals | null;
  killed: string | null;
  stderrBytes: number;
}

const LIMIT_MS = 40_000;
const LIMIT_RSS = 3 * 1024 ** 3;

let caseFiles = 0;

/** Runs one case in a child (the case in a file: a 50,000-value enum is too long for argv); a child past LIMIT_MS or LIMIT_RSS is killed and said to be. */
function runChild(model: string, c: ChildCase): Promise<Outcome> {
  const caseFile = join(dirname(model), `case-${caseFiles++}.json`);
  writeFileSync(caseFile, JSON.stringify(c));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, ENGINE_DIST, model, caseFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderrBytes = 0;
    let killed: string | null = null;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderrBytes += d.length));
    const kill = (why: string): void => {
      killed ??= why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill(`still running after ${LIMIT_MS / 1000} s`), LIMIT_MS);
    const watch = setInterval(() => {
      if (child.pid && rssOf(child.pid) > LIMIT_RSS) kill('over 3 GiB of RSS');
    }, 200);
    child.on('close', (_status, signal) => {
      clearTimeout(timer);
      clearInterval(watch);
      let result: ChildResult | null = null;
      try {
        result = JSON.parse(stdout.trim().split('\n').pop() ?? '') as ChildResult;
      } catch {
        result = null;
      }
      resolve({ result, signal, killed, stderrBytes });
    });
  });
}

/** The outcome as the one-line refusal it must be: code, message, within `ms`; null when it is. */
function refusalProblem(o: Outcome, want: { stage: 'load' | 'generate'; code: string; message: RegExp; ms: number }): string | null {
  if (o.killed) return `killed: ${o.killed}`;
  if (o.signal) return `died by ${o.signal}`;
  const r = o.result;
  if (!r) return 'no result';
  if (r.ok) return 'no error';
  if (r.stage !== want.stage || r.code !== want.code) return `${r.stage} ${r.code}: ${r.message}`;
  if (!want.message.test(r.message ?? '')) return `message ${JSON.stringify(r.message)} does not match ${want.message}`;
  if (/\n/.test(r.message ?? '') || (r.message ?? '').length > 400) return `not one short line: ${(r.message ?? '').length} chars`;
  if (r.ms > want.ms) return `took ${Math.round(r.ms)} ms (limit ${want.ms})`;
  if (o.stderrBytes > 2000) return `${o.stderrBytes} bytes on stderr (the input echoed?)`;
  return null;
}

const HELLO = [{ role: 'user', content: 'Hello' }];
const deepSchema = (levels: number): Record<string, unknown> => {
  let s: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { type: 'array', items: s };
  return s;
};
const tool = (parameters: unknown): unknown[] => [{ type: 'function', function: { name: 'f', description: 'f', parameters } }];
const manyProperties = (n: number): Record<string, unknown> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'string' }]));

/** Requests that crashed, hung or exhausted memory, and the one line each gets now. */
const REQUESTS: { name: string; c: ChildCase; message: RegExp }[] = [
  { name: 'grammar, 20k nested parentheses (SIGSEGV)', c: { input: 'x', options: { grammar: `root ::= ${'('.repeat(20000)}"a"${')'.repeat(20000)}` } }, message: /^grammar: parentheses nested deeper than the limit of 100 \(line 1\)$/ },
  { name: 'grammar "a"{5,1} (unbounded memory)', c: { input: 'x', options: { grammar: 'root ::= "a"{5,1}' } }, message: /^grammar: repetition \{5,1\} has its minimum above its maximum/ },
  { name: 'grammar r1{0,1999} over "a"{0,1999} (hang)', c: { input: 'x', options: { grammar: 'root ::= r1{0,1999}\nr1 ::= "a"{0,1999}' } }, message: /^grammar: nested repetitions in rule 'root' allow more than 10000 ways/ },
  { name: 'grammar r1{0,400} over "a"{0,400} (13.5 s per step)', c: { input: 'x', options: { grammar: 'root ::= r1{0,400}\nr1 ::= "a"{0,400}' } }, message: /^grammar: nested repetitions/ },
  { name: '%llguidance grammar (500)', c: { input: 'x', options: { grammar: '%llguidance {}\nstart: "a"' } }, message: /^grammar: llguidance grammars are not supported/ },
  { name: 'grammar with a syntax error, 100 KB (echoed whole to stderr)', c: { input: 'x', options: { grammar: `root ::= ("a" ${'b'.repeat(100_000)}` } }, message: /^grammar: llama\.cpp cannot use it: .*expecting/ },
  { name: 'left-recursive grammar (the cause hidden)', c: { input: 'x', options: { grammar: 'root ::= root "a" | "b"' } }, message: /^grammar: llama\.cpp cannot use it: .*left recursion/ },
  { name: 'schema minItems 5 > maxItems 1 (unbounded memory)', c: { input: 'x', options: { jsonSchema: { type: 'array', minItems: 5, maxItems: 1 } } }, message: /^jsonSchema: minItems 5 is above maxItems 1/ },
  { name: 'schema pattern ((a{0,1999}){0,1999}){0,1999} (hang)', c: { input: 'x', options: { jsonSchema: { type: 'string', pattern: '^((a{0,1999}){0,1999}){0,1999}$' } } }, message: /^jsonSchema: its grammar: nested repetitions/ },
  { name: 'schema minimum -1e300 (llama.cpp\'s internal message)', c: { input: 'x', options: { jsonSchema: { type: 'integer', minimum: -1e300 } } }, message: /^jsonSchema: minimum -1e\+300 is outside the 64-bit integer range/ },
  { name: 'schema with 3,000 optional properties (50 s on the JS thread)', c: { input: 'x', options: { jsonSchema: { type: 'object', properties: manyProperties(3000) } } }, message: /^jsonSchema: an object with 3000 properties exceeds the limit of 200/ },
  { name: 'schema enum of 50,000 strings (93 s for 8 tokens)', c: { input: 'x', options: { jsonSchema: { enum: Array.from({ length: 50_000 }, (_, i) => `v${i}`) } } }, message: /^jsonSchema: an enum of 50000 values exceeds the limit of 1000/ },
  { name: 'chat schema nested 4,000 levels', c: { input: HELLO, options: { jsonSchema: deepSchema(4000) } }, message: /^jsonSchema: the JSON schema nests \d+ levels, over the limit of 64/ },
  { name: 'tool parameter minLength 9 > maxLength 3 (unbounded memory)', c: { input: HELLO, options: { toolChoice: 'required', tools: tool({ type: 'object', properties: { a: { type: 'string', minLength: 9, maxLength: 3 } } }) } }, message: /^tools: function 'f' parameters: minLength 9 is above maxLength 3 \(at \/properties\/a\)/ },
  { name: 'tool parameters nested 4,000 levels (stack overflow)', c: { input: HELLO, options: { tools: tool(deepSchema(4000)) } }, message: /^tools: tools nests \d+ levels, over the limit of 64/ },
];

/** Chat templates from model files that crashed (exit 139), hung or were OOM-killed. */
const TEMPLATES: { name: string; template: string; stage: 'load' | 'generate'; message: RegExp; ms: number }[] = [
  // llama.cpp renders the template at load to learn what it supports: most traps spring there.
  { name: 'a self-calling macro', template: `{% macro f(x) %}{{ f(x) }}{% endmacro %}{{ f(1) }}${CHATML}`, stage: 'load', message: /: chat template: nesting deeper than 200 levels \(a recursive macro\?\)$/, ms: 3000 },
  { name: '20k nested ifs', template: `${'{% if true %}'.repeat(20000)}x${'{% endif %}'.repeat(20000)}${CHATML}`, stage: 'load', message: /: chat template: nesting deeper than 200 levels$/, ms: 3000 },
  { name: '50k nested parentheses', template: `{{ ${'('.repeat(50000)}1${')'.repeat(50000)} }}${CHATML}`, stage: 'load', message: /: chat template: nesting deeper than 200 levels$/, ms: 3000 },
  { name: 'range(1e9)', template: `{% for i in range(1000000000) %}x{% endfor %}${CHATML}`, stage: 'load', message: /: chat template: range\(\) would hold 1000000000 items, over the limit of 100000$/, ms: 3000 },
  { name: "'x' * 1e8", template: `{{ 'x' * 100000000 }}${CHATML}`, stage: 'load', message: /: chat template: a repeated string would hold 100000000 bytes, over the limit of 4194304$/, ms: 3000 },
  { name: 'a string doubled 40 times', template: `{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}${CHATML}`, stage: 'load', message: /: chat template: a string's pieces would hold \d+ items, over the limit of 100000$/, ms: 5000 },
  { name: 'a syntax error (it said "std::exception")', template: `{% if %}x{% endif %}${CHATML}`, stage: 'load', message: /: chat template: Unexpected token: %\} of type \d+$/, ms: 3000 },
  { name: 'a 3000 x 3000 loop', template: `{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}${CHATML}`, stage: 'load', message: /: chat template: took longer than its time limit of 10 s$/, ms: 13_000 },
];

describe.runIf(nativeAvailable)('hostile grammars, schemas, tools and templates (issue 28)', () => {
  let dir: string;
  let model: string;

  beforeAll(async () => {
    // The children import the built engine: make it current.
    buildIfStale(fileURLToPath(new URL('../../gguf', import.meta.url)), 'index.js');
    buildIfStale(fileURLToPath(new URL('..', import.meta.url)), 'index.js');
    dir = await mkdtemp(join(tmpdir(), 'bmoe-hostile-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: model });
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('each hostile request is one line naming the option and the bound, within a second', async () => {
    const problems: string[] = [];
    for (const r of REQUESTS) {
      const p = refusalProblem(await runChild(model, r.c), { stage: 'generate', code: 'E_OPTION', message: r.message, ms: 1000 });
      if (p) problems.push(`${r.name}: ${p}`);
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('each hostile chat template fails the load or the request in one line naming the template and the bound', async () => {
    const problems: string[] = [];
    let n = 0;
    for (const t of TEMPLATES) {
      const path = join(dir, `template-${n++}.gguf`);
      await withChatTemplate(model, path, t.template);
      const o = await runChild(path, { input: HELLO, options: {} });
      const code = t.stage === 'load' ? 'E_MODEL' : 'E_OPTION';
      const p = refusalProblem(o, { stage: t.stage, code, message: t.message, ms: t.ms });
      if (p) problems.push(`${t.name}: ${p}`);
      else if (t.stage === 'load' && !(o.result?.message ?? '').startsWith(`${path}: chat template: `)) problems.push(`${t.name}: the load error does not name the file`);
    }
    expect(problems).toEqual([]);
  }, 300_000);

  it('a template that recurses on one message only fails that request; the model serves the others', async () => {
    const path = join(dir, 'boom.gguf');
    const boom = "{% macro f(n) %}{{ f(n) }}{% endmacro %}{% for m in messages %}{% if m.content == 'boom' %}{{ f(1) }}{% endif %}{{ m.content }}{% endfor %}";
    await withChatTemplate(model, path, boom);
    const ok = await runChild(path, { input: HELLO, options: {} });
    expect(ok.result).toMatchObject({ ok: true, tokens: 2 });
    const refused = await runChild(path, { input: [{ role: 'user', content: 'boom' }], options: {} });
    expect(refusalProblem(refused, { stage: 'generate', code: 'E_OPTION', message: /^could not format the conversation: chat template: nesting deeper than 200 levels/, ms: 2000 })).toBeNull();
  }, 120_000);
});

describe.runIf(nativeAvailable)('aborts and time budgets that hold whatever the sampler or the template is doing', () => {
  let dir: string;
  let model: string;
  // 50,000 alternatives: within every bound, ~3 s per sampling step on this VM.
  const wide = `root ::= ${Array.from({ length: 50_000 }, (_, i) => `"v${i}x${i}"`).join(' | ')}`;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmoe-abort-'));
    model = join(dir, 'tiny-qwen3moe.gguf');
    await makeModel({ preset: 'tiny-qwen3moe', out: model });
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('an abort lands within a few hundred ms in the middle of a slow grammar step (it waited for the step)', async () => {
    const { loadModel } = await import('../src/index.js');
    const m = await loadModel(model, { threads: 1, contextSize: 256 });
    try {
      const gen = m.createSession().generate('Hello', { maxTokens: 3, grammar: wide });
      const t0 = performance.now();
      setTimeout(() => gen.abort(), 500);
      const r = await gen.result;
      expect(r.stopReason).toBe('abort');
      expect(performance.now() - t0).toBeLessThan(1500);
    } finally {
      await m.close();
    }
  }, 60_000);

  it('a sampling step over its time budget fails naming the grammar, and the context serves the next request', async () => {
    const b = loadBinding();
    const native = await b.loadModel({ path: model });
    const ctx = native.createContext({ nCtx: 256, nBatch: 64, nUbatch: 64, threads: 1 });
    try {
      const tokens = native.tokenize('Hello', true, false);
      const sampling = { temperature: 0, topK: 40, topP: 0.95, seed: 1 };
      const grammar = { gbnf: wide, kind: 'user' as const, lazy: false, triggers: [], generationPrompt: '' };
      const t0 = performance.now();
      await expect(ctx.generate({ tokens, maxTokens: 3, sampling, grammar, grammarStepMs: 300 }, () => undefined)).rejects.toThrow(
        /^grammar: one sampling step took longer than 300 ms \(the grammar allows too many ways to continue\); the request was stopped$/,
      );
      expect(performance.now() - t0).toBeLessThan(2500);
      const r = await ctx.generate({ tokens, maxTokens: 2, sampling }, () => undefined);
      expect(r.stopReason).toBe('length');
    } finally {
      ctx.close();
      native.close();
    }
  }, 60_000);

  it('an abort while a slow template renders settles at once (Ctrl-C in bmoe chat waited for the render)', async () => {
    const path = join(dir, 'slow.gguf');
    const slow = "{% for m in messages %}{% if m.content == 'slow' %}{% for i in range(3000) %}{% for j in range(3000) %}{% endfor %}{% endfor %}{% endif %}{{ m.content }}{% endfor %}";
    await withChatTemplate(model, path, slow);
    const { loadModel } = await import('../src/index.js');
    const m = await loadModel(path, { threads: 1, contextSize: 256 });
    try {
      const session = m.createSession();
      const gen = session.chat('slow', { maxTokens: 2 });
      const t0 = performance.now();
      setTimeout(() => gen.abort(), 300);
      const r = await gen.result;
      expect(r.stopReason).toBe('abort');
      expect(performance.now() - t0).toBeLessThan(1000);
      // The render itself stops at its time limit, with the template named.
      const t1 = performance.now();
      await expect(session.chat('slow', { maxTokens: 2 }).result).rejects.toThrow(/chat template: took longer than its time limit of 10 s$/);
      expect(performance.now() - t1).toBeLessThan(13_000);
    } finally {
      await m.close();
    }
  }, 60_000);
});
