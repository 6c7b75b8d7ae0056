// Random GBNF grammars and JSON schemas for the constraint fuzz tests (fuzz-grammar.test.ts,
// fuzz-schema.test.ts), each from its own seeded generator (fuzz-random.ts). Each case has a
// shape aimed at one of the ways grammars and schemas broke llama.cpp (issue 28): nesting,
// repetitions {m,n} (m > n, huge n, nested products, through rule references), recursion,
// alternation width, many rules, size, malformed syntax; for schemas min/max pairs (inverted,
// huge, negative, fractional, ±1e300), many properties, big enums, patterns, $ref cycles. The rest
// of a case is random around that shape.
import type { Rng } from './fuzz-random.js';

// ---------------------------------------------------------------------------------------------
// GBNF

/** Counts for S{m,n}: mostly small, some at and past the bounds (2000 per count, 10,000 nested). */
const BIG_COUNTS = ['0', '1', '2', '99', '100', '101', '999', '1000', '1999', '2000', '2001', '5000', '10000', '65536', '1000000', '4294967296', '9223372036854775808', '99999999999999999999999', '007'];

function count(r: Rng, wild = true): string {
  return r.weighted<() => string>([
    [6, () => String(r.int(0, 5))],
    [2, () => String(wild ? r.int(6, 300) : r.int(6, 30))],
    [wild ? 2 : 0, () => r.pick(BIG_COUNTS)],
  ])();
}

/** A repetition operator, or none; a tame one keeps its counts small and in order. */
function rep(r: Rng, wild = true): string {
  return r.weighted<() => string>([
    [45, () => ''],
    [8, () => '*'],
    [8, () => '+'],
    [8, () => '?'],
    [6, () => `{${count(r, wild)}}`],
    [6, () => `{${count(r, wild)},}`],
    [14, () => {
      const m = count(r, wild);
      // Mostly n >= m; otherwise (wild only) independent, so often below it.
      const n = (!wild || r.chance(0.6)) && Number(m) < 1e6 ? String(Number(m) + r.int(0, 20)) : count(r);
      return `{${m},${n}}`;
    }],
    [wild ? 5 : 0, () => `{,${count(r)}}`], // not GBNF: llama.cpp refuses it
  ])();
}

const LITERAL_PIECES = ['a', 'b', 'x', 'yz', ' ', '0', '9', '-', '{', '}', '[', ']', '(', ')', '|', ':', '=', 'é', '中', '😀', '\\n', '\\t', '\\r', '\\"', '\\\\', '\\x41', '\\x7F', '\\u00e9', '\\u4e2d', '\\U0001F600', '\\[', '\\]'];
const ODD_ESCAPES = ['\\q', '\\x', '\\xZZ', '\\u12', '\\uZZZZ', '\\UFFFFFFFF', '\\U00110000', '\\ud800', '\\x00', '\\'];

function literal(r: Rng, wild = true): string {
  let s = '';
  const n = r.weighted([[wild ? 1 : 0, 0], [8, r.int(1, 4)], [2, r.int(5, 30)]]);
  for (let i = 0; i < n; i++) s += wild && r.chance(0.03) ? r.pick(ODD_ESCAPES) : r.pick(LITERAL_PIECES);
  return `"${s}"`;
}

const CLASS_PIECES = ['a-z', 'A-Z', '0-9', '_', ' ', '\\n', '\\t', '\\]', '\\-', '\\\\', '"', 'é', '中-中', '\\x00-\\x7F', '\\u0080-\\uFFFF', '\\U00010000-\\U0010FFFF', 'z-a', '9-0', '-', '^'];

function charClass(r: Rng): string {
  let s = r.chance(0.3) ? '^' : '';
  const n = r.weighted([[1, 0], [8, r.int(1, 3)], [1, r.int(4, 12)]]);
  for (let i = 0; i < n; i++) s += r.pick(CLASS_PIECES);
  return `[${s}]`;
}

interface GrammarGen {
  r: Rng;
  /** Counts of any size and order, odd escapes, undefined rules, cycles; else the grammar is mostly valid. */
  wild: boolean;
  /** The rules a reference may name (tame: only those after the one being written, so no cycles). */
  refs: string[];
  maxDepth: number;
  maxWidth: number;
  maxSeq: number;
}

