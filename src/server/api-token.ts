import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { MiddlewareHandler } from 'hono';

/** Constant-time comparison, so the time an answer takes says nothing about the token. */
export function tokenMatches(given: string | null | undefined, expected: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The token a request presents: `Authorization: Bearer T`, or `?token=T` (images and WebSockets cannot send headers). */
export function presentedToken(authorization: string | null | undefined, url: string): string | null {
  const bearer = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1];
  return bearer ?? new URL(url, 'http://x').searchParams.get('token');
}

/** Refuses API requests without the token, when the server has one (it should, when not on loopback). */
export function requireToken(expected: string): MiddlewareHandler {
  return async (c, next) => {
    if (!tokenMatches(presentedToken(c.req.header('authorization'), c.req.url), expected))
      return c.json(
        {
          error: 'this server requires a token: Authorization: Bearer TOKEN, or ?token=TOKEN',
          code: 'unauthorized',
        },
        401,
      );
    await next();
  };
}

export const upgradeHasToken = (request: IncomingMessage, expected: string): boolean =>
  tokenMatches(presentedToken(request.headers.authorization, request.url ?? '/'), expected);
