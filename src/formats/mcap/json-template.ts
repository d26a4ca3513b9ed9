/*
 * JSON messages written as bytes from templates: a message whose shape repeats (an actor's entity in
 * every frame's scene) is written once by JSON.stringify with sentinel numbers where its values go,
 * cut there into pieces of UTF-8, and then written at each use as those pieces with the numbers
 * between them. The bytes are JSON.stringify's own, without making the message's objects or its text
 * again: a town's scene is hundreds of kilobytes a frame, most of it the same from frame to frame.
 */

/**
 * Numbers standing for a template's values while it is made, whose texts are told apart in the JSON:
 * -1.015e-300, -1.025e-300... (a short decimal's text is the number's own, neither is a prefix of another).
 */
export const TEMPLATE_SENTINELS = Array.from(
  { length: 32 },
  (_, i) => `-1.${String(i + 1).padStart(2, '0')}5e-300`,
);
const SENTINELS = TEMPLATE_SENTINELS.map(Number);
/** Other numbers, to check a template with: a sentinel's text inside a name is no place for a value. */
const CHECKS = Array.from({ length: 32 }, (_, i) => Number(`-2.${String(i + 1).padStart(2, '0')}5e-300`));
const encoder = new TextEncoder();

/**
 * A growing buffer of JSON bytes, written over by each message: a writer that hands the bytes on before
 * it writes the next message (McapWriter copies each into its chunk) touches no new memory a message.
 */
export class JsonBytes {
  private buffer = new Uint8Array(1 << 16);
  length = 0;

  reset(): void {
    this.length = 0;
  }

  private room(n: number): void {
    if (this.length + n <= this.buffer.length) return;
    const bigger = new Uint8Array(Math.max(this.length + n, this.buffer.length * 2));
    bigger.set(this.buffer.subarray(0, this.length));
    this.buffer = bigger;
  }

  bytes(piece: Uint8Array): void {
    this.room(piece.length);
    // A loop for the short pieces a message is made of: TypedArray.set costs more than it copies there.
    if (piece.length < 64) for (let i = 0; i < piece.length; i++) this.buffer[this.length++] = piece[i]!;
    else {
      this.buffer.set(piece, this.length);
      this.length += piece.length;
    }
  }

  /** Text of ASCII characters only (JSON's punctuation, a number's text). */
  ascii(text: string): void {
    this.room(text.length);
    for (let i = 0; i < text.length; i++) this.buffer[this.length++] = text.charCodeAt(i);
  }

  /**
   * Characters [from, to) of an ASCII text: a number's text within JSON.stringify's of an array of
   * them, which writes numbers without a string each as `String(n)` makes (several times faster for a
   * row of doubles). Numbers and null hold no comma: see numberEnd.
   */
  asciiSlice(text: string, from: number, to: number): void {
    this.room(to - from);
    for (let i = from; i < to; i++) this.buffer[this.length++] = text.charCodeAt(i);
  }

  /** The bytes written since the last reset, valid until the next write. */
  view(): Uint8Array {
    return this.buffer.subarray(0, this.length);
  }
}

/** Where the number's text that begins at `from` ends, in JSON.stringify's text of an array of numbers. */
export function numberEnd(text: string, from: number): number {
  const comma = text.indexOf(',', from);
  return comma < 0 ? text.length - 1 : comma;
}

/** A message's JSON cut where its values go: pieces[0], value, pieces[1], value, ... pieces[n]. */
export class JsonTemplate {
  private readonly pieces: Uint8Array[];
  /** Which of the values goes in each gap between two pieces (a value may appear more than once). */
  private readonly gaps: number[];

  private readonly count: number;
  /** Where each value's text begins and ends in the text of all of them (made anew at each write). */
  private readonly bounds: Int32Array;

  private constructor(pieces: Uint8Array[], gaps: number[], count: number) {
    this.pieces = pieces;
    this.gaps = gaps;
    this.count = count;
    this.bounds = new Int32Array(2 * count);
  }

  /**
   * The template of the message `build` makes from `count` numbers, each placed as it is (not computed
   * with), or undefined when the cut does not give the message back (a sentinel's text inside one of
   * its names): the caller then writes that message with JSON.stringify.
   */
  static of(count: number, build: (values: readonly number[]) => unknown): JsonTemplate | undefined {
    if (count > SENTINELS.length) throw new RangeError(`a JSON template holds ${SENTINELS.length} values`);
    const text = JSON.stringify(build(SENTINELS.slice(0, count)));
    const pieces: Uint8Array[] = [];
    const gaps: number[] = [];
    let from = 0;
    for (;;) {
      let at = -1;
      let which = -1;
      for (let v = 0; v < count; v++) {
        const found = text.indexOf(TEMPLATE_SENTINELS[v]!, from);
        if (found >= 0 && (at < 0 || found < at)) [at, which] = [found, v];
      }
      if (at < 0) break;
      pieces.push(encoder.encode(text.slice(from, at)));
      gaps.push(which);
      from = at + TEMPLATE_SENTINELS[which]!.length;
    }
    pieces.push(encoder.encode(text.slice(from)));
    const template = new JsonTemplate(pieces, gaps, count);
    // Other values must give the message made with them: a sentinel's text inside a name would be
    // written over, a value left out would not change it.
    const check = new JsonBytes();
    template.write(check, CHECKS.slice(0, count));
    const checked = new TextDecoder().decode(check.view()) === JSON.stringify(build(CHECKS.slice(0, count)));
    return checked && new Set(gaps).size === count ? template : undefined;
  }

  /** Writes the message of `values` (as many as the template holds) into `out`. */
  write(out: JsonBytes, values: readonly number[]): void {
    const { pieces, gaps, bounds } = this;
    // Each value's text within that of all of them, which JSON.stringify writes at once.
    const text = JSON.stringify(values);
    for (let v = 0, from = 1; v < this.count; v++) {
      const to = numberEnd(text, from);
      bounds[2 * v] = from;
      bounds[2 * v + 1] = to;
      from = to + 1;
    }
    for (let i = 0; i < gaps.length; i++) {
      out.bytes(pieces[i]!);
      out.asciiSlice(text, bounds[2 * gaps[i]!]!, bounds[2 * gaps[i]! + 1]!);
    }
    out.bytes(pieces[gaps.length]!);
  }
}