function atom(g: GrammarGen, depth: number): string {
  const { r } = g;
  const leaf = depth >= g.maxDepth;
  return r.weighted<() => string>([
    [35, () => literal(r, g.wild)],
    [15, () => charClass(r)],
    [5, () => '.'],
    [g.refs.length > 0 ? 20 : 0, () => (g.wild && r.chance(0.03) ? `undefined-rule${r.int(0, 9)}` : r.pick(g.refs))],
    [leaf ? 0 : 20, () => `(${alternation(g, depth + 1)})`],
  ])();
}

function sequence(g: GrammarGen, depth: number): string {
  const n = g.r.int(1, g.maxSeq);
  const items: string[] = [];
  for (let i = 0; i < n; i++) items.push(atom(g, depth) + rep(g.r, g.wild));
  return items.join(' ');
}

function alternation(g: GrammarGen, depth: number): string {
  const n = g.r.weighted([[6, 1], [3, g.r.int(2, 3)], [1, g.r.int(1, g.maxWidth)]]);
  const alts: string[] = [];
  for (let i = 0; i < n; i++) alts.push(sequence(g, depth));
  // Sometimes continued on the next lines, as multi-line rules are written.
  return alts.join(g.r.chance(0.2) ? ' |\n  ' : ' | ');
}

function ruleNames(r: Rng, n: number): string[] {
  return Array.from({ length: n }, (_, i) => r.pick(['r', 'rule-', 'x', 'item', 'ws']) + i);
}

/** A random grammar: a few rules referring to each other (cycles and left recursion happen). */
function randomGrammar(r: Rng): string {
  const names = ruleNames(r, r.int(0, 6));
  const wild = r.chance(0.4);
  const g: GrammarGen = { r, wild, refs: names, maxDepth: r.int(0, 6), maxWidth: r.pick([3, 8, 40]), maxSeq: r.int(1, wild ? 5 : 3) };
  const lines = [`root ::= ${alternation(g, 0)}`];
  for (const [i, n] of names.entries()) {
    if (!wild) g.refs = names.slice(i + 1);
    if (r.chance(0.15)) lines.push(`# ${n}: ${literal(r)}`);
    lines.push(`${n} ::= ${alternation(g, 0)}`);
  }
  if (r.chance(0.3)) lines.reverse();
  return lines.join('\n') + (r.chance(0.5) ? '\n' : '');
}

/** Parentheses nested `depth` deep, some levels repeated: deep nesting and nested products. */
function deepGrammar(r: Rng): string {
  const depth = r.pick([5, 20, 50, 99, 100, 101, 150, 1000, 20000]);
  const repeatEvery = r.pick([0, 1, 2, 10]);
  const wild = r.chance(0.3);
  let s = literal(r);
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    const alt = r.chance(0.2) ? `${literal(r)} | ` : '';
    open.push(`(${alt}`);
    close.push(`)${repeatEvery && i % repeatEvery === 0 ? rep(r, wild) || '?' : ''}`);
  }
  s = open.join('') + s + close.reverse().join('');
  return `root ::= ${s}`;
}

/** Repetitions inside repetitions, inline, through rule references or stacked: their product is what a step costs. */
function nestedRepetitions(r: Rng): string {
  const levels = r.int(2, 5);
  const bound = (): string => {
    const n = r.pick(['2', '3', '10', '21', '50', '99', '100', '101', '400', '1999', '2000']);
    return r.weighted([[5, `{0,${n}}`], [2, `{${n}}`], [2, `{1,${n}}`], [1, `{${n},}`], [1, '*'], [1, '+']]);
  };
  const form = r.pick(['inline', 'rules', 'stacked', 'mixed']);
  const base = r.chance(0.5) ? literal(r) : charClass(r);
  if (form === 'inline') {
    let s = base;
    for (let i = 0; i < levels; i++) s = `(${s}${r.chance(0.2) ? ` | ${literal(r)}` : ''})${bound()}`;
    return `root ::= ${s}`;
  }
  if (form === 'stacked') return `root ::= ${base}${Array.from({ length: levels }, bound).join('')}`;
  const lines = [`root ::= r1${bound()}`];
  for (let i = 1; i < levels; i++) lines.push(`r${i} ::= ${form === 'mixed' && r.chance(0.5) ? `(r${i + 1}${bound()})` : `r${i + 1}`}${bound()}${r.chance(0.2) ? ` | ${literal(r)}` : ''}`);
  lines.push(`r${levels} ::= ${base}${bound()}`);
  return lines.join('\n');
}

