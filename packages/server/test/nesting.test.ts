// Issue 28: a request body nested thousands of levels deep (tool parameters, a response_format
// schema, message content) is a 400 naming the field and the limit, never a 500 "Maximum call stack
// size exceeded" from a recursive walk after validation; and the server goes on answering.
import { describe, expect, it } from 'vitest';
import { native, postJson, serverForSuite } from './helpers.js';

/** `n` levels of objects: {"a":{"a":...{}...}} (the outermost object is level 1). */
const objects = (n: number): string => `${'{"a":'.repeat(n - 1)}{}${'}'.repeat(n - 1)}`;
/** `n` levels of arrays around one string. */
const arrays = (n: number): string => `${'['.repeat(n)}"x"${']'.repeat(n)}`;
/** A real JSON schema of `n` levels: object schemas (2 levels each: the schema, its `properties`) around a string, one array schema to make up an odd level. */
const schema = (n: number): Record<string, unknown> => {
  let s: Record<string, unknown> = { type: 'string' };
  for (let levels = 1; levels < n; levels = depthOf(s)) s = n - levels >= 2 ? { type: 'object', properties: { a: s }, required: ['a'] } : { type: 'array', items: s };
  return s;
};
/** The levels of arrays and objects in a parsed value. */
const depthOf = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);

const USER = '{"role":"user","content":"Hi"}';
const bodies = {
  tools: (n: number) => `{"messages":[${USER}],"max_tokens":2,"tools":[{"type":"function","function":{"name":"f","parameters":${objects(n)}}}]}`,
  response_format: (n: number) => `{"messages":[${USER}],"max_tokens":2,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":${objects(n)}}}}`,
  content: (n: number) => `{"messages":[{"role":"user","content":${arrays(n)}}],"max_tokens":2}`,
};
const expected = {
  tools: { param: 'tools[0].function.parameters', limit: 64 },
  response_format: { param: 'response_format.json_schema.schema', limit: 64 },
  content: { param: 'messages[0].content[0]', limit: 100 },
};

describe.runIf(native)('a body nested deep is a 400 naming the field, never a 500', () => {
  const s = serverForSuite();

  for (const levels of [4_000, 100_000]) {
    for (const field of ['tools', 'response_format', 'content'] as const) {
      it(`${field} nested ${levels} levels`, async () => {
        const body = bodies[field](levels);
        expect(body.length).toBeLessThan(1024 * 1024);
        const r = await postJson(s.url, '/v1/chat/completions', body);
        const { param, limit } = expected[field];
        expect(r).toMatchObject({ status: 400, json: { error: { type: 'invalid_request_error', param, code: 'invalid_value' } } });
        const message = (r.json as { error: { message: string } }).error.message;
        expect(message).toMatch(new RegExp(`^invalid '${param.replace(/[.[\]]/g, '\\$&')}': .*nested more than ${limit} levels deep.*at most ${limit}`));
        expect(message).not.toContain('\n');
      });
    }
  }

  it('the raw completions prompt nested 100,000 levels too', async () => {
    const r = await postJson(s.url, '/v1/completions', `{"prompt":${arrays(100_000)},"max_tokens":2}`);
    expect(r).toMatchObject({ status: 400, json: { error: { param: 'prompt[0][0][0]', message: expect.stringMatching(/nested more than 100 levels deep/) } } });
  });

  it('a response_format schema at the limit (64 levels) is generated under; one more level is refused', async () => {
    const at = schema(64);
    expect(depthOf(at)).toBe(64);
    const format = (s: unknown) => ({ type: 'json_schema', json_schema: { name: 'deep', schema: s } });
    const ok = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, temperature: 0, response_format: format(at) }));
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    const over = { type: 'array', items: at };
    expect(depthOf(over)).toBe(65);
    const refused = await postJson(s.url, '/v1/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, response_format: format(over) }));
    expect(refused).toMatchObject({ status: 400, json: { error: { param: 'response_format.json_schema.schema' } } });
  });

  it('goes on answering afterwards', async () => {
    for (const field of ['tools', 'response_format', 'content'] as const) await postJson(s.url, '/v1/chat/completions', bodies[field](100_000));
    const health = await fetch(`${s.url}/health`);
    expect(health.status).toBe(200);
    const answer = await s.client.chat.completions.create({ model: s.server.modelId, messages: [{ role: 'user', content: 'Hello' }], max_tokens: 3, temperature: 0 });
    expect(answer.usage?.completion_tokens).toBe(3);
  });
});
