/** Powers of ten a decimal of up to 15 digits is divided by: each exact as a double. */
const TENS = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * `+text`, faster for the plain decimals simulators write as text (SUMO's FCD: `-12.34`): their digits
 * read as an integer (exact up to 15 digits) divided by an exact power of ten is one correctly rounded
 * operation, so the result is the double `+text` gives. Anything else (exponents, spaces, a sign other
 * than `-`, more digits) goes to `+text`.
 */
export function plainDecimal(text: string): number {
  const length = text.length;
  if (length > 17) return +text;
  const negative = text.charCodeAt(0) === 45;
  let digits = 0;
  let count = 0;
  let point = -1;
  for (let i = negative ? 1 : 0; i < length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      digits = digits * 10 + (c - 48);
      count++;
    } else if (c === 46 && point < 0) point = i;
    else return +text;
  }
  // No digit, a point with no digit after it, or more digits than a double holds exactly: `+text` says.
  if (count === 0 || count > 15 || point === length - 1) return +text;
  const value = point < 0 ? digits : digits / TENS[length - 1 - point]!;
  return negative ? -value : value;
}
