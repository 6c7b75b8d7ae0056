// One model, `capacity` generations at a time (its slots): requests take turns in arrival (FIFO)
// order. At most `maxQueue` wait while every slot runs; a request whose client leaves while
// waiting gives up its place, and one that leaves while running releases its turn as soon as its
// generation stops.

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
  private running = 0;

  /**
   * @param maxQueue requests allowed to wait while every turn is held (0 = none wait).
   * @param onChange called whenever the queue depth or the running count changes.
   * @param capacity turns held at once (the server's slots).
   */
  constructor(
    readonly maxQueue: number,
    private readonly onChange: () => void = () => undefined,
    readonly capacity = 1,
  ) {}

  /** Requests waiting for their turn (the running ones excluded). */
  get depth(): number {
    return this.waiting.length;
  }

  /** Some generation holds a turn. */
  get busy(): boolean {
    return this.running > 0;
  }

  /** Turns held now. */
  get active(): number {
    return this.running;
  }

  /**
   * Resolves with a release function once it is this caller's turn. Throws QueueFullError at once
   * when `maxQueue` requests already wait; rejects with TurnCancelledError when `signal` aborts
   * (or `cancelAll` runs) before the turn comes.
   */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new TurnCancelledError('the request was cancelled before its turn'));
    if (this.running < this.capacity && this.waiting.length === 0) {
      this.running++;
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

  /** Rejects every waiting request with `err` (shutdown). The running ones keep their turns. */
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
        this.running--;
      }
      this.onChange();
    };
  }
}
