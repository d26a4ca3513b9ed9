import Database from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { describeValue, invalid, SimrecError } from '../../model/errors.js';
import { LIMSIM_TABLES, tableRequirement, type LimSimVariant } from './limsim-schema.js';

export type SqlValue = string | number | bigint | Buffer | null;
export type Row = Record<string, SqlValue>;

export interface RowsOptions {
  orderBy?: string;
  columns?: string[];
  /** A column read through an SQL expression of it, by column name. */
  expressions?: Record<string, string>;
}

export interface ColumnInfo {
  name: string;
  /** The declared type, upper case: INT, REAL, TEXT, TIMESTAMP, BLOB... */
  type: string;
}

/**
 * A LimSim database opened for reading: which variant it is, which tables and columns it has, and
 * checked reads of its rows by column name (LimSim's own replay unpacks `SELECT *` by position; simrec
 * does not, so reordered or extra columns are fine).
 */
export class LimSimDatabase {
  readonly file: string;
  readonly variant: LimSimVariant;
  readonly db: Database.Database;
  private readonly columns: Map<string, ColumnInfo[]>;

  private constructor(
    file: string,
    db: Database.Database,
    columns: Map<string, ColumnInfo[]>,
    variant: LimSimVariant,
  ) {
    this.file = file;
    this.db = db;
    this.columns = columns;
    this.variant = variant;
  }

  static open(file: string): LimSimDatabase {
    // (Errors SQLite raises later, e.g. a damaged page met mid-read, are turned by asReadError too.)
    checkSqliteHeader(file);
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const names = (
        db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as { name: string }[]
      ).map((r) => r.name);
      const columns = new Map<string, ColumnInfo[]>();
      for (const name of names)
        columns.set(
          name,
          (db.prepare(`SELECT name, type FROM pragma_table_info(?)`).all(name) as ColumnInfo[]).map((c) => ({
            name: c.name,
            type: c.type.toUpperCase(),
          })),
        );
      const variant = detectVariant(file, columns);
      const database = new LimSimDatabase(file, db, columns, variant);
      database.checkSchema();
      return database;
    } catch (error) {
      db.close();
      throw asReadError(file, error);
    }
  }

  close(): void {
    this.db.close();
  }

  has(table: string): boolean {
    return this.columns.has(table);
  }

  columnsOf(table: string): ColumnInfo[] {
    return this.columns.get(table) ?? [];
  }

  hasColumn(table: string, column: string): boolean {
    return this.columnsOf(table).some((c) => c.name === column);
  }

  count(table: string): number {
    if (!this.has(table)) return 0;
    return (this.db.prepare(`SELECT COUNT(*) AS n FROM "${table}"`).get() as { n: number }).n;
  }

  /** The columns of a LimSim table this import reads: its required ones and the optional ones present. */
  readColumns(table: string): string[] {
    const req = tableRequirement(this.variant, table);
    return [...req.required, ...req.optional.filter((c) => this.hasColumn(table, c))];
  }

  /**
   * The rows of a LimSim table, checked: NOT NULL columns hold a value, numeric columns a finite
   * number, text columns text. Errors name the file, table, row and column.
   */
  *rows(table: string, options: RowsOptions = {}): Generator<Row> {
    const columns = options.columns ?? this.readColumns(table);
    for (const values of this.rowValues(table, { ...options, columns })) {
      const row: Row = {};
      for (let i = 0; i < columns.length; i++) row[columns[i]!] = values[i]!;
      yield row;
    }
  }

  /**
   * rows() as arrays of the columns' values, in `columns`' order (no object per row: the frames of an
   * hour of traffic are ten million rows). The row's rowid follows its values.
   */
  *rowValues(table: string, options: RowsOptions = {}): Generator<SqlValue[]> {
    if (!this.has(table)) return;
    const columns = options.columns ?? this.readColumns(table);
    const req = tableRequirement(this.variant, table);
    const declared = new Map(this.columnsOf(table).map((c) => [c.name, c.type]));
    // Each column's check, found once: the declared type's affinity took a regular expression per value.
    const checks = columns.map((c) => {
      const type = declared.get(c) ?? '';
      return { type, kind: affinity(type), notNull: req.notNull.includes(c) };
    });
    const keys = (KEYS[table] ?? ['id'])
      .map((k) => [k, columns.indexOf(k)] as const)
      .filter(([, i]) => i >= 0);
    // A column may be read through an SQL expression of it (a shape too long to read: NULL instead).
    const list = columns
      .map((c) => (options.expressions?.[c] ? `${options.expressions[c]} AS "${c}"` : `"${c}"`))
      .join(', ');
    const order = options.orderBy ? ` ORDER BY ${options.orderBy}` : '';
    const statement = this.db.prepare(`SELECT ${list}, rowid FROM "${table}"${order}`).raw(true);
    const rowid = columns.length;
    // Where a row's value is, for errors (made only for one: a closure per value was garbage per value).
    const place = (values: SqlValue[], i: number): string => {
      const key = keys.map(([k, at]) => `${k}=${describeValue(values[at])}`);
      return `${this.file}: ${table} row ${String(values[rowid])}${key.length ? ` (${key.join(', ')})` : ''}, column ${columns[i]!}`;
    };
    for (const values of statement.iterate() as Iterable<SqlValue[]>) {
      for (let i = 0; i < rowid; i++) {
        const value = values[i]!;
        const check = checks[i]!;
        if (value === null) {
          if (check.notNull)
            throw invalid(`${place(values, i)}: NULL, but LimSim's schema declares it NOT NULL`);
          continue;
        }
        const checked = checkedValue(value, check.kind);
        if (checked === undefined)
          throw invalid(
            `${place(values, i)}: expected a finite number (${check.type}), got ${describeValue(typeof value === 'bigint' ? Number(value) : value)}`,
          );
        values[i] = checked;
      }
      yield values;
    }
  }

  all(table: string, options: RowsOptions = {}): Row[] {
    return [...this.rows(table, options)];
  }

  private checkSchema(): void {
    for (const table of LIMSIM_TABLES) {
      const req = tableRequirement(this.variant, table.name);
      if (!this.has(table.name)) {
        if (req.mayBeAbsent) continue;
        throw invalid(
          `${this.file}: table ${table.name} is missing; a ${variantName(this.variant)} recording has it (tables found: ${[...this.columns.keys()].join(', ') || 'none'})`,
        );
      }
      const missing = req.required.filter((c) => !this.hasColumn(table.name, c));
      if (missing.length)
        throw invalid(
          `${this.file}: table ${table.name}: column${missing.length > 1 ? 's' : ''} ${missing.join(', ')} missing; ${variantName(this.variant)} writes (${req.required.join(', ')})`,
        );
    }
  }
}

