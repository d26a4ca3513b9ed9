/**
 * Who may talk to the server at all, checked on every HTTP request and every WebSocket upgrade
 * before any route or token sees it:
 *
 * - `Host` must be a name of this server (a loopback name, the `--host` it listens on, a name given
 *   with `--allow-host`, or, when it listens on every address, an IP address). A page on another
 *   site that re-points its own DNS name at 127.0.0.1 (DNS rebinding) sends its own name and is
 *   refused, so it can neither read the API nor change the settings.
 * - `Origin`, when a browser sends one, must be the server's own (`http://` + the request's Host) or
 *   one given with `--allow-origin`. Browsers send it on every WebSocket handshake and every
 *   cross-origin request, so another site's page cannot open /api/live or /ingest, nor send a
 *   "simple" POST that skips the CORS preflight. Clients that are not browsers send none.
 * - A request that changes something and carries a body must say `application/json`: the content
 *   types a page may send without a preflight (text/plain, forms) are refused whatever the origin.
 *
 * Every answer carries the security headers below (set in start-server.ts).
 */
import { isIP } from 'node:net';
import { describeValue, invalid } from '../model/errors.js';

export interface GuardOptions {
  /** The address the server listens on (`--host`). */
  host: string;
  /** More names the server answers to (`--allow-host`), e.g. the machine's DNS name. */
  allowHosts?: readonly string[];
  /** More origins whose pages may use the API (`--allow-origin`), e.g. `https://dash.example`. */
  allowOrigins?: readonly string[];
}

export interface Refusal {
  status: 400 | 403 | 415;
  code: 'bad_host' | 'bad_origin' | 'unsupported_media_type';
  error: string;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '::1'];
const WILDCARD_ADDRESSES = ['0.0.0.0', '::', ''];
const CHANGING_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The headers every answer carries. The viewer loads only its own files and talks only to its own
 * server; nothing may frame it (clickjacking of the record switch) and no address with `?token=` in
 * it leaks to another site through the Referer.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** `Host`'s name without its port, lower-cased, IPv6 brackets removed; null when it is malformed. */
export function hostName(header: string): string | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:[\]\s/@]+)(?::(\d{1,5}))?$/.exec(header.trim());
  if (!m) return null;
  return m[1]!.replace(/^\[|\]$/g, '').toLowerCase();
}

function normalizeOrigin(origin: string): string | null {
  try {
    const url = new URL(origin);
    if (url.origin === 'null') return null;
    return url.origin;
  } catch {
    return null;
  }
}

export class RequestGuard {
  private readonly names: Set<string>;
  private readonly anyAddress: boolean;
  private readonly origins: Set<string>;

  constructor(options: GuardOptions) {
    const listen = options.host.replace(/^\[|\]$/g, '').toLowerCase();
    this.anyAddress = WILDCARD_ADDRESSES.includes(listen);
    this.names = new Set([...LOOPBACK_NAMES, ...(this.anyAddress ? [] : [listen])]);
    for (const name of options.allowHosts ?? []) {
      const parsed = hostName(name);
      if (parsed === null) throw invalid(`--allow-host: expected a host name, got ${describeValue(name)}`);
      this.names.add(parsed);
    }
    this.origins = new Set();
    for (const origin of options.allowOrigins ?? []) {
      const parsed = normalizeOrigin(origin);
      if (parsed === null)
        throw invalid(
          `--allow-origin: expected an origin like https://example.com, got ${describeValue(origin)}`,
        );
      this.origins.add(parsed);
    }
  }

  /** Null when the request may go on; otherwise why it is refused. */
  check(request: {
    method: string;
    host: string | undefined;
    origin: string | undefined;
    contentType?: string | undefined;
    hasBody?: boolean;
  }): Refusal | null {
    const name = request.host === undefined ? null : hostName(request.host);
    if (name === null || !this.knows(name))
      return {
        status: 403,
        code: 'bad_host',
        error: `Host ${JSON.stringify(request.host ?? '')}: not a name of this server (it answers to ${[...this.names].join(', ')}${this.anyAddress ? ', any IP address' : ''}; add names with --allow-host)`,
      };
    if (request.origin !== undefined) {
      const origin = normalizeOrigin(request.origin);
      const own = `http://${request.host!.toLowerCase()}`;
      if (origin === null || (origin !== own && !this.origins.has(origin)))
        return {
          status: 403,
          code: 'bad_origin',
          error: `Origin ${JSON.stringify(request.origin)}: pages from another site may not use this server (allow one with --allow-origin)`,
        };
    }
    if (CHANGING_METHODS.has(request.method.toUpperCase()) && request.hasBody) {
      const type = (request.contentType ?? '').split(';')[0]!.trim().toLowerCase();
      if (type !== 'application/json')
        return {
          status: 415,
          code: 'unsupported_media_type',
          error: `${request.method} with Content-Type ${JSON.stringify(request.contentType ?? '')}: expected application/json`,
        };
    }
    return null;
  }

  private knows(name: string): boolean {
    if (this.names.has(name)) return true;
    // An IP address cannot be re-pointed by a DNS rebinding; on every address, the machine's own are fine.
    if (this.anyAddress && isIP(name) !== 0) return true;
    // RFC 6761: every name under .localhost is loopback.
    return name.endsWith('.localhost');
  }
}
