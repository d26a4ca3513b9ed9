import { readFile } from 'node:fs/promises';
import { describeValue, invalid, SimrecError } from '../model/errors.js';
import { defaultVehicleType, readVehicleType, type VehicleType } from '../roadnet/sumo/sumo-vehicle-types.js';
import { childNamed, childrenNamed, XmlSource, type XmlElement } from '../roadnet/xml/xml-source.js';
import type { Random } from './random.js';

export type DepartLane = number | 'random' | 'free' | 'best' | 'first' | 'allowed';
export type DepartSpeed = number | 'max' | 'desired' | 'random' | 'speedLimit' | 'avg';

export interface VehicleDemand {
  id: string;
  type: VehicleType;
  /** Seconds. */
  depart: number;
  route: { edges: string[] } | { from: string; to: string; via: string[] };
  departLane?: DepartLane;
  /** Metres from the lane's start to the front, or `random`. */
  departPos?: number | 'random';
  departSpeed?: DepartSpeed;
  arrivalLane?: number;
  /** `file: <vehicle id="x"> (line n)`, for warnings. */
  where: string;
}

export interface Demand {
  vehicles: VehicleDemand[];
  warnings: string[];
}

function departLane(source: XmlSource, element: XmlElement): DepartLane | undefined {
  const raw = element.attrs.departLane;
  if (raw === undefined) return undefined;
  if (['random', 'free', 'best', 'first', 'allowed'].includes(raw)) return raw as DepartLane;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0)
    throw source.error(
      element,
      'departLane',
      `expected a lane index or random/free/best/first, got ${describeValue(raw)}`,
    );
  return n;
}

function departSpeed(source: XmlSource, element: XmlElement): DepartSpeed | undefined {
  const raw = element.attrs.departSpeed;
  if (raw === undefined) return undefined;
  if (['max', 'desired', 'random', 'speedLimit', 'avg', 'last'].includes(raw))
    return raw === 'last' ? 'desired' : (raw as DepartSpeed);
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0)
    throw source.error(
      element,
      'departSpeed',
      `expected a speed >= 0 or max/desired/random, got ${describeValue(raw)}`,
    );
  return n;
}

/** Time attributes: seconds, or SUMO's `h:m:s`. */
function time(source: XmlSource, element: XmlElement, name: string, fallback?: number): number | undefined {
  const raw = element.attrs[name];
  if (raw === undefined) return fallback;
  const parts = raw.split(':').map(Number);
  const seconds = parts.reduce((acc, p) => acc * 60 + p, 0);
  if (raw.trim() === '' || !parts.every(Number.isFinite) || parts.length > 4)
    throw source.error(element, name, `expected seconds, got ${describeValue(raw)}`);
  return seconds;
}

const words = (value: string | undefined): string[] =>
  value === undefined ? [] : value.split(/\s+/).filter((w) => w !== '');

interface FileContext {
  source: XmlSource;
  routes: Map<string, string[]>;
  types: Map<string, VehicleType>;
}

/**
 * Reads SUMO route files (`<vType>`, `<route>`, `<vehicle>`, `<trip>`, `<flow>`), several at once as
 * SUMO takes them, types in one and vehicles in another. Vehicles departing after `until` seconds are
 * not expanded. `<person>` and other elements are left out with a warning.
 */
export async function readRouteFiles(
  paths: readonly string[],
  options: { until: number; random: Random },
): Promise<Demand> {
  const texts: { file: string; text: string }[] = [];
  for (const file of paths) {
    try {
      texts.push({ file, text: await readFile(file, 'utf8') });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new SimrecError('not_found', `${file}: no such route file`);
      throw new SimrecError('io', `${file}: cannot read: ${(error as Error).message}`, { cause: error });
    }
  }
  return readRouteTexts(texts, options);
}

