// Structured output a hostile client may ask for (issue 28): grammars, JSON schemas and tools
// that crashed the server (SIGSEGV), froze its turn for minutes or grew it to 22 GB are a 400
// naming the field and the cause in one short line, streamed or not; the server goes on; a client
// that leaves during a slow grammar step frees the turn at once.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { native, postJson, probeHealth, serverForSuite } from './helpers.js';

const chat = (extra: Record<string, unknown>): string => JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }], max_tokens: 4, ...extra });
const schemaFormat = (schema: unknown): Record<string, unknown> => ({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } });
const tools = (parameters: unknown): Record<string, unknown> => ({ tool_choice: 'required', tools: [{ type: 'function', function: { name: 'f', parameters } }] });

/** Each request, the field its 400 names, and what the message says. */
const HOSTILE: { name: string; body: string; param: string; message: RegExp }[] = [
  { name: 'grammar with 20,000 nested parentheses (SIGSEGV)', body: chat({ grammar: `root ::= ${'('.repeat(20000)}"a"${')'.repeat(20000)}` }), param: 'grammar', message: /^invalid 'grammar': parentheses nested deeper than the limit of 100 \(line 1\)$/ },
  { name: 'grammar "a"{5,1}', body: chat({ grammar: 'root ::= "a"{5,1}' }), param: 'grammar', message: /^invalid 'grammar': repetition \{5,1\} has its minimum above its maximum/ },
  { name: 'nested repetitions', body: chat({ grammar: 'root ::= r1{0,1999}\nr1 ::= "a"{0,1999}' }), param: 'grammar', message: /^invalid 'grammar': nested repetitions in rule 'root'/ },
  { name: '%llguidance (500)', body: chat({ grammar: '%llguidance {}\nstart: "a"' }), param: 'grammar', message: /^invalid 'grammar': llguidance grammars are not supported/ },
  { name: 'left recursion (a generic sentence)', body: chat({ grammar: 'root ::= root "a" | "b"' }), param: 'grammar', message: /^invalid 'grammar': llama\.cpp cannot use it: .*left recursion/ },
  { name: 'a syntax error in 100 KB', body: chat({ grammar: `root ::= ("a" ${'b'.repeat(100_000)}` }), param: 'grammar', message: /^invalid 'grammar': llama\.cpp cannot use it: .*expecting/ },
  { name: 'schema minItems > maxItems', body: chat(schemaFormat({ type: 'array', minItems: 5, maxItems: 1 })), param: 'response_format', message: /^invalid 'response_format': minItems 5 is above maxItems 1/ },
  { name: 'schema minimum 1e300', body: chat(schemaFormat({ type: 'integer', maximum: 1e300 })), param: 'response_format', message: /^invalid 'response_format': maximum 1e\+300 is outside the 64-bit integer range/ },
  { name: 'schema pattern with nested repetitions (hang)', body: chat(schemaFormat({ type: 'string', pattern: '^((a{0,1999}){0,1999}){0,1999}$' })), param: 'response_format', message: /^invalid 'response_format': its grammar: nested repetitions/ },
  { name: 'schema enum of 50,000 strings', body: chat(schemaFormat({ enum: Array.from({ length: 50_000 }, (_, i) => `v${i}`) })), param: 'response_format', message: /^invalid 'response_format': an enum of 50000 values exceeds the limit of 1000/ },
  { name: 'schema with 3,000 optional properties (50 s on the JS thread)', body: chat(schemaFormat({ type: 'object', properties: Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }])) })), param: 'response_format', message: /^invalid 'response_format': an object with 3000 properties exceeds the limit of 200/ },
  { name: 'grammar needing a NUL character (500: the sampler took a token anyway)', body: chat({ grammar: 'root ::= "a" "\\x00"' }), param: 'grammar', message: /^invalid 'grammar': a NUL character \(\\x00\) can never be generated/ },
  { name: 'schema pattern of a NUL character (500)', body: chat(schemaFormat({ type: 'string', pattern: '^\\u0000$' })), param: 'response_format', message: /^invalid 'response_format': its grammar: a NUL character/ },
  { name: "tool parameters whose properties are an array of 10,000 nulls (minutes of work per request, on after the client left)", body: chat(tools({ type: 'object', properties: Array.from({ length: 10_000 }, () => null) })), param: 'tools', message: /^invalid 'tools': function 'f' parameters: properties must be an object of schemas, not array \(at the schema's root\)$/ },
  { name: 'tool parameter minLength > maxLength', body: chat(tools({ type: 'object', properties: { a: { type: 'string', minLength: 9, maxLength: 3 } } })), param: 'tools', message: /^invalid 'tools': function 'f' parameters: minLength 9 is above maxLength 3 \(at \/properties\/a\)$/ },
];

describe.runIf(native)('hostile structured output (issue 28)', () => {
  const s = serverForSuite();

  it('each is a 400 naming the field and the cause in one line, within a second; /health answers throughout', async () => {
    const probe = probeHealth(s.url);
    const wrong: string[] = [];
    for (const h of HOSTILE) {
      const t0 = performance.now();
      const r = await postJson(s.url, '/v1/chat/completions', h.body);
      const ms = performance.now() - t0;
      const err = (r.json as { error?: { message?: string; param?: string; type?: string } }).error;
      if (r.status !== 400 || err?.param !== h.param || err.type !== 'invalid_request_error' || !h.message.test(err.message ?? '')) {
        wrong.push(`${h.name}: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
      } else if ((err.message ?? '').length > 300) {
        wrong.push(`${h.name}: a ${(err.message ?? '').length}-character message`);
      } else if (ms > 1000) {
        wrong.push(`${h.name}: ${Math.round(ms)} ms`);
      }
    }
    const health = await probe.stop();
    expect(wrong).toEqual([]);
    expect(health.maxMs).toBeLessThan(1000);
    // And it still answers.
    const ok = await s.client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 2 });
    expect(ok.choices[0]?.finish_reason).toBe('length');
  }, 120_000);

  it('streamed, the refusal is the same JSON 400 before any event', async () => {
    const r = await postJson(s.url, '/v1/chat/completions', chat({ stream: true, grammar: 'root ::= "a"{5,1}' }));
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.json).toMatchObject({ error: { param: 'grammar', message: expect.stringMatching(/minimum above its maximum/) } });
    const c = await postJson(s.url, '/v1/completions', JSON.stringify({ prompt: 'x', max_tokens: 2, stream: true, grammar: '%llguidance {}' }));
    expect(c).toMatchObject({ status: 400, json: { error: { param: 'grammar' } } });
  });

  it('a client that leaves during a slow grammar step frees the turn at once (the next request waited for the step)', async () => {
    // 50,000 alternatives: within every bound, about 3 s per sampling step here.
    const wide = `root ::= ${Array.from({ length: 50_000 }, (_, i) => `"v${i}x${i}"`).join(' | ')}`;
    const ac = new AbortController();
    const slow = fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat({ grammar: wide, stream: true }), signal: ac.signal }).then(
      async (res) => {
        for await (const _ of res.body ?? []) {
          // read until the client leaves
        }
      },
      () => undefined,
    );
    await new Promise((r) => setTimeout(r, 1500));
    ac.abort();
    await slow.catch(() => undefined);
    const t0 = performance.now();
    const next = await s.client.chat.completions.create({ model: 'x', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 2 });
    expect(next.choices[0]?.finish_reason).toBe('length');
    expect(performance.now() - t0).toBeLessThan(1500);
  }, 60_000);

  it('is refused before it queues: a 400 at once while another request holds the model (it was a 429 with the queue full, else a wait)', async () => {
    const ac = new AbortController();
    const busy = fetch(`${s.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: chat({ max_tokens: 2000, stream: true }), signal: ac.signal });
    const res = await busy;
    const reader = res.body!.getReader();
    await reader.read(); // the first chunk: it holds the turn now
    try {
      for (const body of [chat({ grammar: 'root ::= "a"{5,1}' }), chat(schemaFormat({ type: 'array', minItems: 1e300 })), chat(tools({ type: 'object', properties: { a: { type: 'string', minLength: 9, maxLength: 3 } } }))]) {
        const t0 = performance.now();
        const r = await postJson(s.url, '/v1/chat/completions', body);
        expect(r.status).toBe(400);
        expect(performance.now() - t0).toBeLessThan(300);
      }
    } finally {
      ac.abort();
      await reader.cancel().catch(() => undefined);
    }
  }, 60_000);

  it('tools too long for the context are a 400 naming tools, not messages', async () => {
    const properties = Object.fromEntries(Array.from({ length: 3000 }, (_, i) => [`p${i}`, { type: 'string' }]));
    const r = await postJson(s.url, '/v1/chat/completions', chat(tools({ type: 'object', properties })));
    expect(r).toMatchObject({ status: 400, json: { error: { param: 'tools', message: expect.stringMatching(/^the tools hold \d+ characters; at most \d+ can fit the context/) } } });
  });

  it('the openai client sees an APIError 400 with the param, not a 500', async () => {
    const err = await s.client.chat.completions
      .create({ model: 'x', messages: [{ role: 'user', content: 'Hello' }], max_tokens: 2, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'array', minItems: 3, maxItems: 2 } } } })
      .then(() => null, (e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect(err).toMatchObject({ status: 400, param: 'response_format' });
  });
});
