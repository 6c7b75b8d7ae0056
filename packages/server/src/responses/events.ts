// A streamed Response as OpenAI's typed events: response.created and response.in_progress, then
// per output item output_item.added, content_part.added, the deltas (output_text,
// reasoning_text, function_call_arguments), their .done events, content_part.done and
// output_item.done, and last response.completed (response.incomplete when max_output_tokens cut it),
// or error + response.failed. Mirrors llama.cpp's server_task_result_cmpl_partial::
// to_json_oaicompat_resp and server_task_result_cmpl_final::to_json_oaicompat_resp_stream
// (tools/server/server-task.cpp), with what the openai client's stream accumulator needs and
// llama.cpp leaves out: sequence_number, output_index and content_index on every event, and a
// content part for reasoning text.
import type { MessageDelta } from '@bmoe/engine';
import {
  functionCallItem,
  messageItem,
  newId,
  outputText,
  reasoningItem,
  type ItemStatus,
  type OutputItem,
  type ResponseFrame,
  type ResponseObject,
} from './shapes.js';

export interface StreamEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

interface Open {
  kind: OutputItem['type'];
  id: string;
  index: number;
  text: string;
  callId: string;
  name: string;
  done: OutputItem | null;
}

export class ResponseEvents {
  private seq = 0;
  private readonly items: Open[] = [];
  private readonly calls = new Map<number, Open>();
  private started = false;

  /** response.created, numbered 0 however late the stream opens. */
  private readonly first: StreamEvent;

  constructor(private readonly frame: ResponseFrame) {
    this.first = this.event('response.created', { response: this.frame.response('in_progress', []) });
  }

  private event(type: string, fields: Record<string, unknown>): StreamEvent {
    return { type, sequence_number: this.seq++, ...fields };
  }

  /** response.created: the stream's first event. */
  created(): StreamEvent {
    return this.first;
  }

  /** response.in_progress, before the first item (once). */
  private progress(out: StreamEvent[]): void {
    if (this.started) return;
    this.started = true;
    out.push(this.event('response.in_progress', { response: this.frame.response('in_progress', []) }));
  }

  /** The events of what one token added to the answer. */
  delta(d: MessageDelta): StreamEvent[] {
    const out: StreamEvent[] = [];
    if (d.reasoningContent) this.text(out, 'reasoning', d.reasoningContent);
    if (d.content) this.text(out, 'message', d.content);
    for (const c of d.toolCalls ?? []) {
      let call = this.calls.get(c.index);
      if (!call) {
        call = this.open(out, 'function_call', c.id ?? '', c.function.name ?? '');
        this.calls.set(c.index, call);
      }
      const piece = c.function.arguments;
      if (!piece) continue;
      call.text += piece;
      if (!call.done) out.push(this.event('response.function_call_arguments.delta', { item_id: call.id, output_index: call.index, delta: piece }));
    }
    return out;
  }

  private text(out: StreamEvent[], kind: 'reasoning' | 'message', piece: string): void {
    const last = this.items.at(-1);
    const item = last && last.kind === kind && !last.done ? last : this.open(out, kind);
    item.text += piece;
    const type = kind === 'message' ? 'response.output_text.delta' : 'response.reasoning_text.delta';
    out.push(this.event(type, { item_id: item.id, output_index: item.index, content_index: 0, delta: piece, ...(kind === 'message' ? { logprobs: [] } : {}) }));
  }

  /** A new output item (closing the ones open: items come one after another). */
  private open(out: StreamEvent[], kind: Open['kind'], callId = '', name = ''): Open {
    this.progress(out);
    this.closeAll(out, 'completed');
    const id = newId(kind === 'message' ? 'msg' : kind === 'reasoning' ? 'rs' : 'fc');
    const item: Open = { kind, id, index: this.items.length, text: '', callId, name, done: null };
    this.items.push(item);
    out.push(this.event('response.output_item.added', { output_index: item.index, item: this.shape(item, 'in_progress') }));
    if (kind !== 'function_call') {
      const part = kind === 'message' ? outputText('') : { type: 'reasoning_text', text: '' };
      out.push(this.event('response.content_part.added', { item_id: id, output_index: item.index, content_index: 0, part }));
    }
    return item;
  }

  private shape(item: Open, status: ItemStatus): OutputItem {
    if (item.kind === 'message') return messageItem(item.id, item.text, status);
    if (item.kind === 'reasoning') return reasoningItem(item.id, item.text, status);
    return functionCallItem(item.id, item.callId, item.name, item.text, status === 'in_progress' ? status : 'completed');
  }

  private close(out: StreamEvent[], item: Open, status: ItemStatus): void {
    const done = this.shape(item, status);
    item.done = done;
    const at = { item_id: item.id, output_index: item.index };
    if (done.type === 'function_call') {
      out.push(this.event('response.function_call_arguments.done', { ...at, arguments: done.arguments, name: done.name }));
    } else {
      const part = done.content[0];
      const textDone = done.type === 'message' ? 'response.output_text.done' : 'response.reasoning_text.done';
      out.push(this.event(textDone, { ...at, content_index: 0, text: item.text, ...(done.type === 'message' ? { logprobs: [] } : {}) }));
      out.push(this.event('response.content_part.done', { ...at, content_index: 0, part }));
    }
    out.push(this.event('response.output_item.done', { output_index: item.index, item: done }));
  }

  private closeAll(out: StreamEvent[], status: ItemStatus): void {
    for (const item of this.items) if (!item.done) this.close(out, item, status);
  }

  /** The output items so far (finished ones as they were sent). */
  output(): OutputItem[] {
    return this.items.map((i) => i.done ?? this.shape(i, 'completed'));
  }

  /** The items' .done events and response.completed (response.incomplete when `cut`), with the final Response. */
  finish(cut: boolean, build: (output: OutputItem[]) => ResponseObject): { events: StreamEvent[]; response: ResponseObject } {
    const out: StreamEvent[] = [];
    this.progress(out);
    this.closeAll(out, cut ? 'incomplete' : 'completed');
    const response = build(this.output());
    out.push(this.event(response.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response }));
    return { events: out, response };
  }

  /** error, then response.failed with the output so far. */
  failed(code: string | null, message: string, param: string | null): StreamEvent[] {
    return [
      this.event('error', { code, message, param }),
      this.event('response.failed', { response: this.frame.response('failed', this.output(), null, undefined, { code: code ?? 'server_error', message }) }),
    ];
  }
}