export function readRouteTexts(
  texts: readonly { file: string; text: string }[],
  options: { until: number; random: Random },
): Demand {
  const parsed = texts.map(({ file, text }) => {
    if (/<!DOCTYPE[^>[]*\[|<!ENTITY/i.test(text))
      throw invalid(`${file}: refused: the document declares entities; route files need no DTD`);
    const source = new XmlSource(text, { file });
    return { source, root: source.parseRoot('routes') };
  });
  const types = new Map<string, VehicleType>();
  const routes = new Map<string, string[]>();
  const warnings: string[] = [];
  // Types and named routes first, from every file: SUMO lets a vehicle use a type from a later file.
  for (const { source, root } of parsed)
    for (const element of root.children) {
      const typeElements =
        element.tag === 'vType'
          ? [element]
          : element.tag === 'vTypeDistribution'
            ? childrenNamed(element, 'vType')
            : [];
      for (const t of typeElements) types.set(source.required(t, 'id'), readVehicleType(source, t));
      if (element.tag === 'route' && element.attrs.id !== undefined)
        routes.set(element.attrs.id, words(source.required(element, 'edges')));
    }
  const vehicles: VehicleDemand[] = [];
  for (const { source, root } of parsed) {
    const context: FileContext = { source, routes, types };
    for (const element of root.children) {
      switch (element.tag) {
        case 'vType':
        case 'vTypeDistribution':
        case 'route':
        case 'routeDistribution':
          break;
        case 'vehicle':
        case 'trip': {
          const v = readVehicle(context, element, source.required(element, 'id'), warnings);
          if (v && v.depart <= options.until) vehicles.push(v);
          break;
        }
        case 'flow':
          vehicles.push(...expandFlow(context, element, options, warnings));
          break;
        default:
          source.warn(element, `<${element.tag}> is not simulated by the demo; left out`);
      }
    }
    warnings.push(...source.warnings);
  }
  vehicles.sort((a, b) => a.depart - b.depart);
  const ids = new Set<string>();
  for (const v of vehicles) {
    if (ids.has(v.id)) throw invalid(`${v.where}: vehicle id ${JSON.stringify(v.id)} is used twice`);
    ids.add(v.id);
  }
  return { vehicles, warnings };
}

function readVehicle(
  { source, routes, types }: FileContext,
  element: XmlElement,
  id: string,
  warnings: string[],
  depart?: number,
): VehicleDemand | undefined {
  const where = `${source.file}: ${source.where(element)}`;
  const departRaw = element.attrs.depart;
  if (depart === undefined && departRaw !== undefined && !/^[\d.:]+$/.test(departRaw.trim())) {
    warnings.push(
      `${where}: vehicle ${JSON.stringify(id)} departs ${JSON.stringify(departRaw)}, which the demo does not simulate; skipped`,
    );
    return undefined;
  }
  const typeId = element.attrs.type;
  let type = typeId === undefined ? undefined : types.get(typeId);
  if (typeId !== undefined && !type) {
    warnings.push(
      `${where}: vehicle ${JSON.stringify(id)} has type ${JSON.stringify(typeId)}, defined nowhere; it gets the default type`,
    );
    types.set(typeId, (type = defaultVehicleType(typeId)));
  }
  type ??= defaultVehicleType();
  if (element.attrs.vClass !== undefined && element.attrs.vClass !== type.vClass)
    type = { ...type, vClass: element.attrs.vClass };
  let route: VehicleDemand['route'];
  const inline = childNamed(element, 'route');
  const routeRef = element.attrs.route;
  if (inline) route = { edges: words(source.required(inline, 'edges')) };
  else if (routeRef !== undefined) {
    const edges = routes.get(routeRef);
    if (!edges) {
      warnings.push(
        `${where}: vehicle ${JSON.stringify(id)} uses route ${JSON.stringify(routeRef)}, defined nowhere; skipped`,
      );
      return undefined;
    }
    route = { edges };
  } else if (element.attrs.from !== undefined && element.attrs.to !== undefined)
    route = { from: element.attrs.from, to: element.attrs.to, via: words(element.attrs.via) };
  else {
    warnings.push(`${where}: vehicle ${JSON.stringify(id)} has no route, nor from and to; skipped`);
    return undefined;
  }
  const v: VehicleDemand = {
    id,
    type,
    depart: depart ?? time(source, element, 'depart', 0)!,
    route,
    where,
  };
  const lane = departLane(source, element);
  if (lane !== undefined) v.departLane = lane;
  const pos = element.attrs.departPos;
  if (pos !== undefined) {
    if (pos === 'random') v.departPos = 'random';
    else if (Number.isFinite(Number(pos))) v.departPos = Number(pos);
  }
  const speed = departSpeed(source, element);
  if (speed !== undefined) v.departSpeed = speed;
  const arrival = element.attrs.arrivalLane;
  if (arrival !== undefined && /^\d+$/.test(arrival)) v.arrivalLane = Number(arrival);
  return v;
}

/** A `<flow>`'s vehicles, as SUMO names them (`flowId.n`), up to `until` seconds. */
function expandFlow(
  context: FileContext,
  element: XmlElement,
  options: { until: number; random: Random },
  warnings: string[],
): VehicleDemand[] {
  const { source } = context;
  const id = source.required(element, 'id');
  const begin = time(source, element, 'begin', 0)!;
  const end = Math.min(time(source, element, 'end', 3600)!, options.until);
  const number = source.number(element, 'number', undefined);
  const period = source.number(element, 'period', undefined);
  const perHour = source.number(element, 'vehsPerHour', undefined);
  const probability = source.number(element, 'probability', undefined);
  const departs: number[] = [];
  const fullEnd = time(source, element, 'end', 3600)!;
  const step = period ?? (perHour ? 3600 / perHour : number ? (fullEnd - begin) / number : undefined);
  if (step !== undefined) {
    if (!(step > 0)) throw source.error(element, 'period', `expected a positive period, got ${step}`);
    for (let t = begin, n = 0; t <= end && (number === undefined || n < number); t += step, n++)
      departs.push(t);
  } else if (probability !== undefined) {
    const random = options.random.fork(`flow ${id}`);
    for (let t = begin; t <= end; t += 1) if (random.next() < probability) departs.push(t);
  } else {
    warnings.push(
      `${source.file}: ${source.where(element)}: flow ${JSON.stringify(id)} has no period, vehsPerHour, probability or number; skipped`,
    );
    return [];
  }
  const vehicles: VehicleDemand[] = [];
  departs.forEach((t, n) => {
    const v = readVehicle(context, element, `${id}.${n}`, warnings, t);
    if (v) vehicles.push(v);
  });
  return vehicles;
}
