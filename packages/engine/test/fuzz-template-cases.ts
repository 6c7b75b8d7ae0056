// Random Jinja chat templates for fuzz-templates.test.ts, each from its own seeded generator
// (fuzz-random.ts). A model file's template is code the engine runs at load (llama.cpp probes it)
// and for every chat request; issue 28 bounded its nesting, steps, time, strings and arrays. The
// shapes aim at those bounds and around them: nested if/for/macro, recursion (bounded, unbounded,
// branching), big range(), string multiplication, doubling, filters that build big strings, deep
// parentheses, long operator chains, and unbalanced or broken tags. Most end with a ChatML tail,
// so that a template that survives renders a real conversation.
import type { Rng } from './fuzz-random.js';
import { CHATML } from './template-gguf.js';

const BIG = [0, 1, 2, 3, 10, 100, 1000, 20000, 99999, 100000, 100001, 1000000, 1e9, 1e18, -1, -100];

/** `n` as a Jinja literal: integers in full (1e18 as digits), negatives as a subtraction (no unary minus in llama.cpp's Jinja). */
export function lit(n: number): string {
  if (n < 0) return `(0 - ${lit(-n)})`;
  return Number.isInteger(n) ? BigInt(n).toString() : String(n);
}

const NAMESPACE = "{% set ns = namespace(s='ab', n=0, l=[]) %}";

interface TemplateGen {
  r: Rng;
  /** Syntax llama.cpp's Jinja does not take (1e300, -1, raw blocks...) too; else the template mostly parses. */
  wild: boolean;
  macros: string[];
  /** Loop variables in scope. */
  vars: string[];
  inLoop: boolean;
  maxDepth: number;
  /** Statements and expressions left to write: keeps a template to a few KB. */
  budget: number;
}

function small(g: TemplateGen): string {
  const { r } = g;
  return r.weighted<() => string>([
    [4, () => String(r.int(0, 12))],
    [3, () => `'${r.pick(['', 'a', 'x', 'hello', 'a b', '\\n', "\\'", '{{', '%}', 'é😀'])}'`],
    [1, () => r.pick(['true', 'false', 'none', '2.5'])],
    [g.wild ? 1 : 0, () => r.pick(['-3', '1e300', '-0.0', '0x10', '1_000'])],
  ])();
}

function big(r: Rng): string {
  return lit(r.weighted([[3, r.int(0, 50)], [2, r.pick(BIG)]]));
}

function scoped(g: TemplateGen): string {
  const { r } = g;
  const names = ['messages', 'messages|length', 'messages[0].content', 'messages[-1].role', 'add_generation_prompt', 'ns.s', 'ns.n', 'ns.l', 'bos_token', 'eos_token', 'tools', 'undefined_name', 'none.x', 'messages[99]'];
  if (g.inLoop) names.push('loop.index', 'loop.first', 'loop.last', 'loop.length');
  for (const v of g.vars) names.push(v, `${v}.content`, `${v}.role`);
  return r.pick(names);
}

const FILTERS = [
  'length', 'upper', 'lower', 'trim', 'list', 'reverse', 'sort', 'unique', 'first', 'last', 'string', 'int', 'float', 'abs', 'title', 'capitalize',
  'wordcount', 'tojson', 'items', 'safe', "join(',')", "join('xyzxyz')", "replace('a', 'bb')", "replace('', 'ab')", "replace('x', 'xxxxxxxxxx')", "default('d')",
  "split(',')", "split('')", 'truncate(3)', "map('upper')", "select('defined')", 'dictsort', 'batch(2)', 'center(9)', 'no_such_filter',
];

function filter(r: Rng): string {
  return r.weighted<() => string>([
    [6, () => r.pick(FILTERS)],
    [1, () => `indent(${lit(r.pick([2, 100, 10000, 1e6, 1e9, -1]))}${r.chance(0.5) ? ', true, true' : ''})`],
    [1, () => `tojson(indent=${lit(r.pick([2, 1000, 1e6, 1e9, -1]))})`],
    [1, () => `truncate(${lit(r.pick([0, 5, 1e9, -1]))})`],
  ])();
}

