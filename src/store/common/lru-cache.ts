/**
 * A bounded cache that evicts what was not used lately (CLOCK, the second-chance approximation of
 * least-recently-used): a hit only sets a flag, where a strict LRU moves the entry on every hit, and
 * a scene hits a block cache 400 times.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, { value: V; used: boolean }>();
  private readonly capacity: number;
  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (entry === undefined) return undefined;
    entry.used = true;
    return entry.value;
  }

  set(key: K, value: V): void {
    const known = this.map.get(key);
    if (known) {
      known.value = value;
      known.used = true;
      return;
    }
    while (this.map.size >= this.capacity) this.evictOne();
    this.map.set(key, { value, used: false });
  }

  /** The oldest entry not used since it was last passed over; used ones get a second chance. */
  private evictOne(): void {
    for (const [key, entry] of this.map) {
      this.map.delete(key);
      if (!entry.used) return;
      entry.used = false;
      this.map.set(key, entry);
    }
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
