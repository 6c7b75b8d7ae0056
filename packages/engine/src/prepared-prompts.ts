// Prompts Model.promptTokens prepared, kept for the generation that follows with the same request.
// The server prepares a prompt to choose the slot whose cache holds most of it, then generates it:
// templating and tokenizing a long conversation again took ~5 ms of every turn's time to first
// token (2,276 tokens on the 3-layer preset). Each entry is used once, matched on the whole
// request; a prompt with images is not kept (its media handle belongs to one generation).
import type { PromptPlan, PromptRequest } from './prompt.js';

/** Requests prepared and not yet generated: enough for every slot's request in flight at once. */
const MAX_KEPT = 8;

export class PreparedPrompts {
  private readonly kept = new Map<string, PromptPlan>();

  /** Keeps `plan` for one generation of `req`; the oldest entry goes past MAX_KEPT. */
  keep(req: PromptRequest, plan: PromptPlan): void {
    if (plan.media) return;
    const key = requestKey(req);
    this.kept.delete(key);
    this.kept.set(key, plan);
    if (this.kept.size > MAX_KEPT) this.kept.delete(this.kept.keys().next().value as string);
  }

  /** The plan kept for `req`, once (then it is gone), or null. */
  take(req: PromptRequest): PromptPlan | null {
    if (this.kept.size === 0) return null;
    const key = requestKey(req);
    const plan = this.kept.get(key);
    if (!plan) return null;
    this.kept.delete(key);
    return plan;
  }
}

/** Everything a plan is made from: the input and every option checkRequest keeps. */
const requestKey = (req: PromptRequest): string => JSON.stringify(req);