/** Recursion llama.cpp must refuse (left recursion, with or without an empty prefix) or can live with. */
function recursiveGrammar(r: Rng): string {
  const a = literal(r);
  const b = literal(r);
  return r.pick([
    `root ::= root ${a} | ${b}`,
    `root ::= root`,
    `root ::= (root)`,
    `root ::= ${a} root`,
    `root ::= ${a} root | ${b}`,
    `root ::= x ${a} | ${b}\nx ::= y\ny ::= root`,
    `root ::= e root ${a} | ${b}\ne ::= ""`,
    `root ::= ${a}? root ${b} | ${b}`,
    `root ::= ${a}* root | ${b}`,
    `root ::= (${a} | root){0,${r.pick(['3', '100', '2000'])}} ${b}`,
    `root ::= "(" root* ")" | ${a}`,
    `root ::= x\nx ::= "[" (x ("," x)*)? "]" | ${a}`,
    `root ::= x\nx ::= x x | ${a}`,
    `root ::= x\nx ::= y | ${a}\ny ::= x ${b}`,
    `root ::= (((root))) ${a} | ${b}`,
  ]);
}

/** One rule with a wide alternation: each way to go on is a stack to advance at every step. */
function wideGrammar(r: Rng): string {
  const width = r.pick([50, 300, 1000, 5000, 20000]);
  const alts = Array.from({ length: width }, (_, i) => r.weighted([[6, `"w${i}${r.pick(['', 'x', 'yy', ' '])}"`], [2, `[a-${'bcdefz'[i % 6]}]`], [1, `"v"${rep(r, false) || '?'}`], [1, `("p${i}" | "q")`]]));
  return `root ::= ${alts.join(r.chance(0.3) ? ' |\n ' : ' | ')}`;
}

/** Many rules: a chain of references thousands long (llama.cpp walks it recursively), or just many. */
function manyRules(r: Rng): string {
  const n = r.pick([500, 3000, 9999, 10001, 20000]);
  const chain = r.pick(['first', 'last', 'wrapped', 'flat']);
  const lines = ['root ::= r0'];
  for (let i = 0; i < n; i++) {
    const next = i + 1 < n ? `r${i + 1}` : '"end"';
    if (chain === 'first') lines.push(`r${i} ::= ${next} | "a${i % 10}"`);
    else if (chain === 'last') lines.push(`r${i} ::= "a" ${next}?`);
    else if (chain === 'wrapped') lines.push(`r${i} ::= ("(" ${next} ")")`);
    else lines.push(`r${i} ::= "a${i}"`);
  }
  return lines.join('\n');
}

/** Near and past the 1 MiB bound on the text. */
function hugeGrammar(r: Rng): string {
  const size = r.pick([900_000, 1_048_000, 1_048_577, 2_000_000]);
  return r.pick([
    () => `root ::= "${'a'.repeat(size)}"`,
    () => `root ::= ${'"ab" '.repeat(Math.floor(size / 5))}`,
    () => `# ${'c'.repeat(size)}\nroot ::= "a"`,
  ])();
}

const SYNTAX_CHARS = ['(', ')', '[', ']', '{', '}', '|', '"', '\\', ':', '=', '::=', '?', '*', '+', ',', '-', '^', '.', '#', '\n', ' ', '0', '9', 'a', '\u0000', '\u00ff', '\ud83d'];

