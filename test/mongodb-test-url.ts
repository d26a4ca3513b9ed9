/**
 * The MongoDB server live tests run against. These machines have none (it is in neither Debian's
 * packages nor the npm registry as a binary), so the tests that need one are skipped by name with
 * this reason unless SIMREC_MONGO_URL (or its older name SIMREC_TEST_MONGODB_URL) names one. They
 * never run against a fake.
 */
export const MONGO_URL: string | undefined =
  process.env.SIMREC_MONGO_URL || process.env.SIMREC_TEST_MONGODB_URL || undefined;

export const skipWithoutMongo = (what: string): string | false =>
  MONGO_URL
    ? false
    : `no MongoDB server on this machine; set SIMREC_MONGO_URL=mongodb://HOST:PORT to run ${what}`;

/** A fresh database on the test server, so tests never see each other's data. */
export function freshMongoDatabase(prefix: string): string {
  const u = new URL(MONGO_URL!);
  u.pathname = `/${prefix}_${process.pid}_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  return u.toString();
}
