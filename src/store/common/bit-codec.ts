/**
 * Bit-level packing of numeric columns, the inner loop of the chunk format (chunk-codes.ts,
 * chunk-encoder.ts).
 *
 * Floats: each value is compared with a prediction (the linear extrapolation of the two before it, or
 * the value before it), which leaves only what the prediction got wrong: a simulator's positions and
 * headings move smoothly, so 64-bit doubles shrink to 25-35 significant bits. The residual is the
 * difference of the two doubles' bit patterns as 64-bit integers, zig-zag coded (or, for noise about
 * zero, their XOR rotated; see FloatPacking). Residuals go in groups of four, each group at the width of
 * its widest member; the width is coded as a change from the previous group's (1 bit when it does not
 * change, 3 to 5 bits for most changes; 3 bits for XOR), or in full. On a simulator's traffic with
 * full-precision noise this is smaller than XOR + byte shuffle + deflate, at several times its speed and
 * without a native call per column. Lossless: every bit of every double (-0, subnormals, NaN payloads
 * excepted since NaN is refused upstream) comes back.
 *
 * Integers (times, steps, counters, ids up to 2^53): zig-zag deltas (or deltas of deltas, for times)
 * packed the same way, when every delta fits 32 bits.
 */

const GROUP = 4;

/** Growable little-endian 32-bit word writer of bit fields of up to 32 bits. */
export class BitWriter {
  private words: Uint32Array;
  private pos = 0;
  private acc = 0;
  private used = 0;

  constructor(capacityBits = 1024) {
    this.words = new Uint32Array(Math.max(4, (capacityBits >>> 5) + 2));
  }

  /** Where finish()'s bytes begin, in words: room a caller keeps in front of them for a prefix. */
  private start = 0;

  /**
   * Empties it for reuse, with room for at least `capacityBits` (what finish() returned is overwritten),
   * after `reservedWords` words left for the caller to fill (finish() does not include them).
   */
  reset(capacityBits: number, reservedWords = 0): this {
    const words = (capacityBits >>> 5) + 2 + reservedWords;
    if (this.words.length < words) this.words = new Uint32Array(words);
    this.start = reservedWords;
    this.pos = reservedWords;
    this.acc = 0;
    this.used = 0;
    return this;
  }

  /** Writes the low `n` bits of `value` (0 <= n <= 32). */
  write(value: number, n: number): void {
    if (n === 0) return;
    const v = n === 32 ? value >>> 0 : (value & ((1 << n) - 1)) >>> 0;
    const used = this.used;
    this.acc = (this.acc | (v << used)) >>> 0;
    const total = used + n;
    if (total >= 32) {
      if (this.pos === this.words.length) this.grow();
      this.words[this.pos++] = this.acc;
      // The bits of v that did not fit; `v >>> 32` would be v itself, hence the test.
      this.acc = used === 0 ? 0 : v >>> (32 - used);
      this.used = total - 32;
    } else this.used = total;
  }

  private grow(): void {
    const bigger = new Uint32Array(this.words.length * 2);
    bigger.set(this.words);
    this.words = bigger;
  }

  /** The bytes written, the last word padded with zero bits. */
  finish(): Uint8Array {
    const words = this.used > 0 ? this.pos + 1 : this.pos;
    if (this.used > 0) {
      if (this.pos === this.words.length) this.grow();
      this.words[this.pos] = this.acc;
    }
    return new Uint8Array(this.words.buffer, this.start * 4, (words - this.start) * 4);
  }
}

/** Reads what BitWriter wrote. Reading past the end throws: damaged input, never garbage. */
export class BitReader {
  private readonly words: Uint32Array;
  private pos = 0;
  private acc = 0;
  private left = 0;

  constructor(bytes: Uint8Array) {
    if (bytes.byteLength % 4 !== 0)
      throw new Error(`bit stream of ${bytes.byteLength} bytes, not whole words`);
    // Aligned view when possible; otherwise a copy (a Buffer slice may start anywhere).
    this.words =
      bytes.byteOffset % 4 === 0
        ? new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2)
        : new Uint32Array(new Uint8Array(bytes).buffer);
  }

  read(n: number): number {
    if (n === 0) return 0;
    if (n <= this.left) {
      const v = n === 32 ? this.acc : this.acc & ((1 << n) - 1);
      this.acc = n === 32 ? 0 : this.acc >>> n;
      this.left -= n;
      return v >>> 0;
    }
    if (this.pos >= this.words.length) throw new Error('bit stream ends early');
    const next = this.words[this.pos++]!;
    const have = this.left;
    const low = this.acc;
    const need = n - have;
    const high = need === 32 ? next : next & ((1 << need) - 1);
    this.acc = need === 32 ? 0 : next >>> need;
    this.left = 32 - need;
    return (low | (high << have)) >>> 0;
  }
}