/** A grammar broken in a few random places, or in one of the ways parsers get wrong. */
function malformedGrammar(r: Rng): string {
  if (r.chance(0.4)) {
    return r.pick([
      '',
      ' \n\t ',
      '# only a comment',
      'r ::= "a"',
      'root ::=',
      'root ::= ',
      'root :: "a"',
      'root = "a"',
      '1root ::= "a"',
      'ro ot ::= "a"',
      'root ::= "a"\nroot ::= "b"',
      'root ::= "a',
      'root ::= [a-',
      'root ::= ("a"',
      'root ::= "a")',
      'root ::= "a"{',
      'root ::= "a"{,}',
      'root ::= "a"{-1,2}',
      'root ::= "a"{2,1,3}',
      'root ::= "a"{1}{2}{3}',
      'root ::= "a"**',
      'root ::= "a"?+*',
      'root ::= *"a"',
      'root ::= | "a"',
      'root ::= "a" |',
      'root ::= ||',
      'root ::= ()',
      'root ::= []',
      'root ::= [^]',
      'root ::= "\u0000"',
      'root ::= "a"\u0000"b"',
      'root ::= "\\',
      'root ::= [\\',
      `root ::= ${'('.repeat(r.int(1, 200))}`,
      `root ::= "a"${')'.repeat(r.int(1, 200))}`,
      `root ::= "a"{${'9'.repeat(r.int(20, 400))}}`,
      'root ::= "a" # comment without newline',
      'root ::= x\nx ::= ',
      '%llguidance {}\nstart: "a"',
    ]);
  }
  let s = randomGrammar(r);
  const edits = r.int(1, 4);
  for (let i = 0; i < edits; i++) {
    const at = r.int(0, s.length);
    s = r.weighted<() => string>([
      [3, () => s.slice(0, at) + s.slice(at + 1)],
      [3, () => s.slice(0, at) + r.pick(SYNTAX_CHARS) + s.slice(at)],
      [1, () => s.slice(0, at)],
      [1, () => s.slice(0, at) + s.slice(r.int(0, s.length))],
      [1, () => s.slice(0, at) + s.slice(at, at + r.int(1, 20)).repeat(r.int(2, 50)) + s.slice(at)],
    ])();
  }
  return s;
}

export const GRAMMAR_SHAPES = {
  random: randomGrammar,
  deep: deepGrammar,
  'nested-repetitions': nestedRepetitions,
  recursion: recursiveGrammar,
  wide: wideGrammar,
  'many-rules': manyRules,
  huge: hugeGrammar,
  malformed: malformedGrammar,
} as const;

export type GrammarShape = keyof typeof GRAMMAR_SHAPES;

export function randomGrammarCase(r: Rng): { shape: GrammarShape; grammar: string } {
  const shape = r.weighted<GrammarShape>([
    [30, 'random'],
    [10, 'deep'],
    [16, 'nested-repetitions'],
    [12, 'recursion'],
    [6, 'wide'],
    [5, 'many-rules'],
    [2, 'huge'],
    [19, 'malformed'],
  ]);
  return { shape, grammar: GRAMMAR_SHAPES[shape](r) };
}

// ---------------------------------------------------------------------------------------------
// JSON schemas

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

/** Sets `key` as an own property, '__proto__' included (plain assignment would set the prototype). */
function put(o: JsonObject, key: string, value: Json): JsonObject {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
  return o;
}

const COUNT_VALUES = [0, 1, 2, 3, 5, 10, 100, 999, 1999, 2000, 2001, 5000, 65536, 1e6, 2 ** 31, 2 ** 32, 2 ** 53, 1e20, 1e300, -1, -5, -(2 ** 31), -1e300, 2.5, 0.5, 1e-300, 1999.5];

/** A value for minItems, maxLength and the like: mostly small, some huge, negative, fractional or not a number. */
function schemaCount(r: Rng): Json {
  return r.weighted<() => Json>([
    [6, () => r.int(0, 6)],
    [4, () => r.pick(COUNT_VALUES)],
    [1, () => r.pick<Json>(['5', null, true, [], {}, '1e300'])],
  ])();
}

const BOUND_VALUES = [0, 1, -1, 0.1, 2.5, -2.5, 100, 1e9, 2 ** 31, -(2 ** 31), 2 ** 53, 2 ** 53 + 2, 2 ** 63, -(2 ** 63), 1e18, 1e19, -1e19, 1e300, -1e300, Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, 1e-300, -0];

