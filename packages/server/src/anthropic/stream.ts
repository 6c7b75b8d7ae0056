// A generation's deltas as Anthropic's stream events: a port of llama.cpp's
// server_task_result_cmpl_partial::to_json_anthropic and server_task_result_cmpl_final::
// to_json_anthropic_stream (tools/server/server-task.cpp). Its rules: message_start (the message
// with no content, the usage so far) comes first; reasoning streams as a thinking block
// (thinking_delta, then an empty signature_delta before it closes), text as a text block
// (text_delta), each tool call as a tool_use block opened with its id and name (input_json_delta
// pieces of its arguments); message_delta carries stop_reason, stop_sequence and the usage, and
// message_stop ends the stream. Where this differs from llama.cpp: one block is open at a time and
// each is closed (content_block_stop) when the next one opens, with indices counted as blocks open
// (Anthropic's order; llama.cpp closed them all at the end and derived the indices), a `ping`
// follows message_start as Anthropic's stream has it, and message_delta's usage carries the input
// and cache-read totals beside output_tokens (Anthropic's cumulative usage).
import type { MessageDelta } from '@bmoe/engine';
import type { BmoeResult } from '../types.js';
import type { AnthropicUsage, Ending } from './response.js';

/** One SSE event: its `event:` name and its `data:` object. */
export interface StreamEvent {
  event: string;
  data: object;
}

type Open = { kind: 'thinking' } | { kind: 'text' } | { kind: 'tool'; call: number };

export class AnthropicEvents {
  private started = false;
  private open: Open | null = null;
  private next = 0;

  constructor(
    private readonly id: string,
    private readonly model: string,
    /** The usage message_start carries (the prompt's tokens, none generated yet). */
    private readonly startUsage: AnthropicUsage,
  ) {}

  /** message_start and ping, once, before any other event. */
  private start(out: StreamEvent[]): void {
    if (this.started) return;
    this.started = true;
    const message = { id: this.id, type: 'message', role: 'assistant', content: [], model: this.model, stop_reason: null, stop_sequence: null, usage: this.startUsage };
    out.push({ event: 'message_start', data: { type: 'message_start', message } }, { event: 'ping', data: { type: 'ping' } });
  }

  private close(out: StreamEvent[]): void {
    const o = this.open;
    if (!o) return;
    const index = this.next - 1;
    if (o.kind === 'thinking') out.push(blockDelta(index, { type: 'signature_delta', signature: '' }));
    out.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
    this.open = null;
  }

  /** Opens a block (closing the one open), unless it is the one open; returns its index. */
  private enter(out: StreamEvent[], want: Open, block: object): number {
    const o = this.open;
    const same = o !== null && o.kind === want.kind && (o.kind !== 'tool' || (want.kind === 'tool' && o.call === want.call));
    if (!same) {
      this.close(out);
      this.open = want;
      out.push({ event: 'content_block_start', data: { type: 'content_block_start', index: this.next, content_block: block } });
      this.next++;
    }
    return this.next - 1;
  }

  /** The events for what one token (or the end's held-back text) adds to the answer. */
  delta(d: MessageDelta): StreamEvent[] {
    const out: StreamEvent[] = [];
    this.start(out);
    if (d.reasoningContent) {
      const i = this.enter(out, { kind: 'thinking' }, { type: 'thinking', thinking: '', signature: '' });
      out.push(blockDelta(i, { type: 'thinking_delta', thinking: d.reasoningContent }));
    }
    if (d.content) {
      const i = this.enter(out, { kind: 'text' }, { type: 'text', text: '' });
      out.push(blockDelta(i, { type: 'text_delta', text: d.content }));
    }
    for (const c of d.toolCalls ?? []) {
      // The first piece of a call carries its id and name: it opens the call's block.
      const o = this.open;
      const isOpen = o?.kind === 'tool' && o.call === c.index;
      if (!isOpen && c.function.name === undefined) continue;
      const i = this.enter(out, { kind: 'tool', call: c.index }, { type: 'tool_use', id: c.id ?? '', name: c.function.name ?? '', input: {} });
      if (c.function.arguments) out.push(blockDelta(i, { type: 'input_json_delta', partial_json: c.function.arguments }));
    }
    return out;
  }

  /** The last events: the open block closed, message_delta (stop reason, usage), message_stop. */
  finish(ending: Ending, usage: AnthropicUsage, bmoe: BmoeResult): StreamEvent[] {
    const out: StreamEvent[] = [];
    this.start(out);
    this.close(out);
    out.push(
      { event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: ending.reason, stop_sequence: ending.sequence }, usage, bmoe } },
      { event: 'message_stop', data: { type: 'message_stop' } },
    );
    return out;
  }

}

function blockDelta(index: number, delta: object): StreamEvent {
  return { event: 'content_block_delta', data: { type: 'content_block_delta', index, delta } };
}