function expr(g: TemplateGen, depth: number): string {
  const { r } = g;
  g.budget--;
  if (depth >= g.maxDepth || g.budget <= 0) return r.chance(0.5) ? small(g) : scoped(g);
  const sub = (): string => expr(g, depth + 1);
  return r.weighted<() => string>([
    [8, () => small(g)],
    [8, () => scoped(g)],
    [4, () => `${sub()} ${r.pick(['+', '-', '*', '/', '%', '~', '==', '!=', '<', '>=', 'and', 'or', 'in', 'not in', ...(g.wild ? ['//', '**'] : [])])} ${sub()}`],
    [3, () => `'${r.pick(['x', 'ab', '\\n', 'é'])}' * ${big(r)}`],
    [4, () => `(${sub()})|${filter(r)}`],
    [2, () => `range(${big(r)})${r.chance(0.5) ? `|${r.pick(['list', 'length', 'join', 'sum', 'string', 'reverse'])}` : ''}`],
    [1, () => `range(${lit(r.int(-5, 5))}, ${big(r)}, ${lit(r.pick([0, 1, -1, 3, 1e9]))})|list`],
    [2, () => `[${sub()}, ${sub()}]${r.chance(0.3) ? ` * ${big(r)}` : ''}`],
    [1, () => `{${small(g)}: ${sub()}}`],
    [2, () => `${sub()} if ${sub()} else ${sub()}`],
    [2, () => `(${sub()}) is ${r.pick(['defined', 'undefined', 'string', 'number', 'none', 'mapping', 'iterable', 'even', 'divisibleby(0)', 'no_such_test'])}`],
    [2, () => `(${sub()})[${r.pick(['0', '1', '1000000000', "'x'", '1:3', '::2', '::0', 'none', ...(g.wild ? ['-1', '1e9', '::-1'] : [])])}]`],
    [g.macros.length > 0 ? 4 : 0, () => `${r.pick(g.macros)}(${sub()})`],
    [1, () => r.pick(["raise_exception('stop: ' ~ messages|length)", "raise_exception('line one\\nline two')", `raise_exception('${'z'.repeat(r.pick([10, 1000, 100000]))}')`, "strftime_now('%Y-%m-%d')", 'namespace(a=1).a', "'%s-%d'|format('a', 1)", "'abc'.upper()", "'a,b'.split(',')", ...(g.wild ? ["'{0}'.format(1)", 'lambda x: x'] : [])])],
    [1, () => `(${sub()})`],
  ])();
}

function text(g: TemplateGen): string {
  // A lone '{' before a tag makes '{{{': wild only.
  return g.r.pick(['x', ' ', '\n', 'Hello ', '<|im_start|>', '<|im_end|>\n', 'é😀', 'text with words ', ...(g.wild ? ['{', '}', '%', '#'] : [])]);
}

function stmt(g: TemplateGen, depth: number): string {
  const { r } = g;
  g.budget--;
  if (depth >= g.maxDepth || g.budget <= 0) return r.chance(0.5) ? text(g) : `{{ ${expr(g, depth)} }}`;
  const body = (n = r.int(1, 3)): string => stmts(g, depth + 1, n);
  const ws = (): string => (r.chance(0.15) ? '-' : '');
  return r.weighted<() => string>([
    [6, () => text(g)],
    [8, () => `{{${ws()} ${expr(g, depth)} ${ws()}}}`],
    [5, () => `{%${ws()} if ${expr(g, depth)} %}${body()}${r.chance(0.3) ? `{% elif ${expr(g, depth)} %}${body()}` : ''}${r.chance(0.4) ? `{% else %}${body()}` : ''}{% endif ${ws()}%}`],
    [5, () => {
      const v = `v${depth}`;
      const iter = r.pick([() => 'messages', () => `range(${big(r)})`, () => `'${r.pick(['abc', 'x'])}' * ${big(r)}`, () => 'ns.l', () => '[1, 2, 3]', () => 'messages|reverse', () => `range(${big(r)})|list`, () => expr(g, depth + 1)])();
      const saved = { vars: g.vars, inLoop: g.inLoop };
      g.vars = [...g.vars, v];
      g.inLoop = true;
      const inner = body();
      Object.assign(g, saved);
      return `{% for ${v} in ${iter} %}${inner}${r.chance(0.1) ? '{% break %}' : ''}${r.chance(0.1) ? `{% else %}${body(1)}` : ''}{% endfor %}`;
    }],
    [4, () => r.pick([
      () => `{% set ns.s = ns.s + ns.s %}`,
      () => `{% set ns.s = ns.s ~ ${expr(g, depth)} %}`,
      () => `{% set ns.l = ns.l + [${expr(g, depth)}] %}`,
      () => `{% set ns.l = ns.l + ns.l %}`,
      () => `{% set ns.n = ns.n + 1 %}`,
      () => `{% set x${depth} = ${expr(g, depth)} %}`,
      () => `{% set y${depth} %}${body()}{% endset %}`,
    ])()],
    [g.macros.length > 0 ? 3 : 0, () => `{{ ${r.pick(g.macros)}(${expr(g, depth)}) }}`],
    [1, () => `{% filter upper %}${body()}{% endfilter %}`],
    [1, () => `{# ${r.pick(['a comment', '{{ not run }}', '%}'])} #}`],
    [g.wild ? 1 : 0, () => `{% raw %}{{ ${r.pick(['x', '{% if %}'])} }}{% endraw %}`],
    [1, () => `{% generation %}${body()}{% endgeneration %}`],
  ])();
}