function bound(r: Rng): Json {
  return r.weighted<() => Json>([
    [4, () => r.int(-20, 20)],
    [5, () => r.pick(BOUND_VALUES)],
    [1, () => r.pick<Json>(['0', null, false, [1]])],
  ])();
}

const KEYS = ['a', 'b', 'c', 'name', 'id', 'items', 'type', '$ref', 'properties', '', ' ', 'a"b', 'a\\b', 'new\nline', 'é', '中文', '😀', 'a/b', '~0~1', '#', '__proto__', 'constructor', 'root', 'space key', '\u0000', '\u2028'];

function key(r: Rng): string {
  return r.weighted<() => string>([
    [8, () => r.pick(KEYS)],
    [3, () => `p${r.int(0, 99)}`],
    [1, () => 'k'.repeat(r.pick([100, 1000, 5000]))],
  ])();
}

/** A JSON value for enum, const, default. */
function value(r: Rng, depth = 0): Json {
  return r.weighted<() => Json>([
    [5, () => r.pick(['', 'a', 'red', 'a"b', 'line\nbreak', '\\', 'é😀', '\u0000', 'x'.repeat(r.pick([50, 1000, 20000]))])],
    [4, () => r.pick([0, 1, -1, 2.5, 1e300, -1e300, 2 ** 53, 1e-300])],
    [2, () => r.pick([true, false, null])],
    [depth < 3 ? 1 : 0, () => Array.from({ length: r.int(0, 3) }, () => value(r, depth + 1))],
    [depth < 3 ? 1 : 0, () => {
      const o: JsonObject = {};
      for (let i = r.int(0, 3); i > 0; i--) put(o, key(r), value(r, depth + 1));
      return o;
    }],
  ])();
}

// --- patterns (a regular expression in `pattern`)

function patternQuantifier(r: Rng): string {
  const q = r.weighted<() => string>([
    [50, () => ''],
    [8, () => '*'],
    [8, () => '+'],
    [8, () => '?'],
    [6, () => `{${count(r)}}`],
    [4, () => `{${count(r)},}`],
    [12, () => `{${count(r)},${count(r)}}`],
  ])();
  return q && r.chance(0.1) ? `${q}?` : q;
}

function patternAtom(r: Rng, depth: number, maxDepth: number): string {
  return r.weighted<() => string>([
    [30, () => r.pick(['a', 'b', 'x', '0', '-', ' ', '\\.', '\\(', '\\[', '\\\\', '\\/', '"', 'é', '😀', '\\n', '\\u0041', '\\x41'])],
    [6, () => '.'],
    [12, () => r.pick(['[a-z]', '[A-Z0-9_]', '[^"]', '[^a-z]', '[a-zA-Z0-9._%+-]', '[\\]\\-]', '[z-a]', '[]', '[^]'])],
    [8, () => r.pick(['\\d', '\\w', '\\s', '\\D', '\\W', '\\S', '\\b'])],
    [depth < maxDepth ? 15 : 0, () => `${r.pick(['(', '(', '(?:'])}${patternAlternation(r, depth + 1, maxDepth)})`],
  ])();
}

function patternAlternation(r: Rng, depth: number, maxDepth: number): string {
  const alts: string[] = [];
  for (let i = r.weighted([[6, 1], [3, 2], [1, r.int(3, 20)]]); i > 0; i--) {
    let s = '';
    for (let j = r.int(1, 4); j > 0; j--) s += patternAtom(r, depth, maxDepth) + patternQuantifier(r);
    alts.push(s);
  }
  return alts.join('|');
}

