import proj4, { type Converter } from 'proj4';
import type { GeoReference } from '../model/roadnet.js';

export interface GeoPosition {
  /** Degrees, WGS84. */
  latitude: number;
  longitude: number;
}

/**
 * Turns a network's local coordinates into latitude and longitude through its PROJ string: the
 * local point less the offset (SUMO's netOffset was added to the projected coordinates to bring the
 * network near the origin), then the projection's inverse (proj4js: projected to WGS84). Undefined when the network
 * has no projection; an error naming the string when proj4js cannot read it.
 */
export function geoLocator(
  geo: GeoReference | undefined,
): ((x: number, y: number) => GeoPosition) | undefined {
  if (!geo?.projection) return undefined;
  let converter: Converter;
  try {
    converter = proj4(geo.projection, 'WGS84');
  } catch (error) {
    throw new Error(
      `the network's projection ${JSON.stringify(geo.projection)} is not one PROJ (proj4js) reads: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const dx = geo.offset?.x ?? 0;
  const dy = geo.offset?.y ?? 0;
  return (x, y) => {
    const [longitude, latitude] = converter.forward<[number, number]>([x - dx, y - dy]);
    return { latitude, longitude };
  };
}

/**
 * The inverse of geoLocator: longitude and latitude (WGS84) to the network's local coordinates, as
 * SUMO's geo outputs (`--fcd-output.geo`) are turned back into its cartesian ones. Undefined when the
 * network has no projection.
 */
export function cartesianLocator(
  geo: GeoReference | undefined,
): ((longitude: number, latitude: number) => { x: number; y: number }) | undefined {
  if (!geo?.projection) return undefined;
  let converter: Converter;
  try {
    converter = proj4(geo.projection, 'WGS84');
  } catch (error) {
    throw new Error(
      `the network's projection ${JSON.stringify(geo.projection)} is not one PROJ (proj4js) reads: ${(error as Error).message}`,
      { cause: error },
    );
  }
  const dx = geo.offset?.x ?? 0;
  const dy = geo.offset?.y ?? 0;
  return (longitude, latitude) => {
    const [x, y] = converter.inverse<[number, number]>([longitude, latitude]);
    return { x: x + dx, y: y + dy };
  };
}

/**
 * The PROJ string of the UTM zone a point lies in (WGS84): where SUMO's own importers put a network
 * that came with no projection of its own (netconvert's --proj.utm), and so where simrec places geo
 * coordinates that come without a network.
 */
export function utmProjectionAt(longitude: number, latitude: number): string {
  const zone = Math.min(60, Math.max(1, Math.floor((longitude + 180) / 6) + 1));
  return `+proj=utm +zone=${zone}${latitude < 0 ? ' +south' : ''} +ellps=WGS84 +datum=WGS84 +units=m +no_defs`;
}