/** Group widths: a change of -3..+3 from the previous group in 3 bits, else 7 then the width in 7 bits. */
function writeWidth(out: BitWriter, width: number, previous: number): void {
  const d = width - previous;
  if (d >= -3 && d <= 3) out.write(d + 3, 3);
  else {
    out.write(7, 3);
    out.write(width, 7);
  }
}

function readWidth(input: BitReader, previous: number, max: number): number {
  const code = input.read(3);
  const width = code === 7 ? input.read(7) : previous + code - 3;
  if (width < 0 || width > max) throw new Error(`group width ${width} out of 0..${max}`);
  return width;
}

/**
 * Group widths in a prefix code, for float columns packed as differences (whose widths change less
 * than XOR's: most groups have the width of the group before, most others one more or less): no change
 * '0'; a change of 1 to 3 that many ones, a zero and the sign (3 to 5 bits); else '1111' and the width
 * in 7 bits. Written least significant bit first, as every field. Shorter than the 3-bit code on such
 * widths, and close to their entropy.
 */
function writeWidthPrefixed(out: BitWriter, width: number, previous: number): void {
  const d = width - previous;
  if (d === 0) out.write(0, 1);
  else if (d >= -3 && d <= 3) {
    const k = d < 0 ? -d : d;
    out.write(((1 << k) - 1) | ((d < 0 ? 1 : 0) << (k + 1)), k + 2);
  } else out.write(15 | (width << 4), 11);
}

/** What writeWidthPrefixed wrote, from a reader (the float64 unpacker reads it inline, at absolute positions). */
function readWidthPrefixed(input: BitReader, previous: number, max: number): number {
  let ones = 0;
  while (ones < 4 && input.read(1) === 1) ones++;
  const width =
    ones === 0 ? previous : ones === 4 ? input.read(7) : previous + (input.read(1) ? -ones : ones);
  if (width < 0 || width > max) throw new Error(`group width ${width} out of 0..${max}`);
  return width;
}

/** The bits writeWidthPrefixed takes for a change of d. */
const prefixedWidthBits = (d: number): number =>
  d === 0 ? 1 : d >= -3 && d <= 3 ? (d < 0 ? -d : d) + 2 : 11;

/** The bits writeWidth takes for a change of d. */
const plainWidthBits = (d: number): number => (d >= -3 && d <= 3 ? 3 : 10);

/**
 * How a value's residual is made from it and its prediction:
 * - `difference`: the difference of their bit patterns as 64-bit integers, zig-zag coded (the sign at
 *   the bottom). For doubles of one sign the bit patterns are ordered like the values, so the residual
 *   is the distance in units of the last place: a prediction off by d units costs about log2(d) + 1
 *   bits. XOR costs more than that (a carry across a bit boundary sets every bit below it) and varies
 *   more from value to value, which widens the groups.
 * - `xor-rotated`: the XOR of the two rotated left by one bit. For noise about zero (an acceleration),
 *   where a value and its prediction often differ in sign: their bit patterns are then about 2^63 apart
 *   and a difference costs 64 bits, but the XOR rotated keeps the sign at the bottom and the exponents'
 *   agreement above it, which packs such columns tighter than the XOR straight.
 * - `xor`: the XOR as it is: how simrec packed every float column before store schema 5 (read, and written
 *   only when asked for).
 */
export type FloatResidual = 'difference' | 'xor' | 'xor-rotated';

/** How a column's values are predicted, and how a value's residual is made from its prediction. */
export interface FloatPacking {
  predictor: 'linear' | 'previous';
  residual: FloatResidual;
}

/**
 * Where packed columns are written: one writer, reused. Its bytes are valid until the next column is
 * packed; every caller copies them into its block at once. A writer allocated per column and block was,
 * with its garbage, the costliest allocation of the writer thread.
 */
const packScratch = new BitWriter(64 * 1024);

const scratch = new Float64Array(1);
/** The prediction's words, as int32: the inner loops add and subtract them without leaving int32. */
const scratchWords = new Int32Array(scratch.buffer);

const significantBits = (lo: number, hi: number): number =>
  hi !== 0 ? 64 - Math.clz32(hi) : lo !== 0 ? 32 - Math.clz32(lo) : 0;