function pattern(r: Rng): string {
  const body = r.weighted<() => string>([
    [10, () => patternAlternation(r, 0, r.int(0, 6))],
    [3, () => {
      // Groups nested around the bound of 32, or far past it.
      const d = r.pick([10, 31, 32, 33, 100, 5000]);
      return '('.repeat(d) + r.pick(['a', '[a-z]', 'x?']) + Array.from({ length: d }, () => `)${r.chance(0.3) ? patternQuantifier(r) : ''}`).join('');
    }],
    [4, () => {
      // Repetitions of repetitions: (((a{0,k}){0,k}){0,k}).
      let s = r.pick(['a', '[a-z]', '.', '\\d']);
      for (let i = r.int(2, 4); i > 0; i--) s = `(${s}${r.pick(['{0,2}', '{0,10}', '{0,99}', '{0,400}', '{0,1999}', '{2000}', '*', '+', '{1,}'])})`;
      return s + r.pick(['', '*', '{0,1999}']);
    }],
    [1, () => 'a'.repeat(r.pick([4000, 4096, 4097, 100_000]))],
    [3, () => r.pick(['(', ')', '[a-', 'a{5,1}', 'a{1999,2}', '*a', 'a**', '(?=a)', '(?!a)', '(?<n>a)', '\\1', 'a{,5}', '\\', '(?', 'a|*', '\\p{L}', '[[:alpha:]]', '{', '}', '|', '^', '$', '^$', 'a{99999999999999999999}', 'a{2147483648}'])],
  ])();
  return r.weighted([[3, `^${body}$`], [1, body], [1, `^${body}`], [1, `${body}$`]]);
}

// --- schemas

interface SchemaGen {
  r: Rng;
  /** Names in $defs a $ref may point at (all of them, so that cycles happen). */
  defs: string[];
  nodes: number;
  budget: number;
  maxDepth: number;
}

function withBounds(r: Rng, o: JsonObject, lo: string, hi: string): JsonObject {
  if (r.chance(0.6)) put(o, lo, schemaCount(r));
  if (r.chance(0.6)) put(o, hi, schemaCount(r));
  return o;
}

function stringSchema(g: SchemaGen): JsonObject {
  const { r } = g;
  const o = withBounds(r, { type: 'string' }, 'minLength', 'maxLength');
  if (r.chance(0.25)) o.pattern = pattern(r);
  if (r.chance(0.15)) o.format = r.pick(['date', 'time', 'date-time', 'uuid', 'email', 'uri', 'ipv4', 'no-such-format']);
  return o;
}

function numberSchema(g: SchemaGen): JsonObject {
  const { r } = g;
  const o: JsonObject = { type: r.pick(['integer', 'integer', 'number']) };
  for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) if (r.chance(0.4)) put(o, k, bound(r));
  if (r.chance(0.1)) o.multipleOf = r.pick([0, -1, 0.5, 3, 1e300]);
  return o;
}

function arraySchema(g: SchemaGen, depth: number): JsonObject {
  const { r } = g;
  const o: JsonObject = { type: 'array' };
  if (r.chance(0.8)) o.items = r.chance(0.1) ? r.pick([true, false]) : schema(g, depth + 1);
  if (r.chance(0.15)) o.prefixItems = Array.from({ length: r.int(0, 4) }, () => schema(g, depth + 1));
  withBounds(r, o, 'minItems', 'maxItems');
  if (r.chance(0.1)) o.uniqueItems = true;
  return o;
}

function objectSchema(g: SchemaGen, depth: number): JsonObject {
  const { r } = g;
  const n = r.weighted([[10, r.int(0, 4)], [2, r.int(5, 20)], [1, r.pick([150, 199, 200, 201, 500, 3000])]]);
  const properties: JsonObject = {};
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const k = n > 20 || r.chance(0.3) ? `p${i}` : key(r);
    names.push(k);
    // Past 20 properties the values stay leaves: the case is about the count.
    put(properties, k, n > 20 ? { type: r.pick(['string', 'integer', 'boolean']) } : schema(g, depth + 1));
  }
  const o: JsonObject = { type: 'object', properties };
  if (r.chance(0.5)) o.required = r.weighted<Json>([[3, names.filter(() => r.chance(0.5))], [1, names], [1, ['missing', ...names.slice(0, 1)]]]);
  if (r.chance(0.3)) o.additionalProperties = r.chance(0.6) ? r.pick([true, false]) : schema(g, depth + 1);
  if (r.chance(0.2)) withBounds(r, o, 'minProperties', 'maxProperties');
  if (r.chance(0.05)) o.patternProperties = put({}, pattern(r), schema(g, depth + 1));
  return o;
}

