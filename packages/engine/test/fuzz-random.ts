// The seeded pseudo-random numbers of the constraint and template fuzz tests (fuzz-*.test.ts).
// Every case has its own generator, seeded from the run's seed and the case's index, so that one
// case can be rerun alone (BMOE_FUZZ_ONLY) and adding a case does not change the others.

/** mulberry32: small, fast, and the same sequence on every machine. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A float in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** One of `entries`' values, each as likely as its weight. */
  weighted<T>(entries: readonly (readonly [number, T])[]): T {
    const total = entries.reduce((s, [w]) => s + w, 0);
    let x = this.next() * total;
    for (const [w, v] of entries) {
      if ((x -= w) < 0) return v;
    }
    return entries[entries.length - 1]![1];
  }
}

/** The generator of case `index` of a run with `seed`. */
export function caseRng(seed: number, index: number): Rng {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(index + 1, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return new Rng(h ^ (h >>> 16));
}

/** A number from the environment (BMOE_FUZZ_*), else `fallback`. */
export function envNumber(name: string, fallback: number): number {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : Number(v);
}

/** `s` shortened for a failure report: the head, and how long it really is. */
export function clip(s: string, max = 600): string {
  const shown = JSON.stringify(s.length > max ? s.slice(0, max) : s);
  return s.length > max ? `${shown}... (${s.length} chars)` : shown;
}
