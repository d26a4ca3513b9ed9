import { XMLParser } from 'fast-xml-parser';
import { describeValue, invalid, type SimrecError } from '../../model/errors.js';
import type { RoadPoint } from '../../model/roadnet.js';

/** One element of a parsed document: attributes as written (strings), children in document order. */
export interface XmlElement {
  tag: string;
  attrs: Record<string, string>;
  children: XmlElement[];
  /** Text and CDATA content, concatenated. */
  text: string;
  /** Offset of the element's `<` in the source text, for line numbers in messages. */
  start: number;
}

export interface ReadOptions {
  /** Named in messages; the text itself is given. */
  file?: string;
  /** Turn every warning into an error. */
  strict?: boolean;
}

/** What a reader returns: the model plus the problems it worked around. */
export interface ReadResult<T> {
  network: T;
  warnings: string[];
}

const META = XMLParser.getMetaDataSymbol() as unknown as string;

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: '',
  parseAttributeValue: false,
  parseTagValue: false,
  trimValues: true,
  captureMetaData: true,
});

type RawNode = Record<string, unknown>;

function toElement(node: RawNode): XmlElement | string | undefined {
  for (const key of Object.keys(node)) {
    if (key === ':@') continue;
    const value = node[key];
    if (key === '#text') return String(value);
    if (key.startsWith('?') || key.startsWith('!')) return undefined;
    const children: XmlElement[] = [];
    let text = '';
    for (const child of (value as RawNode[]) ?? []) {
      const converted = toElement(child);
      if (typeof converted === 'string') text += converted;
      else if (converted) children.push(converted);
    }
    const meta = (node as Record<string, { startIndex?: number } | undefined>)[META];
    return {
      tag: key,
      attrs: (node[':@'] as Record<string, string>) ?? {},
      children,
      text,
      start: meta?.startIndex ?? 0,
    };
  }
  return undefined;
}

/**
 * The source file a reader works through: parses it, names elements by tag, id and line in messages,
 * and collects warnings (or throws them, in strict mode).
 */
export class XmlSource {
  readonly file: string;
  readonly text: string;
  readonly warnings: string[] = [];
  private readonly strict: boolean;
  private lineStarts: number[] | undefined;

  constructor(text: string, options: ReadOptions) {
    this.text = text;
    this.file = options.file ?? '(input)';
    this.strict = options.strict ?? false;
  }

  /** The document element; refuses text that is not well-formed XML, naming line and column. */
  parseRoot(expectedTag: string | readonly string[]): XmlElement {
    let nodes: RawNode[];
    try {
      nodes = parser.parse(this.text, true) as RawNode[];
    } catch (error) {
      const message = String((error as Error)?.message ?? error);
      const at = /:(\d+):(\d+)$/.exec(message);
      const detail = at ? `${message.slice(0, at.index)} (line ${at[1]}, column ${at[2]})` : message;
      throw invalid(`${this.file}: malformed XML: ${detail}`);
    }
    const root = nodes.map(toElement).find((e): e is XmlElement => typeof e === 'object');
    const expected = typeof expectedTag === 'string' ? [expectedTag] : expectedTag;
    if (!root || !expected.includes(root.tag))
      throw invalid(
        `${this.file}: expected a ${expected.map((t) => `<${t}>`).join(' or ')} document, found <${root?.tag ?? 'nothing'}>`,
      );
    return root;
  }

  line(element: XmlElement): number {
    if (!this.lineStarts) {
      this.lineStarts = [0];
      for (let i = this.text.indexOf('\n'); i >= 0; i = this.text.indexOf('\n', i + 1))
        this.lineStarts.push(i + 1);
    }
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid]! <= element.start) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  }

  /** `<lane id="a_0"> (line 12)` */
  where(element: XmlElement): string {
    const id = element.attrs.id;
    return `<${element.tag}${id === undefined ? '' : ` id=${JSON.stringify(id)}`}> (line ${this.line(element)})`;
  }

  error(element: XmlElement, attribute: string | undefined, message: string): SimrecError {
    return invalid(
      `${this.file}: ${this.where(element)}${attribute ? ` attribute ${attribute}` : ''}: ${message}`,
    );
  }

  warn(element: XmlElement | undefined, message: string): void {
    const text = `${this.file}: ${element ? `${this.where(element)}: ` : ''}${message}`;
    if (this.strict) throw invalid(text);
    this.warnings.push(text);
  }

  required(element: XmlElement, name: string): string {
    const value = element.attrs[name];
    if (value === undefined) throw this.error(element, name, 'required attribute is missing');
    return value;
  }

  number(element: XmlElement, name: string): number;
  number(element: XmlElement, name: string, fallback: number): number;
  number(element: XmlElement, name: string, fallback: undefined): number | undefined;
  number(element: XmlElement, name: string, ...fallback: [number | undefined] | []): number | undefined {
    const raw = element.attrs[name];
    if (raw === undefined) {
      if (fallback.length === 0) throw this.error(element, name, 'required attribute is missing');
      return fallback[0];
    }
    const value = raw.trim() === '' ? NaN : Number(raw) + 0;
    if (!Number.isFinite(value))
      throw this.error(element, name, `expected a number, got ${describeValue(raw)}`);
    return value;
  }

  /** SUMO's point lists: `x,y x,y` or `x,y,z x,y,z`. */
  points(element: XmlElement, name: string, raw: string): RoadPoint[] {
    const points: RoadPoint[] = [];
    for (const token of raw.trim().split(/\s+/)) {
      if (token === '') continue;
      const parts = token.split(',');
      // `+ 0` turns "-0.00" into 0: JSON has no negative zero, and a stored network must read back equal.
      const coords = parts.map((c) => (c.trim() === '' ? NaN : Number(c) + 0));
      if ((coords.length !== 2 && coords.length !== 3) || !coords.every(Number.isFinite))
        throw this.error(
          element,
          name,
          `expected points "x,y x,y" or "x,y,z ...", got ${describeValue(token)} in ${describeValue(raw)}`,
        );
      points.push(coords as RoadPoint);
    }
    return points;
  }
}

export const childrenNamed = (element: XmlElement, tag: string): XmlElement[] =>
  element.children.filter((c) => c.tag === tag);

export const childNamed = (element: XmlElement, tag: string): XmlElement | undefined =>
  element.children.find((c) => c.tag === tag);
