/**
 * A uniform grid of points, made anew each frame, for the pairs of points near each other: each cell
 * lists its points, and a cell's points are paired with each other and with those of four of its
 * neighbours, so that every pair of points within a cell's width of each other is met once.
 *
 * Kept in typed arrays that last from frame to frame (an open-addressing table of cells, a linked list
 * of points per cell): a Map of cells made each frame spent most of an hour-long run's evaluation
 * growing its table and hashing its keys.
 */
export class CellGrid {
  /** Each slot's cell key, as the table holds it. */
  private slotKeys = new Int32Array(0);
  /** Each slot's first point, -1 for an empty slot. */
  private slotFirst = new Int32Array(0);
  /** The slots in use, in the order their cells were first met. */
  private usedSlots = new Int32Array(0);
  private used = 0;
  /** Each point's next point in the same cell, -1 at the end. */
  private nextInCell = new Int32Array(0);
  private cellX = new Int32Array(0);
  private cellY = new Int32Array(0);
  private mask = 0;

  /**
   * Puts `count` points in cells of `width`. A cell's points are listed in the points' order.
   * `xs` and `ys` hold at least `count` coordinates.
   */
  fill(xs: Float64Array, ys: Float64Array, count: number, width: number): void {
    if (this.nextInCell.length < count) this.grow(count);
    this.slotFirst.fill(-1);
    this.used = 0;
    // Added last point first, so that each cell's list runs in the points' order.
    for (let n = count - 1; n >= 0; n--) {
      const cx = Math.floor(xs[n]! / width) & (WRAP - 1);
      const cy = Math.floor(ys[n]! / width) & (WRAP - 1);
      this.cellX[n] = cx;
      this.cellY[n] = cy;
      const slot = this.slotOf(cx, cy, true);
      this.nextInCell[n] = this.slotFirst[slot]!;
      this.slotFirst[slot] = n;
    }
  }

  /** Calls `pair(a, b)` once for each two points in the same or neighbouring cells. */
  forEachNearPair(pair: (a: number, b: number) => void): void {
    const { nextInCell, slotFirst } = this;
    for (let u = 0; u < this.used; u++) {
      const slot = this.usedSlots[u]!;
      const first = slotFirst[slot]!;
      for (let a = first; a >= 0; a = nextInCell[a]!)
        for (let b = nextInCell[a]!; b >= 0; b = nextInCell[b]!) pair(a, b);
      const cx = this.cellX[first]!;
      const cy = this.cellY[first]!;
      for (let d = 0; d < FORWARD_NEIGHBOURS.length; d += 2) {
        const other = this.slotOf(
          (cx + FORWARD_NEIGHBOURS[d]!) & (WRAP - 1),
          (cy + FORWARD_NEIGHBOURS[d + 1]!) & (WRAP - 1),
          false,
        );
        if (other < 0) continue;
        for (let a = first; a >= 0; a = nextInCell[a]!)
          for (let b = slotFirst[other]!; b >= 0; b = nextInCell[b]!) pair(a, b);
      }
    }
  }

  /** The slot of cell (cx, cy), both within [0, WRAP); -1 when the cell has no point and `add` is false. */
  private slotOf(cx: number, cy: number, add: boolean): number {
    const key = cx * WRAP + cy;
    let slot = (Math.imul(key, 0x9e3779b1) >>> 0) & this.mask;
    for (;;) {
      if (this.slotFirst[slot]! < 0) {
        if (!add) return -1;
        this.slotKeys[slot] = key;
        this.usedSlots[this.used++] = slot;
        return slot;
      }
      if (this.slotKeys[slot] === key) return slot;
      slot = (slot + 1) & this.mask;
    }
  }

  private grow(count: number): void {
    const points = Math.max(count, 2 * this.nextInCell.length, 64);
    // A table at most a quarter full: probes stay short.
    const slots = 2 ** Math.ceil(Math.log2(points * 4));
    this.slotKeys = new Int32Array(slots);
    this.slotFirst = new Int32Array(slots);
    this.usedSlots = new Int32Array(points);
    this.mask = slots - 1;
    this.nextInCell = new Int32Array(points);
    this.cellX = new Int32Array(points);
    this.cellY = new Int32Array(points);
  }
}

/**
 * Cell coordinates are taken modulo this many cells, so that a cell's key is a small integer. Cells
 * WRAP apart (327 km at 10 m) share a slot: their points are paired too, and the caller's own test
 * finds them apart; every neighbour is found all the same, wrapped the same way.
 */
const WRAP = 2 ** 15;

/** The neighbours paired with a cell besides itself, as (dx, dy): half of the eight, each pair of cells once. */
const FORWARD_NEIGHBOURS = [1, -1, 1, 0, 1, 1, 0, 1];
