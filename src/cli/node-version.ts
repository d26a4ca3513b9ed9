/**
 * The Node.js versions simrec runs on. Its store checksums chunks with zlib.crc32, which Node.js has had
 * since 20.15.0 and 22.2.0 (not in 21); on an older one its modules fail to load with a SyntaxError that
 * names neither simrec nor the version it needs.
 */
export const SUPPORTED_NODE = '20.15 or later (22.2 or later on 22)';

/** Why `version` (as process.versions.node gives it) cannot run simrec, or undefined when it can. */
export function unsupportedNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const supported = (major === 20 && minor >= 15) || (major === 22 && minor >= 2) || major >= 23;
  return supported ? undefined : `Node.js ${version} cannot run simrec: it needs Node.js ${SUPPORTED_NODE}`;
}
