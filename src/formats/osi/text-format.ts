import type protobuf from 'protobufjs';
import { invalid } from '../../model/errors.js';

/*
 * Protobuf's text format, as OSI's `.txth` trace files hold it: each message as Google's C++
 * TextFormat prints it (what asam-osi-utilities' TXTH writer and OSI's osi2read.py write), one after
 * another. Fields in the order of their numbers, `name: value` for a value, `name {` ... `}` for a
 * message, two spaces an indent, enums by name, strings and bytes C-escaped.
 */

type Value = unknown;
type MessageObject = Record<string, Value>;

/** A message as the text format prints it (`type.toObject`'s plain object of it). */
export function printTextFormat(type: protobuf.Type, message: MessageObject): string {
  const lines: string[] = [];
  printFields(type, message, '', lines);
  return lines.join('');
}

function printFields(type: protobuf.Type, message: MessageObject, indent: string, out: string[]): void {
  const fields = [...type.fieldsArray].sort((a, b) => a.id - b.id);
  for (const field of fields) {
    const value = message[field.name];
    if (value === undefined || value === null) continue;
    const values = field.repeated ? (value as Value[]) : [value];
    field.resolve();
    for (const v of values) {
      if (field.resolvedType && 'fieldsArray' in field.resolvedType) {
        out.push(`${indent}${field.name} {\n`);
        printFields(field.resolvedType, v as MessageObject, `${indent}  `, out);
        out.push(`${indent}}\n`);
      } else out.push(`${indent}${field.name}: ${scalarText(field, v)}\n`);
    }
  }
}

function scalarText(field: protobuf.Field, value: Value): string {
  switch (field.type) {
    case 'string':
      return `"${cEscape(Buffer.from(value as string, 'utf8'))}"`;
    case 'bytes':
      return `"${cEscape(Buffer.from(value as Uint8Array))}"`;
    case 'bool':
      return value ? 'true' : 'false';
    case 'double':
      return floatText(value as number, (v) => v);
    case 'float':
      return floatText(value as number, Math.fround);
    default:
      // Integers (64-bit ones as their decimal text) and enums by name (a number not in the enum as is).
      return String(value);
  }
}

/** The shortest text that reads back as the same value at the field's precision, as C++ prints it. */
function floatText(value: number, round: (v: number) => number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (Object.is(value, -0)) return '-0';
  for (let digits = 1; digits <= 17; digits++) {
    const text = value.toPrecision(digits);
    if (round(Number(text)) === value) return String(Number(text));
  }
  return String(value);
}

/** Bytes as a C string's contents: printable ASCII as is, the rest as escapes (as protobuf's CEscape). */
function cEscape(bytes: Uint8Array): string {
  let out = '';
  for (const b of bytes) {
    if (b === 0x0a) out += '\\n';
    else if (b === 0x0d) out += '\\r';
    else if (b === 0x09) out += '\\t';
    else if (b === 0x22) out += '\\"';
    else if (b === 0x27) out += "\\'";
    else if (b === 0x5c) out += '\\\\';
    else if (b >= 0x20 && b < 0x7f) out += String.fromCharCode(b);
    else out += `\\${b.toString(8).padStart(3, '0')}`;
  }
  return out;
}

// ---- reading ---------------------------------------------------------------------------------------

interface Token {
  kind: 'word' | 'number' | 'string' | 'symbol';
  text: string;
  /** A string's bytes, escapes read. */
  bytes?: Buffer;
  line: number;
}

/**
 * A message of the text format read into the plain object `type.fromObject` takes. `where` names the
 * message in errors (the file and its first line); every error names the line, the field and what was
 * expected.
 */
