/**
 * The port simrec serves on unless told otherwise: apart from start-server.ts, so that the command
 * line can offer it as `--port`'s default without loading the server.
 */
export const DEFAULT_PORT = 8470;
