// Token pieces are raw bytes and a multi-byte character may be split across tokens: a streaming
// TextDecoder holds the incomplete tail until the next piece completes it.
export class Utf8Stream {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });

  /** Text completed by this piece (possibly empty while a character is still incomplete). */
  push(bytes: Uint8Array): string {
    return this.decoder.decode(bytes, { stream: true });
  }

  /** Whatever is left at the end; an unfinished sequence becomes U+FFFD. */
  flush(): string {
    return this.decoder.decode();
  }
}