function refTo(g: SchemaGen): JsonObject {
  const { r } = g;
  if (g.defs.length > 0 && r.chance(0.8)) return { $ref: `#/$defs/${r.pick(g.defs)}` };
  return { $ref: r.pick(['#', '#/$defs/missing', '#/definitions/x', '#/properties/a', '#/$defs/A/properties/a', '#/$defs/A~1B', '#/$defs/%41', 'https://example.com/s.json', 'other.json#/x', '', '#/', '#/$defs'] as const) };
}

function oddSchema(g: SchemaGen): Json {
  return g.r.pick<Json>([
    true,
    false,
    null,
    5,
    'string',
    [],
    [{ type: 'string' }],
    { type: 5 },
    { type: 'strin' },
    { type: [] },
    { type: ['string', 'null', 'array'] },
    { properties: [] },
    { type: 'object', properties: { a: null } },
    { type: 'object', properties: 'x' },
    { items: 'x' },
    { type: 'array', items: [] },
    { required: 'a' },
    { enum: [] },
    { enum: {} },
    { anyOf: [] },
    { anyOf: 'x' },
    { oneOf: [{}] },
    { allOf: [{ type: 'string' }, { type: 'integer' }] },
    { allOf: [{ $ref: '#' }] },
    { minLength: '5', type: 'string' },
    { pattern: 5, type: 'string' },
    { $ref: 5 },
    { not: {} },
    { if: { type: 'string' }, then: { minLength: 1 }, else: false },
    { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' },
    { const: null },
    { type: 'string', const: 5 },
    { type: 'integer', enum: ['a', 1.5] },
  ]);
}

function schema(g: SchemaGen, depth: number): Json {
  const { r } = g;
  g.nodes++;
  const leaf = depth >= g.maxDepth || g.nodes > g.budget;
  const s = r.weighted<() => Json>([
    [12, () => stringSchema(g)],
    [10, () => numberSchema(g)],
    [3, () => ({ type: 'boolean' })],
    [2, () => ({ type: 'null' })],
    [leaf ? 0 : 12, () => arraySchema(g, depth)],
    [leaf ? 0 : 15, () => objectSchema(g, depth)],
    [leaf ? 0 : 6, () => ({ [r.pick(['anyOf', 'oneOf', 'allOf'])]: Array.from({ length: r.weighted([[8, r.int(1, 4)], [1, r.pick([50, 500])]]) }, () => schema(g, depth + 1)) })],
    [5, () => ({ enum: Array.from({ length: r.int(1, 5) }, () => value(r)) })],
    [3, () => ({ const: value(r) })],
    [6, () => refTo(g)],
    [2, () => ({})],
    [3, () => ({ type: [r.pick(['string', 'integer', 'object']), 'null'] })],
    [3, () => oddSchema(g)],
  ])();
  if (s && typeof s === 'object' && !Array.isArray(s) && r.chance(0.15)) {
    put(s, r.pick(['description', 'title', 'default', 'examples', '$comment', 'x-unknown']), value(r));
  }
  return s;
}

function gen(r: Rng, maxDepth: number, budget = 150): SchemaGen {
  return { r, defs: [], nodes: 0, budget, maxDepth };
}

/** A schema with $defs that refer to each other and to themselves. */
function refsSchema(r: Rng): Json {
  const g = gen(r, r.int(1, 4));
  g.defs = ['A', 'B', 'node', 'list'].slice(0, r.int(1, 4));
  const defs: JsonObject = {};
  for (const d of g.defs) {
    put(defs, d, r.pick([
      () => schema(g, 0),
      () => ({ type: 'object', properties: { next: refTo(g), v: schema(g, 1) } }),
      () => ({ anyOf: [refTo(g), { type: 'null' }] }),
      () => refTo(g),
      () => ({ type: 'array', items: refTo(g), minItems: schemaCount(r) }),
      () => ({ allOf: [refTo(g), refTo(g)] }),
    ])());
  }
  const root = r.chance(0.5) ? refTo(g) : schema(g, 0);
  const o: JsonObject = typeof root === 'object' && root !== null && !Array.isArray(root) ? root : { anyOf: [root] };
  put(o, r.chance(0.8) ? '$defs' : 'definitions', defs);
  return o;
}

/** Nesting of arrays, objects or anyOf around the bound of 64 levels, or far past it. */
function deepSchema(r: Rng): Json {
  const levels = r.pick([10, 30, 63, 64, 65, 100, 1000, 2000]);
  let s: Json = { type: 'string', maxLength: r.int(0, 5) };
  for (let i = 0; i < levels; i++) {
    const kind = r.pick(['array', 'object', 'anyOf', 'allOf']);
    if (kind === 'array') s = { type: 'array', items: s, ...(r.chance(0.2) ? { maxItems: r.int(0, 3) } : {}) };
    else if (kind === 'object') s = { type: 'object', properties: { [`l${i}`]: s }, required: r.chance(0.5) ? [`l${i}`] : [] };
    else s = { [kind]: [s] };
  }
  return s;
}

/** Min/max pairs of every kind, in one schema: inverted, huge, negative, fractional, not numbers. */
function countsSchema(r: Rng): Json {
  const props: JsonObject = {};
  for (let i = r.int(1, 4); i > 0; i--) {
    put(props, `c${i}`, r.pick([
      () => withBounds(r, { type: 'array', items: { type: r.pick(['integer', 'string']) } }, 'minItems', 'maxItems'),
      () => withBounds(r, { type: 'string' }, 'minLength', 'maxLength'),
      () => withBounds(r, { type: 'object', additionalProperties: { type: 'integer' } }, 'minProperties', 'maxProperties'),
      () => numberSchema(gen(r, 0)),
    ])());
  }
  return r.chance(0.3) ? Object.values(props)[0]! : { type: 'object', properties: props, required: Object.keys(props) };
}

function wideSchema(r: Rng): Json {
  const n = r.pick([100, 199, 200, 201, 1000]);
  if (r.chance(0.3)) return { anyOf: Array.from({ length: n }, (_, i) => ({ const: `v${i}` })) };
  return {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: r.pick(['string', 'integer', 'boolean', 'number']) }])),
    required: r.pick([[], ['p0'], Array.from({ length: Math.min(n, r.int(0, n)) }, (_, i) => `p${i}`)]),
    ...(r.chance(0.3) ? { additionalProperties: false } : {}),
  };
}

