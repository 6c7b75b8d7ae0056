// From generated text to the answer: stop strings cut it, the model's chat format reads it
// (llama.cpp's parser, re-run on the whole text so far at every token, as llama-server does), and
// each token's delta is what the new parse adds to what was already sent. Nothing sent is taken
// back: a parse that shrinks or rewrites sent text adds nothing until it grows past it again.
import { randomInt } from 'node:crypto';
import type { NativeParsedMessage } from '@bmoe/core-native';
import type { AssistantMessage, MessageDelta, ToolCall, ToolCallDelta } from './messages.js';
import { StopMatcher } from './stop.js';

/** Reads generated text as the model's chat format. */
export interface ChatParser {
  /** `partial`: the text may stop mid-way (streaming). May throw on a final text that does not parse. */
  parse(text: string, partial: boolean): NativeParsedMessage;
}

const ID_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `call_` and 24 random alphanumerics, for a format whose calls carry no id. */
export function newToolCallId(): string {
  let id = 'call_';
  for (let i = 0; i < 24; i++) id += ID_CHARS[randomInt(ID_CHARS.length)];
  return id;
}

/** What `now` adds to `sent`; '' when it does not extend it (nothing is taken back). */
function grow(sent: string, now: string): string {
  return now.length > sent.length && now.startsWith(sent) ? now.slice(sent.length) : '';
}

interface SentCall {
  id: string;
  arguments: string;
}

export class MessageStream {
  private readonly stop: StopMatcher;
  /** The released text: everything generated so far, less a held-back tail and what follows a stop string. */
  private text = '';
  private stopped = false;
  private sentContent = '';
  private sentReasoning = '';
  private readonly sentCalls: SentCall[] = [];
  private finalParse: { text: string; message: NativeParsedMessage } | null = null;

  /** `parser` null: the text is the answer (raw text input, or a build without llama.cpp's chat layer). */
  constructor(
    stops: readonly string[],
    private readonly parser: ChatParser | null,
  ) {
    this.stop = new StopMatcher(stops);
  }

  /**
   * A token's text. `last`: no token follows (end of generation, maxTokens, a full context), so
   * held-back text is released and the answer read as final. Returns what the token adds to the
   * answer and whether a stop string completed (the caller then stops the generation).
   */
  push(piece: string, last: boolean): { delta: MessageDelta; stopped: boolean } {
    if (this.stopped) return { delta: {}, stopped: true };
    const r = this.stop.push(piece);
    let released = r.text;
    if (r.stopped) this.stopped = true;
    else if (last) released += this.stop.flush();
    this.text += released;
    if (!this.parser) return { delta: released ? { content: released } : {}, stopped: r.stopped };
    const done = r.stopped || last;
    const parsed = done ? this.parseFinal() : this.parsePartial();
    return { delta: parsed ? this.diff(parsed, done) : {}, stopped: r.stopped };
  }

  /**
   * What the message `finish` returned holds beyond the deltas `push` returned (text held back
   * until the end: a possible stop string's start, an unfinished tag, a UTF-8 tail).
   */
  finalDelta: MessageDelta = {};

  /** Ends the stream (`tail`: what the UTF-8 decoder still held): the answer's text and message; sets `finalDelta`. */
  finish(tail: string): { text: string; message: AssistantMessage } {
    let released = '';
    if (!this.stopped) {
      const r = this.stop.push(tail);
      released = r.text + (r.stopped ? '' : this.stop.flush());
      this.text += released;
    }
    if (!this.parser) {
      this.finalDelta = released ? { content: released } : {};
      return { text: this.text, message: { role: 'assistant', content: this.text, reasoningContent: null, toolCalls: [] } };
    }
    const p = this.parseFinal();
    this.finalDelta = this.diff(p, true); // before the ids below: a call announced here gets its id now
    const toolCalls: ToolCall[] = p.toolCalls.map((c, i) => ({
      id: this.sentCalls[i]?.id ?? (c.id || newToolCallId()),
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
    return { text: this.text, message: { role: 'assistant', content: p.content, reasoningContent: p.reasoningContent || null, toolCalls } };
  }

  private parsePartial(): NativeParsedMessage | null {
    try {
      return this.parser!.parse(this.text, true);
    } catch {
      return null; // a text the streaming parse cannot read yet: nothing to add
    }
  }

  /**
   * The final parse. A text that does not parse as the format is read as streaming reads it (a
   * text cut mid-way by maxTokens: its reasoning, its calls so far); one that streaming cannot
   * read either (no trace of the format) is kept whole, as content: no text is dropped.
   */
  private parseFinal(): NativeParsedMessage {
    if (this.finalParse?.text === this.text) return this.finalParse.message;
    let message: NativeParsedMessage;
    try {
      message = this.parser!.parse(this.text, false);
    } catch {
      const partial = this.parsePartial();
      const empty = !partial || (partial.content === '' && partial.reasoningContent === '' && partial.toolCalls.length === 0);
      message = empty ? { content: this.text, reasoningContent: '', toolCalls: [] } : partial;
    }
    this.finalParse = { text: this.text, message };
    return message;
  }

  /** What `p` adds to what was sent, recording it as sent. */
  private diff(p: NativeParsedMessage, final: boolean): MessageDelta {
    const delta: MessageDelta = {};
    const reasoning = grow(this.sentReasoning, p.reasoningContent);
    if (reasoning) {
      delta.reasoningContent = reasoning;
      this.sentReasoning += reasoning;
    }
    const content = grow(this.sentContent, p.content);
    if (content) {
      delta.content = content;
      this.sentContent += content;
    }
    const calls = this.callDeltas(p, final);
    if (calls.length > 0) delta.toolCalls = calls;
    return delta;
  }

  /**
   * A call is announced (index, id, type, name) once its name is whole: its arguments began, a
   * later call began, or the answer is final; then its arguments follow as they grow.
   */
  private callDeltas(p: NativeParsedMessage, final: boolean): ToolCallDelta[] {
    const out: ToolCallDelta[] = [];
    p.toolCalls.forEach((call, i) => {
      const sent = this.sentCalls[i];
      if (sent) {
        const more = grow(sent.arguments, call.arguments);
        if (more) {
          sent.arguments += more;
          out.push({ index: i, function: { arguments: more } });
        }
        return;
      }
      const nameWhole = final || call.arguments !== '' || i < p.toolCalls.length - 1;
      if (!nameWhole || call.name === '' || i !== this.sentCalls.length) return;
      const id = call.id || newToolCallId();
      this.sentCalls.push({ id, arguments: call.arguments });
      out.push({ index: i, id, type: 'function', function: { name: call.name, arguments: call.arguments } });
    });
    return out;
  }
}
