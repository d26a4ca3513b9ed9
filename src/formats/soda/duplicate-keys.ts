import { BSON, Double, Int32, Long } from 'mongodb';
import { invalid } from '../../model/errors.js';

/**
 * SODA.Sim's OpenDrive writer appends `type` and `points` to one road document again and again, so a
 * road's document holds the same two keys many times. Every JavaScript object (and so js-bson's and
 * EJSON's decoders) keeps only the last pair; the others are recovered here from the bytes or the
 * text themselves. A road is kept as its key/value pairs in order.
 */
export type KeyValuePairs = [string, unknown][];

/** Where the lane marks sit in a document (`actors.2.description`) -> its roads, every pair kept. */
export type LaneMarkSources = Map<string, KeyValuePairs[]>;

export const LANE_MARKS_KEY = 'road_lanes_marks';

const utf8 = new TextDecoder('utf-8', { fatal: true });
const DEEPEST = 6;

// BSON element types (bsonspec.org) the walk needs to tell apart.
const DOUBLE = 1;
const STRING = 2;
const DOCUMENT = 3;
const ARRAY = 4;
const BOOLEAN = 8;
const NULL = 10;
const INT32 = 16;
const INT64 = 18;

type Element = [type: number, nameOffset: number, nameLength: number, offset: number, length: number];

const elementsOf = (bytes: Uint8Array, start: number): Element[] =>
  [...BSON.onDemand.parseToElements(bytes, start)] as Element[];

function decodeElement(bytes: Uint8Array, [type, , , offset, length]: Element, where: string): unknown {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (type) {
    case DOUBLE:
      return new Double(view.getFloat64(offset, true));
    case STRING:
      return utf8.decode(bytes.subarray(offset + 4, offset + length - 1));
    case DOCUMENT:
    case ARRAY: {
      const value = BSON.deserialize(bytes.subarray(offset, offset + length), { promoteValues: false });
      return type === ARRAY ? Object.values(value) : value;
    }
    case BOOLEAN:
      return bytes[offset] === 1;
    case NULL:
      return null;
    case INT32:
      return new Int32(view.getInt32(offset, true));
    case INT64:
      return new Long(view.getInt32(offset, true), view.getInt32(offset + 4, true));
    default:
      throw invalid(`${where}: unexpected BSON element type ${type} in a road's lane marks`);
  }
}

/** Every `road_lanes_marks` array in a raw BSON document, with each road's pairs as written. */
export function laneMarksFromBson(bytes: Uint8Array, where: string): LaneMarkSources {
  const found: LaneMarkSources = new Map();
  const walk = (start: number, path: string, depth: number): void => {
    for (const element of elementsOf(bytes, start)) {
      const [type, nameOffset, nameLength, offset] = element;
      if (type !== DOCUMENT && type !== ARRAY) continue;
      const name = utf8.decode(bytes.subarray(nameOffset, nameOffset + nameLength));
      const at = path === '' ? name : `${path}.${name}`;
      if (name === LANE_MARKS_KEY && type === ARRAY) {
        found.set(
          path,
          elementsOf(bytes, offset).map((road, r) => {
            if (road[0] !== DOCUMENT) throw invalid(`${where}: ${at}[${r}]: expected a document per road`);
            return elementsOf(bytes, road[3]).map((pair): [string, unknown] => {
              const key = utf8.decode(bytes.subarray(pair[1], pair[1] + pair[2]));
              return [key, decodeElement(bytes, pair, `${where}: ${at}[${r}].${key}`)];
            });
          }),
        );
      } else if (depth < DEEPEST) walk(offset, at, depth + 1);
    }
  };
  walk(0, '', 0);
  return found;
}

/** An object of a JSON text with its pairs in order, duplicates included. */
class PairsObject {
  readonly pairs: KeyValuePairs = [];
}

/**
 * A JSON parser that keeps duplicate keys (JSON.parse keeps the last). It runs only on the lines of
 * an export that hold lane marks, so it favours being short over being fast.
 */
export function parseJsonKeepingPairs(text: string, where: string): unknown {
  let i = 0;
  const fail = (expected: string): never => {
    throw invalid(`${where}: column ${i + 1}: expected ${expected}`);
  };
  const space = (): void => {
    while (i < text.length && ' \t\r\n'.includes(text[i]!)) i++;
  };
  const value = (): unknown => {
    space();
    const c = text[i];
    if (c === '{') {
      i++;
      const object = new PairsObject();
      space();
      if (text[i] === '}') return (i++, object);
      for (;;) {
        space();
        if (text[i] !== '"') fail('a key');
        const key = str();
        space();
        if (text[i++] !== ':') fail("':'");
        object.pairs.push([key, value()]);
        space();
        if (text[i] === ',') i++;
        else if (text[i] === '}') return (i++, object);
        else fail("',' or '}'");
      }
    }
    if (c === '[') {
      i++;
      const items: unknown[] = [];
      space();
      if (text[i] === ']') return (i++, items);
      for (;;) {
        items.push(value());
        space();
        if (text[i] === ',') i++;
        else if (text[i] === ']') return (i++, items);
        else fail("',' or ']'");
      }
    }
    if (c === '"') return str();
    const literal = /^(?:true|false|null|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 40));
    if (!literal) return fail('a JSON value');
    i += literal[0].length;
    return JSON.parse(literal[0]) as unknown;
  };
  const str = (): string => {
    const match = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(i));
    if (!match) return fail('a string');
    i += match[0].length;
    return JSON.parse(match[0]) as string;
  };
  const result = value();
  space();
  if (i !== text.length) fail('the end of the document');
  return result;
}

/** Plain (last-pair-wins) JSON of a parsed value, as EJSON's decoder expects it. */
function lastWins(value: unknown): unknown {
  if (value instanceof PairsObject) return Object.fromEntries(value.pairs.map(([k, v]) => [k, lastWins(v)]));
  if (Array.isArray(value)) return value.map(lastWins);
  return value;
}

/** Every `road_lanes_marks` array in a line of canonical Extended JSON, each road's pairs kept. */
export function laneMarksFromExtendedJson(line: string, where: string): LaneMarkSources {
  const found: LaneMarkSources = new Map();
  const walk = (value: unknown, path: string, depth: number): void => {
    if (depth > DEEPEST) return;
    const entries: [string, unknown][] =
      value instanceof PairsObject
        ? value.pairs
        : Array.isArray(value)
          ? value.map((v, k) => [String(k), v])
          : [];
    for (const [key, item] of entries) {
      const at = path === '' ? key : `${path}.${key}`;
      if (key === LANE_MARKS_KEY && Array.isArray(item) && value instanceof PairsObject)
        found.set(
          path,
          item.map((road, r) => {
            if (!(road instanceof PairsObject))
              throw invalid(`${where}: ${at}[${r}]: expected a document per road`);
            return road.pairs.map(([k, v]): [string, unknown] => [
              k,
              BSON.EJSON.deserialize(lastWins(v) as object, { relaxed: false }),
            ]);
          }),
        );
      else walk(item, at, depth + 1);
    }
  };
  walk(parseJsonKeepingPairs(line, where), '', 0);
  return found;
}
