// An unbounded single-consumer queue bridging a push source (native token callbacks) to an async
// iterator. Unbounded is fine: events are small and a generation is bounded by maxTokens.
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private waiter: ((r: IteratorResult<T>) => void) | null = null;
  private failWaiter: ((e: unknown) => void) | null = null;
  private closed = false;
  private error: unknown = undefined;
  private hasError = false;

  push(item: T): void {
    if (this.closed) return;
    if (this.waiter) {
      const w = this.waiter;
      this.clearWaiter();
      w({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  /** Ends the stream after the buffered items (with `error` thrown after them, if given). */
  end(error?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    if (error !== undefined) {
      this.error = error;
      this.hasError = true;
    }
    this.wake();
  }

  /** Ends the stream now, dropping buffered items (abort: the consumer asked for no more). */
  cancel(): void {
    this.items.length = 0;
    this.closed = true;
    this.wake();
  }

  next(): Promise<IteratorResult<T>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.closed) {
      if (this.hasError) {
        this.hasError = false;
        return Promise.reject(this.error);
      }
      return Promise.resolve({ value: undefined, done: true });
    }
    return new Promise((resolve, reject) => {
      this.waiter = resolve;
      this.failWaiter = reject;
    });
  }

  private wake(): void {
    if (!this.waiter || this.items.length > 0) return;
    const w = this.waiter;
    const f = this.failWaiter;
    this.clearWaiter();
    if (this.hasError && f) {
      this.hasError = false;
      f(this.error);
    } else {
      w({ value: undefined, done: true });
    }
  }

  private clearWaiter(): void {
    this.waiter = null;
    this.failWaiter = null;
  }
}