function stmts(g: TemplateGen, depth: number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += stmt(g, depth);
  return s;
}

function gen(r: Rng): TemplateGen {
  return { r, wild: r.chance(0.25), macros: [], vars: [], inLoop: false, maxDepth: r.int(2, 6), budget: r.int(20, 120) };
}

/** The namespace the statements assign to, and 0..3 macros that may call each other and themselves. */
function header(g: TemplateGen): string {
  const { r } = g;
  let s = NAMESPACE;
  const n = r.int(0, 3);
  const names = Array.from({ length: n }, (_, i) => `m${i}`);
  g.macros = names;
  for (const m of names) {
    const recurse = r.pick([
      () => '',
      () => `{% if n is number and n > 0 %}{{ ${r.pick(names)}(n - 1) }}{% endif %}`,
      () => `{% if n is number and n > 0 %}{{ ${m}(n - 1) }}{{ ${m}(n - 1) }}{% endif %}`,
      () => `{{ ${r.pick(names)}(n) }}`,
    ])();
    s += `{% macro ${m}(n=1) %}${r.chance(0.5) ? stmts(g, 1, r.int(1, 2)) : '{{ n }}'}${recurse}{% endmacro %}`;
  }
  return s;
}

function randomTemplate(r: Rng): string {
  const g = gen(r);
  const head = header(g);
  return head + stmts(g, 0, r.int(1, 6));
}

function recursionTemplate(r: Rng): string {
  const n = lit(r.pick([5, 20, 150, 199, 200, 250, 1000, 1e6]));
  return r.pick([
    `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}x{% endmacro %}{{ f(${n}) }}`,
    `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`,
    `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(${lit(r.pick([10, 16, 22, 30, 40]))}) }}`,
    `{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}`,
    `{% macro f(s) %}{% if s|length < ${lit(r.pick([1000, 1e6, 1e8]))} %}{{ f(s ~ s) }}{% else %}{{ s|length }}{% endif %}{% endmacro %}{{ f('ab') }}`,
    `{% macro f(n) %}{% for i in range(n) %}{{ f(n - 1) }}{% endfor %}{% endmacro %}{{ f(${lit(r.pick([3, 6, 9, 12]))}) }}`,
    `{% macro f() %}{{ caller() }}{% endmacro %}{% call f() %}{% call f() %}x{% endcall %}{% endcall %}`,
    `{% for m in messages %}{% macro g(x) %}{{ g(x) if x else m.content }}{% endmacro %}{{ g(loop.index) }}{% endfor %}`,
  ]);
}

