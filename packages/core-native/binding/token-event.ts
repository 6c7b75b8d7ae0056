// A token as generate()'s onToken gets it (NativeTokenCallback: bytes, end flag, numbers, extras)
// turned into the engine's NativeTokenEvent.
import { nativeTokenMetrics } from './contract.js';
import type { NativeTokenEvent, NativeTokenExtras } from './types.js';

/** The event for one onToken call; reads `values` now (the addon fills that array again for the next token). */
export function nativeTokenEvent(piece: Uint8Array, eog: boolean, values: Float64Array, extras: NativeTokenExtras | undefined): NativeTokenEvent {
  const ev: NativeTokenEvent = { piece, eog, metrics: nativeTokenMetrics(values) };
  if (extras === undefined) return ev;
  if (extras.logits) ev.logits = extras.logits;
  if (extras.logprob !== undefined) ev.logprob = extras.logprob;
  if (extras.topLogprobs) ev.topLogprobs = extras.topLogprobs;
  return ev;
}