/**
 * The residual kinds as small integers for the inner loops. The residual of a value (vlo, vhi words)
 * and its prediction (plo, phi) is computed in those loops, in int32 arithmetic: a helper handing two
 * words back through an array, or a comparison of unsigned words, made packing a third slower.
 * difference: d = v - p on 32-bit halves, the borrow of the low half `((~vlo & plo) | (~(vlo ^ plo) & dlo)) >>> 31`,
 * then zig-zag `(d << 1) ^ (d >> 63)`. xor-rotated: the XOR rotated left by one bit.
 */
const DIFFERENCE = 0;
const XOR = 1;
const XOR_ROTATED = 2;
const residualKind = (residual: FloatResidual): number =>
  residual === 'difference' ? DIFFERENCE : residual === 'xor' ? XOR : XOR_ROTATED;

/** The significant bits of a value's residual from its prediction, as difference. */
function differenceBits(vlo: number, vhi: number, plo: number, phi: number): number {
  const dlo = (vlo - plo) | 0;
  const dhi = (vhi - phi - (((~vlo & plo) | (~(vlo ^ plo) & dlo)) >>> 31)) | 0;
  const sign = dhi >> 31;
  return significantBits((dlo << 1) ^ sign, ((dhi << 1) | (dlo >>> 31)) ^ sign);
}

/** The significant bits of a value's XOR with its prediction rotated left by one (without rotating it). */
function rotatedXorBits(vlo: number, vhi: number, plo: number, phi: number): number {
  const lo = vlo ^ plo;
  const hi = vhi ^ phi;
  return lo === 0 && hi === 0 ? 0 : 1 + significantBits(lo, hi & 0x7fffffff);
}

/**
 * The cheapest packing for a column (predictor, and residual), judged on its first 64 values: a
 * column's character (a smooth position, a noisy acceleration) holds for a block, and trying each on
 * every value was a fifth of the writer's time. The predictors are scored in one pass, counting the
 * bits the packing would take (blocks are the size of a commit: with 100 values a block, scoring them
 * apart was 8% of sealing).
 */
function choosePacking(values: Float64Array): FloatPacking {
  if (values.length <= 2) return { predictor: 'linear', residual: 'difference' };
  const straight = scorePackings(values, 'difference');
  // The rotated XOR only pays where a value and its prediction differ in sign (noise about zero);
  // elsewhere it is not scored.
  if (!straight.signs) return { predictor: straight.linear ? 'linear' : 'previous', residual: 'difference' };
  const rotated = scorePackings(values, 'xor-rotated');
  const best = Math.min(straight.previousBits, straight.linearBits, rotated.previousBits, rotated.linearBits);
  if (best === straight.linearBits) return { predictor: 'linear', residual: 'difference' };
  if (best === straight.previousBits) return { predictor: 'previous', residual: 'difference' };
  return { predictor: rotated.linear ? 'linear' : 'previous', residual: 'xor-rotated' };
}

/** The bits each predictor would take on the first 64 values with the given residual (see choosePacking). */
function scorePackings(
  values: Float64Array,
  residual: FloatResidual,
): { previousBits: number; linearBits: number; linear: boolean; signs: boolean } {
  const difference = residual === 'difference';
  const n = Math.min(values.length, 64);
  const words = new Int32Array(values.buffer, values.byteOffset, n * 2);
  let previousBits = 0;
  let linearBits = 0;
  let previousWidth = 0;
  let linearWidth = 0;
  let signs = 0;
  for (let g = 1; g < n; g += GROUP) {
    const end = Math.min(n, g + GROUP);
    let wp = 0;
    let wl = 0;
    for (let i = g; i < end; i++) {
      const lo = words[2 * i]!;
      const hi = words[2 * i + 1]!;
      scratch[0] = values[i - 1]!;
      signs |= hi ^ scratchWords[1]!;
      const sp = difference
        ? differenceBits(lo, hi, scratchWords[0]!, scratchWords[1]!)
        : rotatedXorBits(lo, hi, scratchWords[0]!, scratchWords[1]!);
      if (sp > wp) wp = sp;
      if (i > 1) {
        const p = 2 * values[i - 1]! - values[i - 2]!;
        // As packFloat64 predicts: an overflowing extrapolation falls back to the value before.
        if (Number.isFinite(p)) scratch[0] = p;
      }
      signs |= hi ^ scratchWords[1]!;
      const sl = difference
        ? differenceBits(lo, hi, scratchWords[0]!, scratchWords[1]!)
        : rotatedXorBits(lo, hi, scratchWords[0]!, scratchWords[1]!);
      if (sl > wl) wl = sl;
    }
    const dp = wp - previousWidth;
    previousBits += (difference ? prefixedWidthBits(dp) : plainWidthBits(dp)) + wp * (end - g);
    previousWidth = wp;
    const dl = wl - linearWidth;
    linearBits += (difference ? prefixedWidthBits(dl) : plainWidthBits(dl)) + wl * (end - g);
    linearWidth = wl;
  }
  return { previousBits, linearBits, linear: linearBits <= previousBits, signs: signs >>> 31 === 1 };
}

