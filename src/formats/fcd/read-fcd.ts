import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { createGunzip } from 'node:zlib';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { describeValue, invalid, notFound, SimrecError } from '../../model/errors.js';
import type { JsonObject } from '../../model/json.js';
import type { RoadNetwork } from '../../model/roadnet.js';
import type { ActorDecl, RunInfo } from '../../model/run.js';
import type { RunSink, RunTarget } from '../../model/run-ports.js';
import { STATE_STREAM } from '../../model/standard-streams.js';
import { degToRad, sumoAngleToYaw, sumoFrontToCentre } from '../../model/units.js';
import { cartesianLocator, utmProjectionAt } from '../../roadnet/geo-location.js';
import { readRoadNetworkFile } from '../../roadnet/read-roadnet.js';
import { keepRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import {
  readSumoTypeFiles,
  type SumoTypes,
  type VehicleType,
} from '../../roadnet/sumo/sumo-vehicle-types.js';
import { FCD_ELEMENTS, FCD_STATE_FIELDS, fcdAttribute, type FcdElement } from './fcd-attributes.js';
import { headerMicros, parseFcdHeader, type FcdHeader } from './fcd-header.js';
import { plainDecimal } from '../common/plain-decimal.js';

export interface FcdImportOptions {
  warn?: (message: string) => void;
  /** Bytes of the file read so far (compressed, for a .gz), of its size. */
  onProgress?: (done: number, total: number) => void;
  signal?: AbortSignal;
  /** The SUMO network the run drove on: kept with the run, and the projection of geo coordinates. */
  net?: string;
  /** Route or additional files with the vehicle types: their lengths place positions at centres. */
  routes?: readonly string[];
}

export interface FcdImportResult {
  run: RunInfo;
  timesteps: number;
  /** Vehicle-, person- and container-steps read. */
  states: number;
  actors: number;
  /** Where positions are: every actor's centre, every front bumper, or some of each. */
  positions: 'centre' | 'front bumper' | 'mixed';
}

/** SUMO's precision when its configuration does not say (`--precision`, `--precision.geo`). */
export const SUMO_PRECISION = 2;
export const SUMO_GEO_PRECISION = 6;

/** Bytes read at a time; a timestep's rows are appended as it closes, so memory holds one of each. */
const READ_BYTES = 1 << 20;
/** States appended before waiting for them to be durable: the recorder commits in the background. */
const DURABLE_EVERY = 100_000;

const KIND: Record<FcdElement, string> = { vehicle: 'vehicle', person: 'pedestrian', container: 'other' };

/** A SUMO time: seconds, or H:M:S with --human-readable-time. */
function sumoSeconds(text: string): number {
  if (!text.includes(':')) return text.trim() === '' ? NaN : Number(text);
  const parts = text.split(':').map(Number);
  return parts.length > 4 ? NaN : parts.reduce((sum, p) => sum * 60 + p, 0);
}

/** A column of a timestep: an attribute's values, under the field it becomes. */
interface Slot {
  field: string;
  numbers: Float64Array | undefined;
  strings: (string | undefined)[] | undefined;
}

/**
 * A timestep's rows as columns, the arrays kept from timestep to timestep (each timestep is copied
 * out whole): an FCD file of gigabytes goes through a handful of arrays, no object per vehicle-step.
 */
class TimestepColumns {
  ids: string[] = [];
  elements: FcdElement[] = [];
  private readonly slots: Slot[] = [];
  /** By attribute name (each attribute is one field). */
  private readonly byAttribute = new Map<string, Slot>();
  private capacity = 64;
  private readonly geo: () => boolean;

  constructor(geo: () => boolean) {
    this.geo = geo;
  }

  get rows(): number {
    return this.ids.length;
  }

  clear(): void {
    this.ids.length = 0;
    this.elements.length = 0;
  }

  /** A new row: every column absent in it until set. */
  add(id: string, element: FcdElement): number {
    const row = this.ids.push(id) - 1;
    this.elements.push(element);
    if (row >= this.capacity) {
      this.capacity *= 2;
      for (const slot of this.slots)
        if (slot.numbers) {
          const grown = new Float64Array(this.capacity);
          grown.set(slot.numbers);
          slot.numbers = grown;
        }
    }
    for (const slot of this.slots)
      if (slot.numbers) slot.numbers[row] = NaN;
      else slot.strings![row] = undefined;
    return row;
  }

  /** The column of an attribute, made on its first appearance. */
  slot(attribute: string): Slot {
    let slot = this.byAttribute.get(attribute);
    if (!slot) {
      const { field, numeric } = fcdAttribute(attribute, this.geo());
      slot = {
        field,
        numbers: numeric ? new Float64Array(this.capacity).fill(NaN) : undefined,
        strings: numeric ? undefined : new Array<string | undefined>(this.rows).fill(undefined),
      };
      this.slots.push(slot);
      this.byAttribute.set(attribute, slot);
    }
    return slot;
  }

  /** The timestep's rows, copied (the arrays are filled again by the next): only columns with a value. */
  snapshot(time: number, timeText: string, line: number): Timestep {
    const n = this.rows;
    const numbers: Record<string, Float64Array> = {};
    const strings: Record<string, (string | undefined)[]> = {};
    for (const slot of this.slots) {
      if (slot.numbers) {
        const values = slot.numbers.subarray(0, n);
        if (values.some((v) => !Number.isNaN(v))) numbers[slot.field] = values.slice();
      } else {
        const values = slot.strings!;
        values.length = n;
        if (values.some((v) => v !== undefined)) strings[slot.field] = values.slice();
      }
    }
    return { time, timeText, line, ids: this.ids.slice(), elements: this.elements.slice(), numbers, strings };
  }
}

/** One timestep as read: its rows' columns, SUMO's units still. */
interface Timestep {
  time: number;
  timeText: string;
  /** Where it begins in the file. */
  line: number;
  ids: string[];
  elements: FcdElement[];
  numbers: Record<string, Float64Array>;
  strings: Record<string, (string | undefined)[]>;
}

/** Where positions end up, per actor, and why. */
interface Placement {
  /** Half the length to go back from the front bumper; NaN when the type is unknown (kept at the front). */
  length: number;
  type: VehicleType | undefined;
}

/**
 * Reads SUMO's floating car data (`sumo --fcd-output`, plain or gzip-compressed) as a run, streamed: a
 * file of gigabytes goes through in bounded memory, a timestep at a time. Every vehicle, person and
 * container is an actor with a `state` stream holding every attribute SUMO wrote; an actor missing from
 * a timestep has left at it (and comes back when it reappears). With `routes`, each actor's type gives
 * its size, and its position moves from SUMO's front bumper to its centre as simrec keeps it; without,
 * positions stay at the front bumper, as the run's metadata and a warning say. Geo coordinates
 * (`--fcd-output.geo`) are kept and projected to x and y with the network's projection (else the UTM
 * zone they lie in).
 */
export async function importFcd(
  into: RunTarget,
  file: string,
  options: FcdImportOptions = {},
): Promise<FcdImportResult> {
  const warn = options.warn ?? (() => {});
  const size = await stat(file).then(
    (s) => {
      if (!s.isFile()) throw invalid(`${file}: not a file`);
      return s.size;
    },
    (error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOENT' ? notFound(`${file}: no such file`) : error;
    },
  );
  const network = options.net ? (await readRoadNetworkFile(options.net)).network : undefined;
  const types = options.routes?.length ? await readSumoTypeFiles(options.routes) : undefined;
  const gzip = await isGzip(file);

  const reader = new FcdReader({ into, file, network, types, warn, gzip, inputs: options });
  const input = createReadStream(file, { highWaterMark: READ_BYTES });
  let compressed = 0;
  input.on('data', (chunk) => (compressed += chunk.length));
  const text = gzip ? input.pipe(createGunzip({ chunkSize: READ_BYTES })) : input;
  if (gzip) input.on('error', (error) => text.destroy(error));
  text.setEncoding('utf8');
  try {
    for await (const chunk of text as AsyncIterable<string>) {
      options.signal?.throwIfAborted();
      reader.write(chunk);
      await reader.settle(false);
      options.onProgress?.(compressed, size);
    }
    reader.close();
    await reader.settle(true);
  } catch (error) {
    input.destroy();
    await reader.abandon();
    if (error instanceof SimrecError) throw error;
    const err = error as NodeJS.ErrnoException;
    if (gzip && err.code?.startsWith('Z_'))
      throw invalid(
        `${file}: the gzip stream is damaged or cut short at byte ${compressed} of ${size} (${err.message}); nothing was imported`,
      );
    throw error;
  }
  return reader.finish();
}

async function isGzip(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/**
 * The parse, timestep by timestep, into one run. The parser's events come synchronously within each
 * chunk written to it; each closed timestep is queued (copied), and the queue is appended to the run
 * after the chunk, so the queue holds one chunk's timesteps at most.
 */
class FcdReader {
  private readonly parser: SaxesParser;
  private readonly columns = new TimestepColumns(() => this.geo);
  private readonly queue: Timestep[] = [];
  private header: FcdHeader | undefined;
  private geo = false;
  private root: string | undefined;
  private depth = 0;
  private inTimestep = false;
  private time = NaN;
  private timeText = '';
  private timestepLine = 0;
  private lastTime = -Infinity;
  private lastTimeText = '';
  private timesteps = 0;
  private states = 0;
  private sink: RunSink | undefined;
  private begin = 0;
  private lastT = 0;
  /** Actors declared, with their element and placement. */
  private readonly actors = new Map<string, { element: FcdElement; placement: Placement }>();
  /** The rows of the previous timestep, to find who left. */
  private previous: string[] = [];
  /** By actor, the last timestep (its number) it was in, while parsing and while appending. */
  private readonly seen = new Map<string, { id: string; parsedAt: number; appendedAt: number }>();
  /** Promises of the recorder not yet awaited (each with a catch attached, awaited in turn). */
  private pending: Promise<unknown>[] = [];
  /** The batch before them, being committed. */
  private committing: Promise<unknown>[] = [];
  private sinceDurable = 0;
  /** The attributes of the tag being read (the first `attributeCount`), in the file's order. */
  private readonly names: string[] = [];
  private readonly values: string[] = [];
  private attributeCount = 0;
  private readonly unknownTags = new Set<string>();
  private readonly unknownTypes = new Set<string>();
  private centred = 0;
  private atFront = 0;
  private project: ((lon: number, lat: number) => { x: number; y: number }) | undefined;
  private projection: string | undefined;

  private readonly into: RunTarget;
  private readonly file: string;
  private readonly network: RoadNetwork | undefined;
  private readonly types: SumoTypes | undefined;
  private readonly warn: (message: string) => void;
  private readonly gzip: boolean;
  private readonly inputs: { net?: string; routes?: readonly string[] };

  constructor(init: {
    into: RunTarget;
    file: string;
    network: RoadNetwork | undefined;
    types: SumoTypes | undefined;
    warn: (message: string) => void;
    gzip: boolean;
    inputs: { net?: string; routes?: readonly string[] };
  }) {
    ({
      into: this.into,
      file: this.file,
      network: this.network,
      types: this.types,
      warn: this.warn,
      gzip: this.gzip,
      inputs: this.inputs,
    } = init);
    const file = this.file;
    this.parser = new SaxesParser({ fileName: file, position: true });
    this.parser.on('comment', (text) => {
      if (this.root === undefined && !this.header) this.header = parseFcdHeader(text);
    });
    // Each attribute as the parser reads it, in order: what a row reads, since walking the tag's
    // attributes object (made without a prototype, so a dictionary to V8) costs more per attribute.
    this.parser.on('attribute', (attribute) => {
      this.names[this.attributeCount] = attribute.name;
      this.values[this.attributeCount++] = attribute.value;
    });
    this.parser.on('opentag', (tag) => {
      this.open(tag);
      this.attributeCount = 0;
    });
    this.parser.on('closetag', (tag) => this.closeTag(tag.name));
    this.parser.on('error', (error) => {
      // saxes names file, line and column: an unclosed <timestep> is the close tag found in its place.
      throw invalid(`${error.message.replace(/\.$/, '')}: not well-formed XML; nothing was imported`);
    });
  }

  write(chunk: string): void {
    this.parser.write(chunk);
  }

  close(): void {
    this.parser.close();
    if (this.root === undefined) throw invalid(`${this.file}: no XML element: not an FCD file`);
  }

  private where(line = this.parser.line): string {
    return `${this.file}:${line}`;
  }

  private open(tag: SaxesTagPlain): void {
    const depth = ++this.depth;
    if (depth === 1) {
      this.root = tag.name;
      if (tag.name !== 'fcd-export')
        throw invalid(
          `${this.where()}: the document is <${tag.name}>; SUMO's FCD output is <fcd-export> (sumo --fcd-output)`,
        );
      this.geo = this.header?.options['fcd-output.geo'] === 'true';
      return;
    }
    if (depth === 2 && tag.name === 'timestep') {
      const text = tag.attributes.time;
      const time = text === undefined ? NaN : sumoSeconds(text);
      if (!Number.isFinite(time) || time < 0)
        throw invalid(
          `${this.where()}: <timestep> attribute time: expected seconds >= 0, got ${describeValue(text)}`,
        );
      if (!(time > this.lastTime))
        throw invalid(
          `${this.where()}: <timestep time="${text}"> goes back: the timestep before it was at ${this.lastTimeText} s; SUMO's timesteps only go forward`,
        );
      this.inTimestep = true;
      this.time = time;
      this.timeText = text!;
      this.timestepLine = this.parser.line;
      this.lastTime = time;
      this.lastTimeText = text!;
      this.columns.clear();
      if (tag.isSelfClosing) this.endTimestep();
      return;
    }
    if (depth === 3 && this.inTimestep && (FCD_ELEMENTS as readonly string[]).includes(tag.name)) {
      this.row(tag.name as FcdElement, tag.attributes);
      return;
    }
    if (!this.unknownTags.has(tag.name)) {
      this.unknownTags.add(tag.name);
      this.warn(`${this.where()}: <${tag.name}> is not part of SUMO's FCD output here; left out`);
    }
  }

  private closeTag(name: string): void {
    if (this.depth-- === 2 && name === 'timestep' && this.inTimestep) this.endTimestep();
  }

  private row(element: FcdElement, attributes: Record<string, string>): void {
    const raw = attributes.id;
    if (raw === undefined || raw === '')
      throw invalid(`${this.where()}: <${element}> without an id (SUMO writes one for every ${element})`);
    let seen = this.seen.get(raw);
    if (!seen) {
      const id = ownString(raw);
      this.seen.set(id, (seen = { id, parsedAt: -1, appendedAt: -1 }));
    } else if (seen.parsedAt === this.timesteps)
      throw invalid(
        `${this.where()}: <${element} id=${JSON.stringify(raw)}> twice in the timestep at ${this.timeText} s`,
      );
    seen.parsedAt = this.timesteps;
    const columns = this.columns;
    const row = columns.add(seen.id, element);
    const { names, values } = this;
    for (let a = 0; a < this.attributeCount; a++) {
      const name = names[a]!;
      if (name === 'id') continue;
      const slot = columns.slot(name);
      const text = values[a]!;
      if (slot.numbers) {
        const value = text === '' ? NaN : plainDecimal(text);
        if (!Number.isFinite(value))
          throw invalid(
            `${this.where()}: <${element} id=${JSON.stringify(raw)}> attribute ${name}: expected a number, got ${describeValue(text)}`,
          );
        slot.numbers[row] = value;
      } else slot.strings![row] = text;
    }
  }

  private endTimestep(): void {
    this.inTimestep = false;
    this.queue.push(this.columns.snapshot(this.time, this.timeText, this.timestepLine));
    this.timesteps++;
  }

  /**
   * Appends the timesteps parsed so far, and waits for what the recorder was given: all of it at the
   * end; else, once enough states wait, for the batch before them (one batch is committed in the
   * background while the next is parsed).
   */
  async settle(all: boolean): Promise<void> {
    for (const timestep of this.queue.splice(0)) await this.append(timestep);
    if (!all && this.sinceDurable < DURABLE_EVERY) return;
    const waiting = all ? [...this.committing, ...this.pending] : this.committing;
    this.committing = all ? [] : this.pending;
    this.pending = [];
    this.sinceDurable = 0;
    for (const p of waiting) await p;
  }

  /** The run, begun with the first timestep (geo coordinates without a network need its first point). */
  private async begun(first: Timestep | undefined): Promise<RunSink> {
    if (this.sink) return this.sink;
    if (this.geo) {
      this.project = cartesianLocator(this.network?.geoReference);
      this.projection = this.network?.geoReference?.projection;
      const lon = first?.numbers.lon?.[0];
      const lat = first?.numbers.lat?.[0];
      if (!this.project && lon !== undefined && lat !== undefined) {
        this.projection = utmProjectionAt(lon, lat);
        this.project = cartesianLocator({ projection: this.projection });
        this.warn(
          `${this.file}: geo coordinates (--fcd-output.geo) and no --net with a projection: x and y are metres in ${this.projection}`,
        );
      }
    }
    this.begin = headerMicros(this.header?.generated) ?? 0;
    const version = /Version\s+(\S+)/.exec(this.header?.generator ?? '')?.[1];
    const options = this.header?.options ?? {};
    const positions = this.types ? 'centre' : 'front bumper';
    if (!this.types)
      this.warn(
        `${this.file}: positions are SUMO's front bumpers (no --routes with the vehicle types): simrec keeps centres, so give the route files to place them there`,
      );
    const metadata: JsonObject = {
      source: 'sumo-fcd',
      file: this.file,
      compressed: this.gzip,
      // Of every actor whose type the route files give; the others say `position: front bumper`.
      positions,
      geo: this.geo,
      precision: Number(options.precision ?? SUMO_PRECISION),
      geoPrecision: Number(options['precision.geo'] ?? SUMO_GEO_PRECISION),
      ...(this.projection ? { projection: this.projection } : {}),
      ...(this.inputs.net ? { net: this.inputs.net } : {}),
      ...(this.inputs.routes?.length ? { routes: [...this.inputs.routes] } : {}),
      ...(this.header
        ? {
            sumo: {
              ...(this.header.generated ? { generated: this.header.generated } : {}),
              ...(this.header.generator ? { generator: this.header.generator } : {}),
              options: this.header.options,
            },
          }
        : {}),
    };
    this.sink = await this.into.beginRun({
      simulator: { name: 'sumo', ...(version ? { version } : {}) },
      description: `SUMO FCD ${basename(this.file)}`,
      begin: this.begin,
      metadata,
    });
    return this.sink;
  }

  /** Converts a timestep's rows to simrec's fields and hands them over as one frame. */
  private async append(c: Timestep): Promise<void> {
    const sink = await this.begun(c);
    const t = this.begin + Math.round(c.time * 1e6);
    const step = this.stepCount++;
    const n = c.ids.length;
    if (n > 0) {
      if (this.geo) this.fromGeo(c);
      for (const [field, attribute] of [
        ['x', this.geo ? 'x (longitude)' : 'x'],
        ['y', this.geo ? 'y (latitude)' : 'y'],
        ['yaw', 'angle'],
      ] as const) {
        const column = c.numbers[field];
        for (let i = 0; i < n; i++)
          if (column === undefined || Number.isNaN(column[i]!))
            throw invalid(
              `${this.where(c.line)}: <timestep time="${c.timeText}">: <${c.elements[i]} id=${JSON.stringify(c.ids[i])}> has no ${attribute}; simrec needs every position and heading`,
            );
      }
      const x = c.numbers.x!;
      const y = c.numbers.y!;
      const yaw = c.numbers.yaw!;
      const pitch = c.numbers.pitch;
      const lanePos = c.numbers.lanePos;
      const type = c.strings.type;
      const fresh: ActorDecl[] = [];
      for (let i = 0; i < n; i++) {
        const id = c.ids[i]!;
        let actor = this.actors.get(id);
        if (!actor) {
          const placement = this.placementOf(id, c.elements[i]!, type?.[i]);
          actor = { element: c.elements[i]!, placement };
          this.actors.set(id, actor);
          fresh.push(this.actorDecl(id, actor.element, placement, type?.[i]));
        } else if (actor.element !== c.elements[i])
          throw invalid(
            `${this.where(c.line)}: <timestep time="${c.timeText}">: ${JSON.stringify(id)} is a ${c.elements[i]} here and a ${actor.element} before: simrec's actor ids are one namespace`,
          );
        this.seen.get(id)!.appendedAt = step;
        const heading = sumoAngleToYaw(yaw[i]!);
        yaw[i] = heading;
        if (pitch && !Number.isNaN(pitch[i]!)) pitch[i] = -degToRad(pitch[i]!);
        const length = actor.placement.length;
        if (!Number.isNaN(length)) {
          x[i] = sumoFrontToCentre(x[i]!, Math.cos(heading), length);
          y[i] = sumoFrontToCentre(y[i]!, Math.sin(heading), length);
          if (lanePos && !Number.isNaN(lanePos[i]!)) lanePos[i] = sumoFrontToCentre(lanePos[i]!, 1, length);
        }
      }
      if (fresh.length) {
        this.track(sink.declareActors(fresh));
        this.track(
          sink.declareStreams(
            fresh.map((a) => ({ name: STATE_STREAM, actor: a.id, fields: FCD_STATE_FIELDS })),
          ),
        );
      }
      this.track(
        sink.appendFrame(STATE_STREAM, { t, step, actors: c.ids, columns: { ...c.numbers, ...c.strings } }),
      );
    }
    // Who was in the timestep before and is not in this one has left at this one.
    for (const id of this.previous) if (this.seen.get(id)!.appendedAt !== step) this.track(sink.leave(id, t));
    this.previous = c.ids;
    this.states += n;
    this.sinceDurable += n;
    this.lastT = t;
  }

  private stepCount = 0;

  /** x and y from longitude and latitude, through the network's projection (or the UTM zone's). */
  private fromGeo(c: Timestep): void {
    const lon = c.numbers.lon;
    const lat = c.numbers.lat;
    if (!lon || !lat || !this.project) return;
    const x = (c.numbers.x = new Float64Array(lon.length).fill(NaN));
    const y = (c.numbers.y = new Float64Array(lon.length).fill(NaN));
    for (let i = 0; i < lon.length; i++) {
      if (Number.isNaN(lon[i]!) || Number.isNaN(lat[i]!)) continue;
      const p = this.project(lon[i]!, lat[i]!);
      x[i] = p.x;
      y[i] = p.y;
    }
  }

  private placementOf(id: string, element: FcdElement, typeId: string | undefined): Placement {
    if (!this.types) return { length: NaN, type: undefined };
    const name = typeId ?? this.types.typeOf.get(id) ?? this.flowType(id) ?? defaultTypeOf(element);
    const type = this.types.types.get(name);
    if (!type) {
      if (!this.unknownTypes.has(name)) {
        this.unknownTypes.add(name);
        this.warn(
          `${this.file}: type ${JSON.stringify(name)} (of ${element} ${JSON.stringify(id)}, and any other of it) is in none of the route files: positions of its actors stay at SUMO's front bumper`,
        );
      }
      this.atFront++;
      return { length: NaN, type: undefined };
    }
    this.centred++;
    return { length: type.length, type };
  }

  private flowType(id: string): string | undefined {
    const dot = id.lastIndexOf('.');
    return dot > 0 ? this.types!.flowTypeOf.get(id.slice(0, dot)) : undefined;
  }

  private actorDecl(
    id: string,
    element: FcdElement,
    placement: Placement,
    typeId: string | undefined,
  ): ActorDecl {
    const type = placement.type;
    const attributes: JsonObject = { sumoElement: element };
    const vType = typeId === undefined ? type?.id : ownString(typeId);
    if (vType !== undefined) attributes.vType = vType;
    if (type) attributes.vClass = type.vClass;
    if (Number.isNaN(placement.length)) attributes.position = 'front bumper';
    return {
      id,
      kind: element === 'vehicle' && type?.vClass === 'bicycle' ? 'cyclist' : KIND[element],
      ...(vType !== undefined ? { sourceClass: vType } : {}),
      ...(type ? { extents: { length: type.length, width: type.width, height: type.height } } : {}),
      attributes,
    };
  }

  /** A recorder promise: awaited later, its failure never unhandled meanwhile. */
  private track(promise: Promise<unknown>): void {
    promise.catch(() => {});
    this.pending.push(promise);
  }

  /** After a failure: the recorder's promises are let go (the work layer removes the run). */
  async abandon(): Promise<void> {
    await Promise.allSettled([...this.committing, ...this.pending]);
    this.pending = [];
    this.committing = [];
  }

  async finish(): Promise<FcdImportResult> {
    const sink = await this.begun(undefined);
    const positions = !this.types || this.centred === 0 ? 'front bumper' : this.atFront ? 'mixed' : 'centre';
    if (this.timesteps === 0) this.warn(`${this.file}: no timestep; the run is empty`);
    if (this.network) await keepRoadNetwork(sink, this.network);
    await this.settle(true);
    const run = await sink.end('completed', { end: this.timesteps ? this.lastT : this.begin });
    return { run, timesteps: this.timesteps, states: this.states, actors: this.actors.size, positions };
  }
}

/**
 * A copy of a string the parser cut from its chunk: V8 keeps a cut of 13 characters or more as a view of
 * the whole chunk (a megabyte), so a type id kept with each actor held every chunk it came from.
 */
const ownString = (text: string): string => JSON.parse(JSON.stringify(text)) as string;

const defaultTypeOf = (element: FcdElement): string =>
  element === 'person'
    ? 'DEFAULT_PEDTYPE'
    : element === 'container'
      ? 'DEFAULT_CONTAINERTYPE'
      : 'DEFAULT_VEHTYPE';
