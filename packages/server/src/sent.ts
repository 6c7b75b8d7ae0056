// What a stream has sent of the answer so far (content, reasoning, each tool call's id, name and
// arguments), so that the final chunk carries exactly what the finished answer holds beyond it:
// the engine may hold text back until it knows it is not the start of a stop string or a tag,
// and the final parse of the whole text is what the client must end up with.
import type { AssistantMessage, MessageDelta, ToolCallDelta } from '@bmoe/engine';

interface SentCall {
  started: boolean;
  args: string;
}

export class SentAnswer {
  private content = '';
  private reasoning = '';
  private readonly calls = new Map<number, SentCall>();

  /** Records a delta as sent. */
  add(d: MessageDelta): void {
    this.content += d.content ?? '';
    this.reasoning += d.reasoningContent ?? '';
    for (const c of d.toolCalls ?? []) {
      const call = this.calls.get(c.index) ?? { started: false, args: '' };
      if (c.function.name !== undefined || c.id !== undefined) call.started = true;
      call.args += c.function.arguments ?? '';
      this.calls.set(c.index, call);
    }
  }

  /**
   * What `final` holds beyond what was sent: the missing tail of the content and the reasoning,
   * calls not started (whole) and the rest of started calls' arguments. A part that does not
   * continue what was sent (a final parse that differs from a partial one) cannot be taken back
   * and is left out.
   */
  rest(final: AssistantMessage): MessageDelta {
    const out: MessageDelta = {};
    const content = tail(this.content, final.content);
    if (content) out.content = content;
    const reasoning = tail(this.reasoning, final.reasoningContent ?? '');
    if (reasoning) out.reasoningContent = reasoning;
    const calls: ToolCallDelta[] = [];
    final.toolCalls.forEach((c, index) => {
      const sent = this.calls.get(index);
      if (!sent?.started) {
        calls.push({ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } });
        return;
      }
      const args = tail(sent.args, c.function.arguments);
      if (args) calls.push({ index, function: { arguments: args } });
    });
    if (calls.length > 0) out.toolCalls = calls;
    this.add(out);
    return out;
  }

  /** Text sent as content (raw completions: the whole text). */
  get text(): string {
    return this.content;
  }
}

function tail(sent: string, whole: string): string {
  return whole.length > sent.length && whole.startsWith(sent) ? whole.slice(sent.length) : '';
}

