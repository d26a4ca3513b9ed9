/**
 * A seeded generator (mulberry32): the same seed gives the same run on every machine and Node
 * version, which Math.random cannot promise. Each concern draws from its own stream (`fork`) so that
 * adding a pedestrian does not shift every vehicle's draws.
 */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = hashSeed(seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  uniform(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Random.pick: no items to pick from');
    return items[this.int(items.length)]!;
  }

  normal(mean = 0, deviation = 1): number {
    const u = 1 - this.next();
    const v = this.next();
    return mean + deviation * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** A new generator whose draws depend on this one's seed and `label` only. */
  fork(label: string): Random {
    return new Random(this.state ^ hashString(label));
  }
}

function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function hashSeed(seed: number): number {
  // Seeds above 2^32 or with fractions still give distinct streams.
  return hashString(String(seed)) ^ (seed >>> 0);
}
