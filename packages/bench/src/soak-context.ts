// What every soak request sender shares (soak-requests.ts, soak-structured.ts): the context a
// request is sent in, how it ended, and the seeded picks that choose what to send.
import type OpenAI from 'openai';

/**
 * How one request ended: an HTTP status ('200', '400', …), or 'aborted' (the client left on
 * purpose), 'stream-error' (200, then an error event or a stream cut short), 'network-error'
 * (connection refused or reset), 'timeout'.
 */
export type Outcome = string;

export interface RequestContext {
  url: string;
  client: OpenAI;
  model: string;
  /** The soak's seeded generator. */
  random: Random;
  /** Per-request limit, ms. */
  timeoutMs: number;
  /** Aborted when the soak stops early (the server died). */
  stop: AbortSignal;
}

/** Uniform in [0, 1): the soak's seeded generator. */
export type Random = () => number;

/** One of `items`, chosen by `r`. */
export const pick = <T>(r: Random, items: readonly T[]): T => items[Math.floor(r() * items.length)] as T;

/** An integer in [lo, hi], chosen by `r`. */
export const int = (r: Random, lo: number, hi: number): number => lo + Math.floor(r() * (hi - lo + 1));