/**
 * The prediction of values[i] (i >= 1), packing and unpacking alike: the value before, or the line
 * through the two before. An overflowing extrapolation would be Infinity on one machine and the same on
 * every other, but a finite fallback keeps the residual small for values near the largest double.
 */
function predict(values: Float64Array, i: number, linear: boolean): number {
  if (i === 1 || !linear) return values[i - 1]!;
  const p = 2 * values[i - 1]! - values[i - 2]!;
  return Number.isFinite(p) ? p : values[i - 1]!;
}

/** A group's residual words, computed once and written at the group's width. */
const groupLo = new Uint32Array(GROUP);
const groupHi = new Uint32Array(GROUP);

/**
 * Packs float64 values with whichever packing costs fewer bits; returns it with the bytes, which are
 * valid until the next column is packed. One pass per group of four: each value's prediction, its
 * residual and the group's width, then the group written (a pass for the residuals, one for the widths
 * and one to write them were 30% more of the writer thread's encoding).
 */
export function packFloat64(
  values: Float64Array,
  /** Chosen from the values (choosePacking) unless given: tests give each one. */
  packing: FloatPacking = choosePacking(values),
): { packing: FloatPacking; bytes: Uint8Array } {
  const n = values.length;
  const linear = packing.predictor === 'linear';
  const kind = residualKind(packing.residual);
  const words = new Int32Array(values.buffer, values.byteOffset, n * 2);
  // Room for every value at 64 bits and its group's width code: growing the writer copied it.
  const out = packScratch.reset(n * 67 + 64);
  // The first value has no prediction: all of its bits, kept apart so it does not widen its group.
  if (n > 0) {
    out.write(words[0]!, 32);
    out.write(words[1]!, 32);
  }
  let last = 0;
  for (let g = 1; g < n; g += GROUP) {
    const end = g + GROUP < n ? g + GROUP : n;
    let width = 0;
    for (let i = g; i < end; i++) {
      scratch[0] = predict(values, i, linear);
      const vlo = words[2 * i]!;
      const vhi = words[2 * i + 1]!;
      const plo = scratchWords[0]!;
      const phi = scratchWords[1]!;
      let lo: number;
      let hi: number;
      if (kind === DIFFERENCE) {
        // As differenceBits: d = v - p, zig-zag.
        const dlo = (vlo - plo) | 0;
        const dhi = (vhi - phi - (((~vlo & plo) | (~(vlo ^ plo) & dlo)) >>> 31)) | 0;
        const sign = dhi >> 31;
        lo = (dlo << 1) ^ sign;
        hi = ((dhi << 1) | (dlo >>> 31)) ^ sign;
      } else {
        lo = vlo ^ plo;
        hi = vhi ^ phi;
        if (kind === XOR_ROTATED) {
          // Rotated left by one bit: the sign bit becomes bit 0.
          const rlo = (lo << 1) | (hi >>> 31);
          hi = (hi << 1) | (lo >>> 31);
          lo = rlo;
        }
      }
      groupLo[i - g] = lo;
      groupHi[i - g] = hi;
      const bits = significantBits(lo, hi);
      if (bits > width) width = bits;
    }
    if (kind === DIFFERENCE) writeWidthPrefixed(out, width, last);
    else writeWidth(out, width, last);
    last = width;
    const count = end - g;
    if (width <= 32) for (let k = 0; k < count; k++) out.write(groupLo[k]!, width);
    else
      for (let k = 0; k < count; k++) {
        out.write(groupLo[k]!, 32);
        out.write(groupHi[k]!, width - 32);
      }
  }
  return { packing, bytes: out.finish() };
}

/** Blocks a packing chosen for a column is kept for before it is chosen again (see FloatPackingMemo). */
const PACKING_KEPT_FOR_BLOCKS = 8;

