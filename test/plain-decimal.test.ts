/**
 * plainDecimal, the FCD reader's number parser: the very double `+text` gives, for every text (the
 * fast path for SUMO's plain decimals, `+text` for anything else).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { plainDecimal } from '../src/formats/common/plain-decimal.js';

const same = (text: string): boolean => Object.is(plainDecimal(text), +text);

describe('plainDecimal', () => {
  it('gives what +text gives at the edges', () => {
    for (const text of [
      '0',
      '-0',
      '0.0',
      '-0.0',
      '.5',
      '-.5',
      '5.',
      '.',
      '-',
      '',
      '007.50',
      '1e5',
      '1.5E-3',
      ' 1.5',
      '1.5 ',
      '+1.5',
      '--1',
      '1.2.3',
      '0x10',
      'Infinity',
      'NaN',
      '123456789012345',
      '1234567890123456',
      '12345678901234567',
      '0.123456789012345',
      '0.1234567890123456',
      '-99999.999999999',
      '9007199254740993',
      '0.1',
      '0.3',
      '2.675',
      '1.005',
    ])
      assert.ok(same(text), `${JSON.stringify(text)}: ${plainDecimal(text)} against ${+text}`);
  });

  it('gives what +text gives for decimals as SUMO writes them, and for any text', () => {
    const decimalText = fc
      .tuple(
        fc.boolean(),
        fc.stringMatching(/^[0-9]{1,12}$/),
        fc.option(fc.stringMatching(/^[0-9]{0,9}$/), { nil: undefined }),
      )
      .map(
        ([negative, whole, fraction]) =>
          `${negative ? '-' : ''}${whole}${fraction === undefined ? '' : `.${fraction}`}`,
      );
    fc.assert(fc.property(decimalText, same), { numRuns: 20_000 });
    const fixed = fc
      .tuple(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.integer({ min: 0, max: 9 }))
      .map(([x, digits]) => x.toFixed(digits));
    fc.assert(fc.property(fixed, same), { numRuns: 20_000 });
    fc.assert(fc.property(fc.string({ maxLength: 20 }), same), { numRuns: 20_000 });
  });
});