function loopTemplate(r: Rng): string {
  const a = lit(r.pick([10, 100, 1000, 3000, 100000]));
  const b = lit(r.pick([10, 100, 1000, 3000, 100000]));
  return r.pick([
    `{% for i in range(${a}) %}{% for j in range(${b}) %}{% endfor %}{% endfor %}`,
    `{% for i in range(${a}) %}{% for j in range(${b}) %}{{ i }}{% endfor %}{% endfor %}`,
    `{% for i in range(${a}) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`,
    `{% for i in range(${lit(r.pick([10, 100, 1000]))}) %}{% set ns.l = ns.l + ['${r.pick(['x', 'y'])}' * ${lit(r.pick([1000, 1000000, 60000000]))}] %}{% endfor %}{{ ns.l|length }}`,
    `{% for i in range(${a}) %}{% set ns.l = ns.l + ns.l + [i] %}{% endfor %}{{ ns.l|length }}`,
    `{% for c in 'x' * ${lit(r.pick([1000, 1000000, 60000000]))} %}{% endfor %}`,
    `{% for i in range(${a}) %}{% set ns.n = ns.n + 1 %}{% if ns.n > ${b} %}{% break %}{% endif %}{% endfor %}{{ ns.n }}`,
    `{% for m in messages * ${lit(r.pick([10, 100000, 1e9]))} %}{{ m.content }}{% endfor %}`,
    `{{ range(${a})|map('string')|join(',') }}`,
    `{% for i in range(${a}) %}{{ range(${b})|sum }}{% endfor %}`,
  ]);
}

function stringTemplate(r: Rng): string {
  const n = lit(r.pick([10, 1000, 1e6, 3e7, 67108864, 67108865, 1e8, 1e18, 1e300]));
  const big = lit(r.pick([1000, 100000, 1000000, 30000000]));
  return r.pick([
    `{{ 'x' * ${n} }}`,
    `{{ ('ab' * ${n})|length }}`,
    `{% set s = 'x' * ${big} %}{{ s|replace('x', 'yy')|length }}`,
    `{% set s = 'x' * ${big} %}{{ s|replace('', '--')|length }}`,
    `{% set s = '\\n' * ${big} %}{{ s|indent(${lit(r.pick([4, 100, 10000]))}, true, true)|length }}`,
    `{{ 'x'|indent(${lit(r.pick([1e6, 1e8, 1e9, 1e12]))}, true) }}`,
    `{{ (range(${lit(r.pick([1000, 100000]))})|list)|tojson(indent=${lit(r.pick([4, 1000, 100000]))})|length }}`,
    `{{ ('x' * ${big})|tojson|length }}`,
    `{{ ('x,' * ${big})|split(',')|length }}`,
    `{{ ('x' * ${big})|list|length }}`,
    `{{ (['x' * ${big}] * ${lit(r.pick([10, 1000, 100000]))})|join|length }}`,
    `{% set ns.s = 'x' * ${big} %}{% for i in range(${lit(r.pick([10, 100, 1000]))}) %}{% set ns.s = ns.s ~ ns.s[:${big}] %}{% endfor %}{{ ns.s|length }}`,
    `{{ ('x ' * ${big})|wordcount }}{{ ('x' * ${big})|title|length }}{{ ('x' * ${big})|reverse|length }}`,
    `{{ ('%s' * ${big})|format(1) }}`,
    `{{ ('x' * ${big})|truncate(${lit(r.pick([10, 1e9]))}) }}`,
  ]);
}

function deepTemplate(r: Rng): string {
  const d = r.pick([10, 150, 199, 200, 201, 1000, 20000, 50000]);
  const k = r.pick([100, 1000, 10000, 49999, 60000]);
  return r.pick([
    `{{ ${'('.repeat(d)}1${')'.repeat(d)} }}`,
    `${'{% if true %}'.repeat(d)}x${'{% endif %}'.repeat(d)}`,
    `${'{% for i in [1] %}'.repeat(Math.min(d, 5000))}x${'{% endfor %}'.repeat(Math.min(d, 5000))}`,
    `{{ ${Array.from({ length: k }, (_, i) => String(i % 10)).join(' + ')} }}`,
    `{{ ${Array.from({ length: k }, () => "'a'").join(' ~ ')} }}`,
    `{{ ${'not '.repeat(d)}true }}`,
    `{{ ${'-'.repeat(d)}1 }}`,
    `{{ 'x'${'|upper'.repeat(Math.min(k, 20000))} }}`,
    `{{ ${'['.repeat(d)}1${']'.repeat(d)} }}`,
    `{{ ${"{'a': ".repeat(d)}1${'}'.repeat(d)} }}`,
    `{{ messages${'[0]'.repeat(Math.min(k, 20000))} }}`,
    `{{ f${'(1)'.repeat(Math.min(k, 20000))} }}`,
    `${'{% macro m() %}'.repeat(Math.min(d, 5000))}${'{% endmacro %}'.repeat(Math.min(d, 5000))}`,
  ]);
}