function enumSchema(r: Rng): Json {
  const n = r.pick([1, 10, 100, 999, 1000, 1001, 5000, 20000]);
  const kind = r.pick(['strings', 'mixed', 'long']);
  const values = Array.from({ length: n }, (_, i): Json => (kind === 'strings' ? `v${i}` : kind === 'long' ? `${i}:${'x'.repeat(r.pick([10, 300, 3000]))}` : i % 3 === 0 ? i : i % 3 === 1 ? `s${i}` : value(r)));
  return r.chance(0.8) ? { enum: values } : { type: 'array', items: { enum: values } };
}

export const SCHEMA_SHAPES = {
  random: (r: Rng) => schema(gen(r, r.int(1, 5)), 0),
  counts: countsSchema,
  numbers: (r: Rng) => numberSchema(gen(r, 0)),
  wide: wideSchema,
  enum: enumSchema,
  pattern: (r: Rng) => ({ type: 'string', pattern: pattern(r), ...withBounds(r, {}, 'minLength', 'maxLength') }),
  refs: refsSchema,
  deep: deepSchema,
  odd: (r: Rng) => oddSchema(gen(r, 0)),
} as const;

export type SchemaShape = keyof typeof SCHEMA_SHAPES;

export function randomSchemaCase(r: Rng): { shape: SchemaShape; schema: Json } {
  const shape = r.weighted<SchemaShape>([
    [28, 'random'],
    [12, 'counts'],
    [8, 'numbers'],
    [7, 'wide'],
    [6, 'enum'],
    [14, 'pattern'],
    [12, 'refs'],
    [6, 'deep'],
    [7, 'odd'],
  ]);
  return { shape, schema: SCHEMA_SHAPES[shape](r) };
}
