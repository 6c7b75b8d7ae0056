// One model, one generation at a time: requests take turns in arrival (FIFO) order. At most
// `maxQueue` wait behind the running one; a request whose client leaves while waiting gives up its
// place, and one that leaves while running releases the turn as soon as its generation stops.

export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  constructor(readonly waiting: number) {
    super(`${waiting} requests are already waiting`);
  }
}

export class TurnCancelledError extends Error {
  override readonly name = 'TurnCancelledError';
}

interface Waiter {
  grant(release: () => void): void;
  fail(err: Error): void;
}

export class Turns {
  private readonly waiting: Waiter[] = [];
  private running = false;

  /**
   * @param maxQueue requests allowed to wait behind the running one (0 = none wait).
   * @param onChange called whenever the queue depth or the busy flag changes.
   */
  constructor(
    readonly maxQueue: number,
    private readonly onChange: () => void = () => undefined,
  ) {}

  /** Requests waiting for their turn (the running one excluded). */
  get depth(): number {
    return this.waiting.length;
  }

  /** A generation holds the turn. */
  get busy(): boolean {
    return this.running;
  }

  /**
   * Resolves with a release function once it is this caller's turn. Throws QueueFullError at once
   * when `maxQueue` requests already wait; rejects with TurnCancelledError when `signal` aborts
   * (or `cancelAll` runs) before the turn comes.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new TurnCancelledError('the request was cancelled before its turn'));
    if (!this.running && this.waiting.length === 0) {
      this.running = true;
      this.onChange();
      return Promise.resolve(this.releaser());
    }
    if (this.waiting.length >= this.maxQueue) return Promise.reject(new QueueFullError(this.waiting.length));
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) {
          this.waiting.splice(i, 1);
          this.onChange();
        }
        reject(new TurnCancelledError('the request was cancelled before its turn'));
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        fail: (err) => {
          signal?.removeEventListener('abort', onAbort);
          reject(err);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
      this.onChange();
    });
  }

  /** Rejects every waiting request with `err` (shutdown). The running one keeps its turn. */
  cancelAll(err: Error): void {
    const all = this.waiting.splice(0);
    for (const w of all) w.fail(err);
    if (all.length > 0) this.onChange();
  }

  private releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) {
        next.grant(this.releaser());
      } else {
        this.running = false;
      }
      this.onChange();
    };
  }
}
