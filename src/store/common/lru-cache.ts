/**
 * A bounded cache that evicts what was not used lately (CLOCK, the second-chance approximation of
 * least-recently-used): a hit only sets a flag, where a strict LRU moves the entry on every hit, and
 * a scene hits a block cache 400 times. Bounded by the sum of its entries' weights: by default each
 * weighs 1 (a bound on their number); a cache of decoded data weighs them in bytes.
 */
export class LruCache<K, V> {
  private readonly map = new Map<K, { value: V; used: boolean; weight: number }>();
  private readonly capacity: number;
  private readonly weigh: (value: V) => number;
  private total = 0;

  constructor(capacity: number, weigh: (value: V) => number = () => 1) {
    this.capacity = capacity;
    this.weigh = weigh;
  }

  get size(): number {
    return this.map.size;
  }

  /** The sum of the entries' weights. */
  get weight(): number {
    return this.total;
  }

  /** The weight it holds before it evicts anything. */
  get bound(): number {
    return this.capacity;
  }

  get(key: K): V | undefined {
    const entry = this.map.get(key);
    if (entry === undefined) return undefined;
    entry.used = true;
    return entry.value;
  }

  set(key: K, value: V): void {
    const weight = this.weigh(value);
    const known = this.map.get(key);
    if (known) {
      this.total += weight - known.weight;
      known.value = value;
      known.weight = weight;
      known.used = true;
      return;
    }
    // An entry heavier than the whole capacity is still kept, alone: the caller is about to use it.
    while (this.map.size > 0 && this.total + weight > this.capacity) this.evictOne();
    this.map.set(key, { value, used: false, weight });
    this.total += weight;
  }

  /** The oldest entry not used since it was last passed over; used ones get a second chance. */
  private evictOne(): void {
    for (const [key, entry] of this.map) {
      this.map.delete(key);
      if (!entry.used) {
        this.total -= entry.weight;
        return;
      }
      entry.used = false;
      this.map.set(key, entry);
    }
  }

  delete(key: K): void {
    const entry = this.map.get(key);
    if (entry === undefined) return;
    this.map.delete(key);
    this.total -= entry.weight;
  }

  clear(): void {
    this.map.clear();
    this.total = 0;
  }
}