export const variantName = (variant: LimSimVariant): string => (variant === 'limsim' ? 'LimSim' : 'LimSim++');

function checkSqliteHeader(file: string): void {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new SimrecError('not_found', `${file}: no such file`);
    throw new SimrecError('io', `${file}: cannot read: ${(error as Error).message}`, { cause: error });
  }
  const header = Buffer.alloc(16);
  try {
    readSync(fd, header, 0, 16, 0);
  } finally {
    closeSync(fd);
  }
  if (header.toString('latin1') !== 'SQLite format 3\0')
    throw invalid(
      `${file}: not an SQLite database (it begins with ${describeValue(header.toString('latin1').replace(/\0+$/, ''))}); a LimSim recording is the .db file LimSim writes`,
    );
}

function detectVariant(file: string, columns: Map<string, ColumnInfo[]>): LimSimVariant {
  const sim = columns.get('simINFO')?.map((c) => c.name);
  const limsimTables = LIMSIM_TABLES.map((t) => t.name);
  if (!sim) {
    const found = [...columns.keys()];
    const ours = found.filter((t) => (limsimTables as readonly string[]).includes(t));
    throw invalid(
      ours.length
        ? `${file}: table simINFO is missing; a LimSim recording has it (tables found: ${found.join(', ')})`
        : `${file}: not a LimSim recording: none of LimSim's tables (${limsimTables.join(', ')}) is in it; found ${found.join(', ') || 'no tables'}`,
    );
  }
  if (sim.includes('startTime')) return 'limsim';
  if (sim.includes('excuteTime')) return 'limsim++';
  throw invalid(
    `${file}: table simINFO has neither startTime (LimSim) nor excuteTime (LimSim++); its columns are ${sim.join(', ')}`,
  );
}

const KEYS: Record<string, string[]> = {
  frameINFO: ['frame', 'vid'],
  trafficLightStates: ['frame', 'id'],
  evaluationINFO: ['frame'],
  vehicleINFO: ['vid'],
  connectionINFO: ['fromLane', 'toLane'],
  geohashINFO: ['ghx', 'ghy'],
};

/** SQLite's column affinity, from the declared type (its rules, section 3.1 of "Datatypes"). */
type Affinity = 'integer' | 'text' | 'blob' | 'real' | 'numeric';

function affinity(type: string): Affinity {
  if (type.includes('INT')) return 'integer';
  if (/CHAR|CLOB|TEXT/.test(type)) return 'text';
  if (type === '' || type.includes('BLOB')) return 'blob';
  if (/REAL|FLOA|DOUB/.test(type)) return 'real';
  return 'numeric';
}

/** A value as the import reads it, or undefined when a numeric column holds no finite number. */
function checkedValue(value: SqlValue, kind: Affinity): SqlValue | undefined {
  if (kind === 'integer' || kind === 'real') {
    const n = typeof value === 'bigint' ? Number(value) : value;
    return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
  }
  // LimSim writes ids and strings into TEXT columns; a number there (SQLite keeps what it is given in
  // an untyped column) is read as its text.
  if (kind === 'text' && (typeof value === 'number' || typeof value === 'bigint')) return String(value);
  return value;
}

/**
 * What SQLite says about a file it cannot read (a damaged page can be met at any query, long after
 * the open), as simrec's own error naming the file; simrec's errors pass through.
 */
export function asReadError(file: string, error: unknown): Error {
  if (error instanceof SimrecError) return error;
  if (error instanceof Database.SqliteError)
    return invalid(`${file}: cannot read as an SQLite database: ${error.message} (${error.code})`);
  return error as Error;
}