/**
 * The packing of each float column of a stream, kept from one block to the next: choosing it scores
 * every packing on a block's first 64 values, a noticeable share of the writer thread's time, while a
 * column's character (a smooth position, noise about zero) rarely changes from one commit to the next.
 * A packing is chosen again every 8th block, or at the next block when one packs a tenth worse than the
 * block it was chosen on (an acceleration whose sign starts to change): faster, for a few hundredths of
 * a byte a state.
 */
export class FloatPackingMemo {
  private readonly kept = new Map<
    number,
    { packing: FloatPacking; blocksLeft: number; bitsPerValue: number }
  >();

  /** packFloat64 for the column `key` (its place in the stream's column list). */
  pack(key: number, values: Float64Array): { packing: FloatPacking; bytes: Uint8Array } {
    const kept = this.kept.get(key);
    if (kept && kept.blocksLeft > 0) {
      kept.blocksLeft--;
      const packed = packFloat64(values, kept.packing);
      if (packed.bytes.length * 8 > values.length * kept.bitsPerValue * 1.1) kept.blocksLeft = 0;
      return packed;
    }
    const packed = packFloat64(values);
    const chosen = {
      packing: packed.packing,
      blocksLeft: PACKING_KEPT_FOR_BLOCKS - 1,
      bitsPerValue: (packed.bytes.length * 8) / values.length,
    };
    this.kept.set(key, chosen);
    return packed;
  }
}

/**
 * The values packFloat64 packed, into `target` when given (n values long: a place in a chunk-wide
 * column, so that reading a whole chunk does not decode each block into arrays of its own and copy them).
 */
export function unpackFloat64(
  bytes: Uint8Array,
  n: number,
  packing: FloatPacking,
  target?: Float64Array,
): Float64Array {
  const values = target ?? new Float64Array(n);
  if (n === 0) return values;
  if (bytes.byteLength % 4 !== 0 || bytes.byteOffset % 4 !== 0)
    throw new Error(
      `bit stream of ${bytes.byteLength} bytes at offset ${bytes.byteOffset}, not whole aligned words`,
    );
  const src = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  if (src.length < 2) throw new Error('bit stream ends early');
  const words = new Int32Array(values.buffer, values.byteOffset, n * 2);
  words[0] = src[0]!;
  words[1] = src[1]!;
  const linear = packing.predictor === 'linear';
  // A loop per residual kind, each with type feedback of its own. In one loop for all kinds, V8
  // optimised it for the kinds a process had decoded so far, threw that code away at the first column
  // of another kind and compiled it again: most of a fresh process's second trajectory read
  // (--trace-deopt: "insufficient type feedback").
  const kind = residualKind(packing.residual);
  if (kind === DIFFERENCE) unpackDifferences(src, words, values, n, linear);
  else unpackXors(src, words, values, n, linear, kind === XOR_ROTATED);
  return values;
}

/**
 * A field of `width` bits (0 to 32) at bit `pos` of little-endian words. The decoding loops read fields at
 * absolute bit positions (no reader state to update) and check the stream's length once a group.
 */
function bitField(src: Uint32Array, pos: number, width: number): number {
  const i = pos >>> 5;
  const b = pos & 31;
  let v = src[i]! >>> b;
  if (b !== 0 && b + width > 32) v |= src[i + 1]! << (32 - b);
  return width === 32 ? v >>> 0 : (v & ((1 << width) - 1)) >>> 0;
}

const checkGroupWidth = (width: number, pos: number, count: number, totalBits: number): void => {
  if (width < 0 || width > 64) throw new Error(`group width ${width} out of 0..64`);
  if (pos + width * count > totalBits) throw new Error('bit stream ends early');
};