const BROKEN = [
  '{% if %}x{% endif %}',
  '{% if true %}x',
  '{% endif %}',
  '{% for %}{% endfor %}',
  '{% for x in %}{% endfor %}',
  '{% for x messages %}{% endfor %}',
  '{% endfor %}{% endfor %}',
  '{{',
  '{{ 1 +',
  '{{ }}',
  "{{ 'unterminated }}",
  '{% raw %}x',
  '{# comment',
  '{% macro %}{% endmacro %}',
  '{% macro m( %}{% endmacro %}',
  '{% set %}',
  '{% set x = %}',
  '{% unknown_tag %}',
  '{% if true %}{% else %}{% else %}{% endif %}',
  '{% if true %}{% endfor %}',
  '{{ 1 }',
  '{% if true }x{% endif %}',
  '{{ x|}}',
  '{{ x[ }}',
  '{{ (1 }}',
  '{% endmacro %}',
  '{%- -%}',
  '%}',
  '}}',
  '{{ "\\u0000" }}',
  '{% set ns.x.y = 1 %}',
  '{% include "other.jinja" %}',
  '{% extends "base" %}',
  '{% import "x" as y %}',
  '{% with a = 1 %}{{ a }}{% endwith %}',
  '{% block b %}x{% endblock %}',
];

const TAG_PIECES = ['{%', '%}', '{{', '}}', '{#', '#}', '{% endif %}', '{% endfor %}', '{% endmacro %}', '{% else %}', '{% if true %}', '{% for i in range(3) %}', ')', '(', "'", '"', '|', '-'];

/** Broken tags: a known way, or a random template cut, with a tag dropped or a piece inserted. */
function unbalancedTemplate(r: Rng): string {
  if (r.chance(0.4)) return r.pick(BROKEN);
  let s = randomTemplate(r);
  for (let i = r.int(1, 3); i > 0; i--) {
    const at = r.int(0, s.length);
    s = r.weighted<() => string>([
      [3, () => s.replace(/\{%-? end\w+ -?%\}/, '')],
      [3, () => s.slice(0, at) + r.pick(TAG_PIECES) + s.slice(at)],
      [2, () => s.slice(0, at)],
      [1, () => s.slice(0, at) + s.slice(at + r.int(1, 10))],
    ])();
  }
  return s;
}

export const TEMPLATE_SHAPES = {
  random: randomTemplate,
  recursion: recursionTemplate,
  loops: loopTemplate,
  strings: stringTemplate,
  deep: deepTemplate,
  unbalanced: unbalancedTemplate,
} as const;

export type TemplateShape = keyof typeof TEMPLATE_SHAPES;

/** A template of a random shape; with the ChatML tail most of the time, and the trap sometimes only where a message asks for it. */
export function randomTemplateCase(r: Rng): { shape: TemplateShape; template: string } {
  const shape = r.weighted<TemplateShape>([
    [30, 'random'],
    [14, 'recursion'],
    [14, 'loops'],
    [16, 'strings'],
    [10, 'deep'],
    [16, 'unbalanced'],
  ]);
  const made = TEMPLATE_SHAPES[shape](r);
  // The namespace the loops and strings assign to, when the shape did not declare it.
  const trap = made.includes('ns.') && !made.includes('namespace(') ? `${NAMESPACE}${made}` : made;
  const template = r.weighted<() => string>([
    [6, () => `${trap}${CHATML}`],
    // Only at a request (llama.cpp's probes at load do not send this message).
    [2, () => `{% for m in messages %}{% if m.content == 'trap' %}${trap}{% endif %}{% endfor %}${CHATML}`],
    [1, () => `${CHATML}${trap}`],
    [1, () => trap],
  ])();
  return { shape, template };
}