export function parseTextFormat(
  type: protobuf.Type,
  text: string,
  where: string,
  firstLine = 1,
): MessageObject {
  const tokens = tokenize(text, where, firstLine);
  let at = 0;
  const fail = (token: Token | undefined, message: string): never => {
    throw invalid(`${where}: line ${token?.line ?? tokens.at(-1)?.line ?? firstLine}: ${message}`);
  };
  const peek = (): Token | undefined => tokens[at];
  const next = (): Token => tokens[at++] ?? fail(undefined, 'the message ends early');
  const symbol = (text: string): boolean => {
    if (peek()?.kind === 'symbol' && peek()!.text === text) {
      at++;
      return true;
    }
    return false;
  };

  const message = (t: protobuf.Type, close: string | null): MessageObject => {
    const object: MessageObject = {};
    for (;;) {
      const token = peek();
      if (token === undefined) {
        if (close !== null) fail(token, `osi3.${t.name} is not closed: expected "${close}"`);
        return object;
      }
      if (close !== null && symbol(close)) return object;
      const name = next();
      if (name.kind !== 'word') fail(name, `expected a field name of osi3.${t.name}, got "${name.text}"`);
      const field = t.fields[name.text];
      if (!field) fail(name, `osi3.${t.name} has no field "${name.text}"`);
      field!.resolve();
      const nested = field!.resolvedType && 'fieldsArray' in field!.resolvedType ? field!.resolvedType : null;
      const values: Value[] = [];
      const hadColon = symbol(':');
      const one = (): Value => {
        if (nested) {
          const open = next();
          if (open.text !== '{' && open.text !== '<')
            fail(open, `${name.text}: expected "{" to open osi3.${nested.name}, got "${open.text}"`);
          return message(nested, open.text === '{' ? '}' : '>');
        }
        return scalar(field!, next());
      };
      if (!nested && !hadColon) fail(name, `${name.text}: expected ":" after the field name`);
      if (symbol('[')) {
        if (!symbol(']'))
          do values.push(one());
          while (symbol(','));
        if (!symbol(']')) fail(peek(), `${name.text}: expected "]" to close the list`);
      } else values.push(one());
      // A field may end with a separator.
      if (!symbol(',')) symbol(';');
      if (field!.repeated) ((object[field!.name] ??= []) as Value[]).push(...values);
      else object[field!.name] = values.at(-1);
    }
  };

  const scalar = (field: protobuf.Field, token: Token): Value => {
    const expected = (what: string): never =>
      fail(token, `${field.name}: expected ${what}, got "${token.text}"`);
    switch (field.type) {
      case 'string':
        return token.kind === 'string' ? token.bytes!.toString('utf8') : expected('a string');
      case 'bytes':
        return token.kind === 'string' ? token.bytes! : expected('bytes as a string');
      case 'bool':
        if (['true', 't', 'True', '1'].includes(token.text)) return true;
        if (['false', 'f', 'False', '0'].includes(token.text)) return false;
        return expected('true or false');
      case 'double':
      case 'float': {
        const text = token.text.replace(/[fF]$/, '');
        const v = /^-?(inf|infinity)$/i.test(text)
          ? text.startsWith('-')
            ? -Infinity
            : Infinity
          : /^-?nan$/i.test(text)
            ? NaN
            : Number(text);
        return token.kind === 'number' || token.kind === 'word'
          ? Number.isNaN(v) && !/nan/i.test(text)
            ? expected('a number')
            : v
          : expected('a number');
      }
      default: {
        const resolved = field.resolvedType;
        if (resolved && 'values' in resolved) {
          if (token.kind === 'word' && token.text in resolved.values) return token.text;
          if (token.kind === 'number' && /^-?\d+$/.test(token.text)) return Number(token.text);
          return expected(
            `a value of ${resolved.name} (${Object.keys(resolved.values).slice(0, 4).join(', ')}...)`,
          );
        }
        if (token.kind !== 'number' || !/^-?(0x[0-9a-f]+|\d+)$/i.test(token.text))
          return expected('an integer');
        const big = BigInt(token.text);
        // 64-bit integers as text, as fromObject takes them; the others as numbers.
        return /64$/.test(field.type) ? big.toString() : Number(big);
      }
    }
  };

  const object = message(type, null);
  if (at < tokens.length) fail(tokens[at], `unexpected "${tokens[at]!.text}"`);
  return object;
}

/** A name or a number, matched where the tokenizer stands (sticky: no copy of the text's rest). */
const WORD = /[-+]?[A-Za-z0-9_.+-]+/y;

function tokenize(text: string, where: string, firstLine: number): Token[] {
  const tokens: Token[] = [];
  let line = firstLine;
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\n') {
      line++;
      i++;
    } else if (c === ' ' || c === '\t' || c === '\r') i++;
    else if (c === '#') while (i < text.length && text[i] !== '\n') i++;
    else if ('{}<>[]:,;'.includes(c)) {
      tokens.push({ kind: 'symbol', text: c, line });
      i++;
    } else if (c === '"' || c === "'") {
      const { bytes, end } = readString(text, i, () => `${where}: line ${line}`);
      const last = tokens.at(-1);
      // Adjacent strings are one, as in C.
      if (last?.kind === 'string' && last.line === line) {
        last.bytes = Buffer.concat([last.bytes!, bytes]);
        last.text += text.slice(i, end);
      } else tokens.push({ kind: 'string', text: text.slice(i, end), bytes, line });
      i = end;
    } else {
      WORD.lastIndex = i;
      const m = WORD.exec(text);
      if (!m) throw invalid(`${where}: line ${line}: unexpected "${c}"`);
      tokens.push({ kind: /^[-+]?[0-9.]/.test(m[0]) ? 'number' : 'word', text: m[0], line });
      i += m[0].length;
    }
  }
  return tokens;
}

const SIMPLE_ESCAPES: Record<string, number> = {
  n: 10,
  r: 13,
  t: 9,
  a: 7,
  b: 8,
  f: 12,
  v: 11,
  '\\': 92,
  "'": 39,
  '"': 34,
  '?': 63,
};

function readString(text: string, start: number, where: () => string): { bytes: Buffer; end: number } {
  const quote = text[start]!;
  const bytes: number[] = [];
  let i = start + 1;
  for (;;) {
    if (i >= text.length || text[i] === '\n') throw invalid(`${where()}: a string is not closed`);
    const c = text[i]!;
    if (c === quote) return { bytes: Buffer.from(bytes), end: i + 1 };
    if (c !== '\\') {
      const code = text.codePointAt(i)!;
      const char = String.fromCodePoint(code);
      bytes.push(...Buffer.from(char, 'utf8'));
      i += char.length;
      continue;
    }
    const e = text[i + 1] ?? '';
    if (e in SIMPLE_ESCAPES) {
      bytes.push(SIMPLE_ESCAPES[e]!);
      i += 2;
    } else if (/[0-7]/.test(e)) {
      const m = /^[0-7]{1,3}/.exec(text.slice(i + 1))![0];
      bytes.push(parseInt(m, 8) & 0xff);
      i += 1 + m.length;
    } else if (e === 'x' || e === 'X') {
      const m = /^[0-9a-fA-F]{1,2}/.exec(text.slice(i + 2))?.[0];
      if (!m) throw invalid(`${where()}: "\\x" without hex digits in a string`);
      bytes.push(parseInt(m, 16));
      i += 2 + m.length;
    } else if (e === 'u' || e === 'U') {
      const n = e === 'u' ? 4 : 8;
      const hex = text.slice(i + 2, i + 2 + n);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== n)
        throw invalid(`${where()}: a bad "\\${e}" escape in a string`);
      bytes.push(...Buffer.from(String.fromCodePoint(parseInt(hex, 16)), 'utf8'));
      i += 2 + n;
    } else throw invalid(`${where()}: an unknown escape "\\${e}" in a string`);
  }
}
