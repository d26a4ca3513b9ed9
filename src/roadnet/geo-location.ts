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
    );
  }
  const dx = geo.offset?.x ?? 0;
  const dy = geo.offset?.y ?? 0;
  return (x, y) => {
    const [longitude, latitude] = converter.forward([x - dx, y - dy]) as [number, number];
    return { latitude, longitude };
  };
}
