/*
 * MongoDB URLs without the driver: the server and the viewer's settings show and check them, and
 * must not load the MongoDB driver to do so.
 */

export const isMongoUrl = (location: string): boolean => /^mongodb(\+srv)?:\/\//.test(location);

/** The URL as it may be shown: without its password (or user name). */
export function redactUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

/** The database a `mongodb://HOST[,HOST...]/DB` URL names, or undefined when its path is empty. */
export function databaseOfUrl(url: string): string | undefined {
  // Not `new URL`: a replica set's URL lists several hosts, which WHATWG URLs cannot hold.
  const path = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/.exec(url)?.[1];
  if (!path) return undefined;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/**
 * Why MongoDB would refuse a database name, or undefined if it would not: names are 1 to 63 bytes
 * without `/\. "$*<>:|?` or NUL (MongoDB's "Naming Restrictions", the stricter Windows set).
 */
export function databaseNameProblem(name: string): string | undefined {
  if (name === '') return 'it is empty';
  if (Buffer.byteLength(name) > 63) return 'it is longer than 63 bytes';
  const bad = /[/\\. "$*<>:|?\0]/.exec(name);
  if (bad) return `it contains ${JSON.stringify(bad[0])}`;
  return undefined;
}