/** Values packed as differences from their predictions (zig-zagged), group widths in the prefix code. */
function unpackDifferences(
  src: Uint32Array,
  words: Int32Array,
  values: Float64Array,
  n: number,
  linear: boolean,
): void {
  const totalBits = src.length * 32;
  let pos = 64;
  let width = 0;
  for (let g = 1; g < n; g += GROUP) {
    const groupEnd = g + GROUP < n ? g + GROUP : n;
    // writeWidthPrefixed's code, from up to 11 bits looked at once; most groups keep the width ('0').
    const available = totalBits - pos;
    if (available <= 0) throw new Error('bit stream ends early');
    const peek = bitField(src, pos, available < 11 ? available : 11);
    if ((peek & 1) === 0) pos += 1;
    else {
      // The ones before the first zero (the lowest zero bit isolated), at most 4.
      const run = 31 - Math.clz32(~peek & (peek + 1));
      const ones = run < 4 ? run : 4;
      const bits = ones < 4 ? ones + 2 : 11;
      if (bits > available) throw new Error('bit stream ends early');
      if (ones === 4) width = (peek >>> 4) & 127;
      else width += (peek >>> (ones + 1)) & 1 ? -ones : ones;
      pos += bits;
    }
    checkGroupWidth(width, pos, groupEnd - g, totalBits);
    const lowBits = width <= 32 ? width : 32;
    const highBits = width - lowBits;
    for (let i = g; i < groupEnd; i++) {
      const lo = lowBits === 0 ? 0 : bitField(src, pos, lowBits);
      pos += lowBits;
      const hi = highBits === 0 ? 0 : bitField(src, pos, highBits);
      pos += highBits;
      scratch[0] = predict(values, i, linear);
      const plo = scratchWords[0]!;
      const phi = scratchWords[1]!;
      // Zig-zag undone, then v = p + d on 32-bit halves, the carry of the low half from its bits.
      const sign = -(lo & 1);
      const dlo = ((lo >>> 1) | (hi << 31)) ^ sign;
      const dhi = (hi >>> 1) ^ sign;
      const vlo = (plo + dlo) | 0;
      words[2 * i] = vlo;
      words[2 * i + 1] = phi + dhi + (((plo & dlo) | ((plo | dlo) & ~vlo)) >>> 31);
    }
  }
}

/**
 * Values packed as the XOR of their words with their predictions', rotated right by one bit when
 * `rotated` (undone here by the same operations either way, so that one kind's type feedback serves the
 * other), group widths as 3-bit changes.
 */
function unpackXors(
  src: Uint32Array,
  words: Int32Array,
  values: Float64Array,
  n: number,
  linear: boolean,
  rotated: boolean,
): void {
  const totalBits = src.length * 32;
  const shift = rotated ? 1 : 0;
  const carry = rotated ? -1 : 0;
  let pos = 64;
  let width = 0;
  for (let g = 1; g < n; g += GROUP) {
    const groupEnd = g + GROUP < n ? g + GROUP : n;
    if (pos + 3 > totalBits) throw new Error('bit stream ends early');
    const code = bitField(src, pos, 3);
    pos += 3;
    if (code === 7) {
      if (pos + 7 > totalBits) throw new Error('bit stream ends early');
      width = bitField(src, pos, 7);
      pos += 7;
    } else width += code - 3;
    checkGroupWidth(width, pos, groupEnd - g, totalBits);
    const lowBits = width <= 32 ? width : 32;
    const highBits = width - lowBits;
    for (let i = g; i < groupEnd; i++) {
      const lo = lowBits === 0 ? 0 : bitField(src, pos, lowBits);
      pos += lowBits;
      const hi = highBits === 0 ? 0 : bitField(src, pos, highBits);
      pos += highBits;
      scratch[0] = predict(values, i, linear);
      words[2 * i] = ((lo >>> shift) | ((hi << 31) & carry)) ^ scratchWords[0]!;
      words[2 * i + 1] = ((hi >>> shift) | ((lo << 31) & carry)) ^ scratchWords[1]!;
    }
  }
}

/** The float32 prediction of f[i] (i >= 1): the value before, or the line through the two before. */
function predict32(f: Float32Array, i: number, linear: boolean, p: Float32Array): void {
  p[0] = i === 1 || !linear ? f[i - 1]! : 2 * f[i - 1]! - f[i - 2]!;
  if (!Number.isFinite(p[0])) p[0] = f[i - 1]!;
}

/** A 32-bit residual of a value's word from its prediction's: the difference zig-zagged, or the XOR rotated. */
const residual32 = (v: number, p: number, residual: FloatResidual): number => {
  if (residual === 'difference') {
    const d = (v - p) | 0;
    return ((d << 1) ^ (d >> 31)) >>> 0;
  }
  const x = (v ^ p) >>> 0;
  return residual === 'xor' ? x : ((x << 1) | (x >>> 31)) >>> 0;
};

/** Scratch of the float32 packer, reused (grown as needed): the values as float32 and their residuals. */
let f32Scratch = new Float32Array(1024);
let f32Residuals = new Uint32Array(1024);
const p32 = new Float32Array(1);
const p32Word = new Uint32Array(p32.buffer);

/** The values as float32, in the reused scratch. */
function asFloat32(values: Float64Array): Float32Array {
  if (f32Scratch.length < values.length) {
    f32Scratch = new Float32Array(values.length * 2);
    f32Residuals = new Uint32Array(values.length * 2);
  }
  const f = f32Scratch.subarray(0, values.length);
  f.set(values);
  return f;
}

