import { MongoClient, MongoServerError, type Db } from 'mongodb';
import { SimrecError } from '../model/errors.js';
import { databaseOfUrl, redactUrl } from './mongodb-url.js';

export interface ConnectMongoOptions {
  /** The database to use when the URL names none. */
  defaultDatabase: string;
  /** Overrides the URL's database (SODA.Sim keeps the URL and the database name apart). */
  database?: string;
  /** How long to wait for a server; the URL's own serverSelectionTimeoutMS wins. */
  serverSelectionTimeoutMS: number;
}

export interface MongoConnection {
  client: MongoClient;
  db: Db;
  /** The URL without credentials: what messages show. */
  location: string;
}

/** MongoDB's AuthenticationFailed; the driver reports it as a server error with this code. */
const AUTHENTICATION_FAILED = 18;

/**
 * Connects and pings (SODA.Sim's own connection check), turning the driver's failures into errors a
 * user can act on: a malformed URL, a server that does not answer, credentials it refuses. The
 * password never appears in a message.
 */
export async function connectMongo(url: string, options: ConnectMongoOptions): Promise<MongoConnection> {
  const location = redactUrl(url);
  let client: MongoClient;
  try {
    client = new MongoClient(
      url,
      /serverSelectionTimeoutMS=/i.test(url)
        ? {}
        : { serverSelectionTimeoutMS: options.serverSelectionTimeoutMS },
    );
  } catch (error) {
    throw new SimrecError(
      'invalid',
      `${location}: not a MongoDB URL (expected mongodb://[USER:PASSWORD@]HOST[:PORT]/DATABASE): ${scrub((error as Error).message, url)}`,
    );
  }
  const name = options.database ?? databaseOfUrl(url) ?? options.defaultDatabase;
  try {
    await client.connect();
    await client.db(name).command({ ping: 1 });
  } catch (error) {
    await client.close().catch(() => {}); // the failure to connect, thrown next, is the one to report
    throw new SimrecError('io', `${location}: cannot connect to MongoDB: ${explain(error, url)}`, {
      cause: error,
    });
  }
  return { client, db: client.db(name), location };
}

function explain(error: unknown, url: string): string {
  const message = scrub((error as Error).message, url);
  if (error instanceof MongoServerError && error.code === AUTHENTICATION_FAILED)
    return `authentication failed (${message}); check the user name, the password and authSource in the URL`;
  if ((error as Error).name === 'MongoServerSelectionError')
    return `no server answered (${message}); is mongod running there, and is the address right?`;
  return message;
}

/** Drivers sometimes quote the URL they were given; never let the password through. */
function scrub(message: string, url: string): string {
  const password = /\/\/[^:@/]*:([^@/]*)@/.exec(url)?.[1];
  return password ? message.split(password).join('***') : message;
}
