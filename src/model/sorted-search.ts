/** Binary searches over time-ordered items (sample times), shared by the evaluator and the viewer. */

/** Index of the last item whose key is <= x, or -1 when every key is greater. */
export function lastAtOrBefore<T = number>(
  items: ArrayLike<T>,
  x: number,
  key: (item: T) => number = (item) => item as unknown as number,
): number {
  let lo = 0;
  let hi = items.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (key(items[mid]!) <= x) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