/**
 * float32 values packed as float64 columns are (store schema 5): a predictor and a residual chosen per
 * block on its first 64 values, the difference of the words (zig-zag) with widths in the prefix code, or
 * for noise about zero the XOR rotated with 3-bit width changes; smaller than the linear XOR before it.
 * Given a packing of plain XOR (tests),
 * the bytes simrec wrote before schema 5. Valid until the next is packed.
 */
export function packFloat32(
  values: Float64Array,
  packing?: FloatPacking,
): { packing: FloatPacking; bytes: Uint8Array } {
  const n = values.length;
  const f = asFloat32(values);
  const chosen = packing ?? choosePacking32(f);
  const w = new Uint32Array(f.buffer, f.byteOffset, n);
  const r = f32Residuals.subarray(0, n);
  const linear = chosen.predictor === 'linear';
  const difference = chosen.residual === 'difference';
  if (n > 0) r[0] = w[0]!;
  for (let i = 1; i < n; i++) {
    predict32(f, i, linear, p32);
    r[i] = residual32(w[i]!, p32Word[0]!, chosen.residual);
  }
  return { packing: chosen, bytes: packWords(r, 0, difference) };
}

/** The cheapest of the four packings on a block's first 64 values, counting their bits in one pass. */
function choosePacking32(f: Float32Array): FloatPacking {
  const n = Math.min(f.length, 64);
  if (n <= 2) return { predictor: 'linear', residual: 'difference' };
  const w = new Uint32Array(f.buffer, f.byteOffset, n);
  // Per packing (linear difference, previous difference, linear rotated, previous rotated): bits so
  // far, the last group's width and this group's.
  const bits = [32, 32, 32, 32];
  const last = [0, 0, 0, 0];
  const width = [0, 0, 0, 0];
  const widen = (k: number, residual: number): void => {
    const b = residual === 0 ? 0 : 32 - Math.clz32(residual);
    if (b > width[k]!) width[k] = b;
  };
  for (let g = 1; g < n; g += GROUP) {
    const end = Math.min(n, g + GROUP);
    width.fill(0);
    for (let i = g; i < end; i++) {
      predict32(f, i, true, p32);
      const linear = p32Word[0]!;
      const previous = w[i - 1]!;
      const v = w[i]!;
      widen(0, residual32(v, linear, 'difference'));
      widen(1, residual32(v, previous, 'difference'));
      widen(2, residual32(v, linear, 'xor-rotated'));
      widen(3, residual32(v, previous, 'xor-rotated'));
    }
    for (let k = 0; k < 4; k++) {
      const d = width[k]! - last[k]!;
      bits[k]! += (k < 2 ? prefixedWidthBits(d) : plainWidthBits(d)) + width[k]! * (end - g);
      last[k] = width[k]!;
    }
  }
  const best = bits.indexOf(Math.min(...bits));
  return {
    predictor: best % 2 === 0 ? 'linear' : 'previous',
    residual: best < 2 ? 'difference' : 'xor-rotated',
  };
}

/**
 * What packFloat32 packed, into `target` when given; with the linear predictor and a plain XOR, how
 * simrec packed every f32 column before store schema 5 (codec float32).
 */
export function unpackFloat32(
  bytes: Uint8Array,
  n: number,
  packing: FloatPacking,
  target?: Float64Array,
): Float64Array {
  const kind = residualKind(packing.residual);
  const r = unpackWords(bytes, n, kind === DIFFERENCE);
  const f = new Float32Array(n);
  const w = new Uint32Array(f.buffer);
  if (n > 0) w[0] = r[0]!;
  // A loop per residual kind, as unpackFloat64's (there, one loop for all was optimised for the kinds
  // met first and thrown away at another).
  const linear = packing.predictor === 'linear';
  if (kind === DIFFERENCE) undoDifferences32(r, f, w, linear);
  else undoXors32(r, f, w, linear, kind === XOR_ROTATED);
  if (!target) return Float64Array.from(f);
  target.set(f);
  return target;
}

/** float32 words from their zig-zagged differences from their predictions' words. */
function undoDifferences32(r: Uint32Array, f: Float32Array, w: Uint32Array, linear: boolean): void {
  for (let i = 1; i < r.length; i++) {
    predict32(f, i, linear, p32);
    const z = r[i]!;
    w[i] = (p32Word[0]! + ((z >>> 1) ^ -(z & 1))) | 0;
  }
}

