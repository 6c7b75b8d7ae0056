// An answer as it is on the wire, for the tests where the bytes themselves are the point: the SSE
// events of a stream (comments skipped, `[DONE]` noted), or the JSON body of anything else.
import { expect } from 'vitest';

export interface Wire {
  status: number;
  contentType: string;
  /** The `data:` events before `[DONE]`, parsed (comments skipped). */
  events: Record<string, unknown>[];
  /** The stream ended with `data: [DONE]`. */
  done: boolean;
  json: unknown;
}

/** The answer to a raw POST as it is on the wire: the SSE events, or the JSON body. */
export function readWire(status: number, contentType: string, text: string): Wire {
  if (!contentType.startsWith('text/event-stream')) return { status, contentType, events: [], done: false, json: JSON.parse(text) as unknown };
  const data = text
    .split('\n\n')
    .filter((e) => e.trim() !== '' && !e.startsWith(':'))
    .map((e) => {
      expect(e.startsWith('data: '), e).toBe(true);
      return e.slice(6);
    });
  const done = data.at(-1) === '[DONE]';
  if (done) data.pop();
  expect(data).not.toContain('[DONE]');
  return { status, contentType, events: data.map((d) => JSON.parse(d) as Record<string, unknown>), done, json: null };
}

export async function wire(url: string, path: string, body: unknown): Promise<Wire> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  return readWire(res.status, res.headers.get('content-type') ?? '', await res.text());
}
