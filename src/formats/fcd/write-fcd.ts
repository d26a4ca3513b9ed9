import { createWriteStream, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import { createGzip, type Gzip } from 'node:zlib';
import { invalid } from '../../model/errors.js';
import type { RunSource } from '../../model/run-ports.js';
import type { ActorInfo } from '../../model/run.js';
import { StreamWalk } from '../../model/sample-series.js';
import { STATE_FIELDS, STATE_STREAM } from '../../model/standard-streams.js';
import type { Sample } from '../../model/stream.js';
import { centreToSumoFront, radToDeg, yawToSumoAngle } from '../../model/units.js';
import { geoLocator } from '../../roadnet/geo-location.js';
import { readRoadNetwork } from '../../roadnet/roadnet-attachment.js';
import { frameTimes, presentSample, stateTracks, type Track } from '../common/scene-tracks.js';
import { FCD_STATE_FIELDS, type FcdElement } from './fcd-attributes.js';
import { formatFcdHeader } from './fcd-header.js';
import { SUMO_GEO_PRECISION, SUMO_PRECISION } from './read-fcd.js';

export interface FcdExportOptions {
  warn?: (message: string) => void;
  /** States written so far, of the run's states. */
  onProgress?: (done: number, total: number) => void;
  /** simrec's version, named in the file's header. */
  generator?: string;
  signal?: AbortSignal;
}

export interface FcdExportResult {
  timesteps: number;
  states: number;
  actors: number;
  /** Written gzip-compressed (the location ends in .gz), as SUMO does for such a name. */
  compressed: boolean;
}

/** Actors that do not move through SUMO's world as vehicles, persons or containers do. */
const NOT_MOVING = new Set(['traffic_light', 'sensor', 'map', 'static']);
/** What SUMO names the type of an element it was given no type for. */
const DEFAULT_TYPE: Record<FcdElement, string> = {
  vehicle: 'DEFAULT_VEHTYPE',
  person: 'DEFAULT_PEDTYPE',
  container: 'DEFAULT_CONTAINERTYPE',
};
/** Fields written under other names or not at all (simrec's own state, SUMO's attributes). */
const MAPPED = new Set([...STATE_FIELDS, ...FCD_STATE_FIELDS].map((f) => f.name));
/** SUMO's numeric attributes written as they are stored, in the order SUMO writes them. */
const PLAIN_NUMBERS = [
  'accelerationLat',
  'distance',
  'odometer',
  'posLat',
  'speedLat',
  'leaderSpeed',
  'leaderGap',
  'arrivalDelay',
] as const;

const XML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };
const escape = (text: string): string => text.replace(/[&<>"]/g, (c) => XML_ESCAPES[c]!);

/** SUMO's time: seconds with two decimals, more only where the time needs them (to the microsecond). */
function seconds(micros: number): string {
  const s = micros / 1e6;
  if (Math.round(micros) % 10_000 === 0) return s.toFixed(2);
  return s.toFixed(6).replace(/0+$/, '');
}

interface FcdTrack extends Track {
  element: FcdElement;
  /** The length between the stored position and SUMO's front bumper, twice over: 0 when already at it. */
  length: number;
  first: number;
  last: number;
}

/**
 * Writes a run as SUMO's floating car data, as `sumo --fcd-output` writes it: a timestep at each time
 * some actor has a state, and in it every vehicle, person and container present then with its latest
 * state, at SUMO's front bumper, its heading in SUMO's degrees. SUMO's own attributes a run holds (its
 * type, lane, slope, signals, leader...) are written under SUMO's names, and any other field of a
 * state under its own. A run read from an FCD file is written with that file's precision and, when
 * it had them, geo coordinates; a location ending in `.gz` is gzip-compressed. Streamed: the run is
 * walked forward a window of each actor at a time.
 */
export async function exportFcd(
  source: RunSource,
  file: string,
  options: FcdExportOptions = {},
): Promise<FcdExportResult> {
  const warn = options.warn ?? (() => {});
  const { run } = source;
  const [actors, streams] = await Promise.all([source.actors(), source.streams()]);
  const byId = new Map(streams.map((s) => [s.id, s] as const));
  const moving = actors.filter((a) => !NOT_MOVING.has(a.kind) && byId.has(`${a.id}/${STATE_STREAM}`));
  const meta = run.metadata;
  const fromFcd = meta.source === 'sumo-fcd';
  const geo = fromFcd && meta.geo === true;
  const precision = fromFcd && typeof meta.precision === 'number' ? meta.precision : SUMO_PRECISION;
  const geoPrecision =
    fromFcd && typeof meta.geoPrecision === 'number' ? meta.geoPrecision : SUMO_GEO_PRECISION;
  const network = await readRoadNetwork(source, run.id);
  const locate = geo ? geoLocator(network?.geoReference) : undefined;

  const { walk, series } = await StreamWalk.over(
    source,
    moving.map((a) => byId.get(`${a.id}/${STATE_STREAM}`)!),
  );
  let unsized = 0;
  const tracks: FcdTrack[] = stateTracks(moving, byId, series).map((track) => {
    const { actor, samples } = track;
    const atFront = actor.attributes.position === 'front bumper';
    if (!atFront && !actor.extents?.length) unsized++;
    return {
      ...track,
      element: elementOf(actor),
      length: atFront ? 0 : (actor.extents?.length ?? 0),
      first: samples.times[0] ?? Infinity,
      last: samples.times[samples.length - 1] ?? -Infinity,
    };
  });
  if (unsized)
    warn(
      `${unsized} actors have no length: their centres are written as SUMO's front bumpers (SUMO places an actor by its front)`,
    );
  const skipped = actors.filter((a) => NOT_MOVING.has(a.kind) && byId.has(`${a.id}/${STATE_STREAM}`)).length;
  if (skipped)
    warn(`${skipped} actors that are no vehicle, person or container (lights, sensors...) left out`);
  tracks.sort((a, b) => a.first - b.first);
  const frames = frameTimes(tracks);
  const total = tracks.reduce((n, t) => n + t.samples.length, 0);

  const out = createWriteStream(file);
  const gzip = file.endsWith('.gz');
  const sink: WriteStream | Gzip = gzip ? createGzip() : out;
  if (gzip) sink.pipe(out);
  const failed = new Promise<never>((_resolve, reject) => {
    out.on('error', reject);
    sink.on('error', reject);
  });
  failed.catch(() => {}); // raced against each wait for the sink below, which reports it; unraced, it is no one's
  try {
    let buffered: string[] = [];
    let bufferedChars = 0;
    const flush = async (): Promise<void> => {
      if (!buffered.length) return;
      const text = buffered.join('');
      buffered = [];
      bufferedChars = 0;
      if (!sink.write(text)) await Promise.race([once(sink, 'drain'), failed]);
    };
    const emit = async (text: string): Promise<void> => {
      buffered.push(text);
      bufferedChars += text.length;
      if (bufferedChars > 1 << 20) await flush();
    };

    const headerOptions: Record<string, string> = {};
    const sumoOptions = (meta.sumo as { options?: Record<string, string> } | undefined)?.options;
    if (fromFcd && sumoOptions) Object.assign(headerOptions, sumoOptions);
    if (geo) headerOptions['fcd-output.geo'] = 'true';
    if (precision !== SUMO_PRECISION) headerOptions.precision = String(precision);
    if (geoPrecision !== SUMO_GEO_PRECISION) headerOptions['precision.geo'] = String(geoPrecision);
    await emit(
      `<?xml version="1.0" encoding="UTF-8"?>\n\n` +
        formatFcdHeader(run.begin, `${options.generator ?? 'simrec'} from run ${run.id}`, headerOptions) +
        `\n<fcd-export xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://sumo.dlr.de/xsd/fcd_file.xsd">\n`,
    );

    const fixed = (v: number, digits = precision): string => (v === 0 ? 0 : v).toFixed(digits);
    const row = (track: FcdTrack, s: Sample): string => {
      const num = (name: string): number | undefined => {
        const v = s[name];
        return typeof v === 'number' ? v : undefined;
      };
      const yaw = num('yaw') ?? 0;
      const along = (v: number, heading: number): number =>
        track.length ? centreToSumoFront(v, heading, track.length) : v;
      const x = along(num('x') ?? 0, Math.cos(yaw));
      const y = along(num('y') ?? 0, Math.sin(yaw));
      let position: string;
      if (geo) {
        let lon = num('lon');
        let lat = num('lat');
        if ((lon === undefined || lat === undefined) && locate)
          ({ longitude: lon, latitude: lat } = locate(x, y));
        if (lon === undefined || lat === undefined)
          throw invalid(
            `run ${run.id}: ${track.actor.id} at t=${s.t} has no longitude and latitude, and the run's network no projection to compute them`,
          );
        position = ` x="${fixed(lon, geoPrecision)}" y="${fixed(lat, geoPrecision)}"`;
      } else position = ` x="${fixed(x)}" y="${fixed(y)}"`;
      let text = `        <${track.element} id="${escape(track.actor.id)}"${position}`;
      const z = num('z');
      if (z !== undefined) text += ` z="${fixed(z)}"`;
      text += ` angle="${fixed(yawToSumoAngle(yaw))}"`;
      const type =
        (typeof s.type === 'string' ? s.type : undefined) ??
        (typeof track.actor.attributes.vType === 'string' ? track.actor.attributes.vType : undefined) ??
        DEFAULT_TYPE[track.element];
      text += ` type="${escape(type)}"`;
      const vx = num('vx');
      const vy = num('vy');
      const speed = num('speed') ?? (vx !== undefined && vy !== undefined ? Math.hypot(vx, vy) : 0);
      text += ` speed="${fixed(speed)}"`;
      const lanePos = num('lanePos');
      if (lanePos !== undefined) text += ` pos="${fixed(along(lanePos, 1))}"`;
      if (typeof s.lane === 'string') text += ` lane="${escape(s.lane)}"`;
      if (typeof s.edge === 'string') text += ` edge="${escape(s.edge)}"`;
      const pitch = num('pitch');
      if (pitch !== undefined) text += ` slope="${fixed(-radToDeg(pitch))}"`;
      const signals = num('signals');
      if (signals !== undefined) text += ` signals="${signals}"`;
      const accel = num('accel');
      if (accel !== undefined) text += ` acceleration="${fixed(accel)}"`;
      for (const name of PLAIN_NUMBERS) {
        const v = num(name);
        if (v !== undefined) text += ` ${name}="${fixed(v)}"`;
      }
      if (typeof s.leaderID === 'string') text += ` leaderID="${escape(s.leaderID)}"`;
      if (typeof s.vehicle === 'string') text += ` vehicle="${escape(s.vehicle)}"`;
      // Whatever else the state holds (a --fcd-output.params parameter, another simulator's field).
      for (const name in s) {
        if (name === 't' || name === 'step' || MAPPED.has(name)) continue;
        const v = s[name];
        if (typeof v === 'string') text += ` ${name}="${escape(v)}"`;
        else if (typeof v === 'number' || typeof v === 'boolean') text += ` ${name}="${String(v)}"`;
      }
      return `${text}/>\n`;
    };

    let done = 0;
    let states = 0;
    const active: FcdTrack[] = [];
    let next = 0;
    for (const t of frames) {
      options.signal?.throwIfAborted();
      await walk.advanceTo(t);
      while (next < tracks.length && tracks[next]!.first <= t) active.push(tracks[next++]!);
      let rows = '';
      let kept = 0;
      for (const track of active) {
        const s = presentSample(track, t);
        // Past its last state and absent, an actor never comes back: it leaves the walk.
        if (s === undefined) {
          if (t <= track.last) active[kept++] = track;
          continue;
        }
        active[kept++] = track;
        rows += row(track, s);
        states++;
        if (s.t === t) done++;
      }
      active.length = kept;
      const time = seconds(t - run.begin);
      await emit(
        rows ? `    <timestep time="${time}">\n${rows}    </timestep>\n` : `    <timestep time="${time}"/>\n`,
      );
      options.onProgress?.(done, total);
    }
    await emit('</fcd-export>\n');
    await flush();
    sink.end();
    await Promise.race([once(out, 'close'), failed]);
    return { timesteps: frames.length, states, actors: tracks.length, compressed: gzip };
  } catch (error) {
    // The file may still be opening: closed here, before the caller removes it, it is not created after.
    sink.destroy();
    out.destroy();
    if (!out.closed) await once(out, 'close');
    throw error;
  }
}

function elementOf(actor: ActorInfo): FcdElement {
  const element = actor.attributes.sumoElement;
  if (element === 'vehicle' || element === 'person' || element === 'container') return element;
  return actor.kind === 'pedestrian' ? 'person' : 'vehicle';
}