/** float32 words from their XOR with their predictions' words, rotated by one bit when `rotated`. */
function undoXors32(
  r: Uint32Array,
  f: Float32Array,
  w: Uint32Array,
  linear: boolean,
  rotated: boolean,
): void {
  const shift = rotated ? 1 : 0;
  const carry = rotated ? -1 : 0;
  for (let i = 1; i < r.length; i++) {
    predict32(f, i, linear, p32);
    const z = r[i]!;
    w[i] = ((z >>> shift) | ((z << 31) & carry)) ^ p32Word[0]!;
  }
}

/** Unsigned 32-bit words in groups at the width of their widest (widths in the prefix code when asked). */
function packWords(r: Uint32Array, reservedWords = 0, prefixedWidths = false): Uint8Array {
  const n = r.length;
  const out = packScratch.reset(n * 43 + 64, reservedWords);
  if (n > 0) out.write(r[0]!, 32);
  let last = 0;
  for (let g = 1; g < n; g += GROUP) {
    const end = Math.min(n, g + GROUP);
    let width = 0;
    for (let i = g; i < end; i++) {
      const s = r[i] === 0 ? 0 : 32 - Math.clz32(r[i]!);
      if (s > width) width = s;
    }
    if (prefixedWidths) writeWidthPrefixed(out, width, last);
    else writeWidth(out, width, last);
    last = width;
    for (let i = g; i < end; i++) out.write(r[i]!, width);
  }
  return out.finish();
}

function unpackWords(bytes: Uint8Array, n: number, prefixedWidths = false): Uint32Array {
  const input = new BitReader(bytes);
  const out = new Uint32Array(n);
  if (n > 0) out[0] = input.read(32);
  let width = 0;
  for (let g = 1; g < n; g += GROUP) {
    const end = Math.min(n, g + GROUP);
    width = prefixedWidths ? readWidthPrefixed(input, width, 32) : readWidth(input, width, 32);
    for (let i = g; i < end; i++) out[i] = input.read(width);
  }
  return out;
}

const TWO_31 = 2 ** 31;

/**
 * Integer values (exact up to 2^53) as zig-zag deltas of the given order (1: steps, counters; 2: times,
 * whose deltas are nearly constant), after the first value in full. Returns null when a delta does not
 * fit 32 bits: the caller then stores the column as floats, which hold any of them.
 */
export function packIntegers(values: Float64Array, order: 1 | 2): Uint8Array | null {
  const n = values.length;
  if (n === 0) return new Uint8Array(0);
  if (residualScratch.length < n - 1)
    residualScratch = new Uint32Array(Math.max(n - 1, 2 * residualScratch.length));
  const r = residualScratch.subarray(0, n - 1);
  let prev = values[0]!;
  let prevDelta = 0;
  for (let i = 1; i < n; i++) {
    const v = values[i]!;
    const delta = v - prev;
    const d = order === 2 && i > 1 ? delta - prevDelta : delta;
    if (!(d > -TWO_31 && d < TWO_31)) return null;
    r[i - 1] = d >= 0 ? 2 * d : -2 * d - 1;
    prev = v;
    prevDelta = delta;
  }
  // The first value's eight bytes go in front of the packed words, in the two words of the same
  // scratch left before them: no array of its own, nor a copy. Valid until the next column is packed.
  const packed = packWords(r, 2);
  const out = new Uint8Array(packed.buffer, packed.byteOffset - 8, 8 + packed.length);
  new DataView(out.buffer, out.byteOffset, 8).setFloat64(0, values[0]!, true);
  return out;
}

/** packIntegers' zig-zag residuals, reused (a column of integers is packed as it is made). */
let residualScratch = new Uint32Array(1024);

export function unpackIntegers(
  bytes: Uint8Array,
  n: number,
  order: 1 | 2,
  target?: Float64Array,
): Float64Array {
  const out = target ?? new Float64Array(n);
  if (n === 0) return out;
  if (bytes.length < 8) throw new Error('integer column shorter than its first value');
  out[0] = new DataView(bytes.buffer, bytes.byteOffset, 8).getFloat64(0, true);
  const r = unpackWords(bytes.subarray(8), n - 1);
  let prev = out[0];
  let prevDelta = 0;
  for (let i = 1; i < n; i++) {
    const z = r[i - 1]!;
    const d = z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    const delta = order === 2 && i > 1 ? prevDelta + d : d;
    const v = prev + delta;
    out[i] = v;
    prev = v;
    prevDelta = delta;
  }
  return out;
}
