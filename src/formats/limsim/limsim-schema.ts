/**
 * LimSim's database schema, as LimSim master (v0.2.x, `simModel/egoTracking/model.py` and
 * `networkBuild.py`) creates it, and what LimSim++ (`LimSim_plus`) changed.
 *
 * The DDL is rebuilt here character for character, indentation and typos included (`RRIMARY KEY`,
 * which SQLite takes as part of a type name, so edgeINFO has no primary key): SQLite keeps the text of
 * each CREATE TABLE in sqlite_master, and an export is checked against LimSim's own file byte for byte.
 */

export interface LimSimColumn {
  name: string;
  /** The column's declaration after its name, exactly as LimSim writes it. */
  decl: string;
}

export interface LimSimTable {
  name: string;
  /** The indentation of LimSim's triple-quoted Python string. */
  indent: number;
  columns: LimSimColumn[];
  /** A table-level PRIMARY KEY clause. */
  primaryKey?: string[];
}

const col = (name: string, decl: string): LimSimColumn => ({ name, decl });

export const LIMSIM_TABLES = [
  {
    name: 'simINFO',
    indent: 24,
    columns: [
      col('startTime', 'TIMESTAMP PRIMARY KEY'),
      col('localPosx', 'REAL'),
      col('localPosy', 'REAL'),
      col('radius', 'REAL'),
      col('egoID', 'TEXT'),
      col('netBoundary', 'TEXT'),
      col('description', 'TEXT'),
      col('note', 'TEXT'),
    ],
  },
  {
    name: 'frameINFO',
    indent: 28,
    columns: [
      col('frame', 'INT NOT NULL'),
      col('vid', 'TEXT NOT NULL'),
      col('vtag', 'TEXT NOT NULL'),
      col('x', 'REAL NOT NULL'),
      col('y', 'REAL NOT NULL'),
      col('yaw', 'REAL NOT NULL'),
      col('speed', 'REAL NOT NULL'),
      col('accel', 'REAL NOT NULL'),
      col('laneID', 'TEXT NOT NULL'),
      col('lanePos', 'REAL NOT NULL'),
      col('routeIdx', 'INT NOT NULL'),
    ],
    primaryKey: ['frame', 'vid'],
  },
  {
    name: 'vehicleINFO',
    indent: 28,
    columns: [
      col('vid', 'TEXT PRIMARY KEY'),
      col('length', 'REAL NOT NULL'),
      col('width', 'REAL NOT NULL'),
      col('maxAccel', 'REAL'),
      col('maxDecel', 'REAL'),
      col('maxSpeed', 'REAL'),
      col('vTypeID', 'TEXT NOT NULL'),
      col('routes', 'TEXT NOT NULL'),
    ],
  },
  {
    name: 'edgeINFO',
    indent: 28,
    columns: [
      col('id', 'TEXT RRIMARY KEY'),
      col('laneNumber', 'INT NOT NULL'),
      col('from_junction', 'TEXT'),
      col('to_junction', 'TEXT'),
    ],
  },
  {
    name: 'laneINFO',
    indent: 28,
    columns: [
      col('id', 'TEXT PRIMARY KEY'),
      col('rawShape', 'TEXT'),
      col('width', 'REAL'),
      col('maxSpeed', 'REAL'),
      col('edgeID', 'TEXT'),
      col('length', 'REAL'),
    ],
  },
  {
    name: 'junctionLaneINFO',
    indent: 28,
    columns: [
      col('id', 'TEXT PRIMARY KEY'),
      col('width', 'REAL'),
      col('maxSpeed', 'REAL'),
      col('length', 'REAL'),
      col('tlLogicID', 'TEXT'),
      col('tlsIndex', 'INT'),
    ],
  },
  {
    name: 'junctionINFO',
    indent: 28,
    columns: [col('id', 'TEXT PRIMARY KEY'), col('rawShape', 'TEXT')],
  },
  {
    name: 'tlLogicINFO',
    indent: 28,
    columns: [col('id', 'TEXT PRIMARY KEY'), col('tlType', 'TEXT'), col('preDefPhases', 'TEXT')],
  },
  {
    name: 'connectionINFO',
    indent: 28,
    columns: [
      col('fromLane', 'TEXT NOT NULL'),
      col('toLane', 'TEXT NOT NULL'),
      col('direction', 'TEXT'),
      col('via', 'TEXT'),
    ],
    primaryKey: ['fromLane', 'toLane'],
  },
  {
    name: 'trafficLightStates',
    indent: 28,
    columns: [
      col('frame', 'INT NOT NULL'),
      col('id', 'TEXT NOT NULL'),
      col('currPhase', 'TEXT'),
      col('nextPhase', 'TEXT'),
      col('switchTime', 'REAL'),
    ],
    primaryKey: ['frame', 'id'],
  },
  {
    name: 'circleObsINFO',
    indent: 28,
    columns: [
      col('id', 'TEXT PRIMARY KEY'),
      col('edgeID', 'TEXT NOT NULL'),
      col('centerx', 'REAL NOT NULL'),
      col('centery', 'REAL NOT NULL'),
      col('radius', 'REAL NOT NULL'),
    ],
  },
  {
    name: 'rectangleObsINFO',
    indent: 28,
    columns: [
      col('id', 'TEXT PRIMARY KEY'),
      col('edgeID', 'TEXT NOT NULL'),
      col('centerx', 'REAL NOT NULL'),
      col('centery', 'REAL NOT NULL'),
      col('length', 'REAL NOT NULL'),
      col('width', 'REAL NOT NULL'),
      col('yaw', 'REAL NOT NULL'),
    ],
  },
  {
    name: 'geohashINFO',
    indent: 28,
    columns: [
      col('ghx', 'INT NOT NULL'),
      col('ghy', 'INT NOT NULL'),
      col('edges', 'TEXT'),
      col('junctions', 'TEXT'),
    ],
    primaryKey: ['ghx', 'ghy'],
  },
  {
    name: 'evaluationINFO',
    indent: 20,
    columns: [
      col('frame', 'INT PRIMARY KEY'),
      col('offset', 'REAL'),
      col('discomfort', 'REAL'),
      col('collision', 'REAL'),
      col('orientation', 'REAL'),
      col('consumption', 'REAL'),
    ],
  },
] as const satisfies readonly LimSimTable[];

export type LimSimTableName = (typeof LIMSIM_TABLES)[number]['name'];

/** The CREATE TABLE text as SQLite keeps it in sqlite_master (it drops LimSim's `IF NOT EXISTS`). */
export function createTableSql(table: LimSimTable): string {
  const pad = ' '.repeat(table.indent);
  const lines = table.columns.map((c) => `${pad}${c.name} ${c.decl}`);
  if (table.primaryKey) lines.push(`${pad}PRIMARY KEY (${table.primaryKey.join(', ')})`);
  return `CREATE TABLE ${table.name}(\n${lines.join(',\n')})`;
}

/**
 * LimSim's replay asks `WHERE vid=? AND frame>=? AND frame<?` for every vehicle on every frame; the
 * primary key (frame, vid) cannot answer it by vid, so exports add this index (LimSim adds none).
 */
export const LIMSIM_EXTRA_INDEXES = ['CREATE INDEX frameINFO_vid_frame ON frameINFO(vid, frame)'];

export const LIMSIM_VARIANTS = ['limsim', 'limsim++'] as const;
export type LimSimVariant = (typeof LIMSIM_VARIANTS)[number];

const columnsOf = (name: LimSimTableName): string[] =>
  LIMSIM_TABLES.find((t) => t.name === name)!.columns.map((c) => c.name);

/**
 * What an import needs from each table, per variant: the columns it reads (missing ones are an
 * error), the ones that may not be NULL, and whether the table may be absent.
 *
 * LimSim++ (`simModel/DBBridge.py`) renamed simINFO's time to `excuteTime` and dropped its other
 * columns, added `type`/`allow`/`disallow` to the lane tables, and in later versions dropped
 * `tlLogicID`, tlLogicINFO and the next-phase columns and replaced evaluationINFO with its own
 * scores; columns it may or may not have are read when present.
 */
export interface TableRequirement {
  required: string[];
  notNull: string[];
  optional: string[];
  /** The table may be missing (LimSim's fixed-scene mode has no evaluationINFO). */
  mayBeAbsent: boolean;
}

const notNullOf = (name: LimSimTableName): string[] =>
  LIMSIM_TABLES.find((t) => t.name === name)!
    .columns.filter((c) => /NOT NULL/.test(c.decl))
    .map((c) => c.name);

function masterRequirement(name: LimSimTableName): TableRequirement {
  return {
    required: columnsOf(name),
    notNull: notNullOf(name),
    optional: [],
    mayBeAbsent: ['evaluationINFO', 'circleObsINFO', 'rectangleObsINFO', 'geohashINFO'].includes(name),
  };
}

export function tableRequirement(variant: LimSimVariant, name: string): TableRequirement {
  if (!LIMSIM_TABLES.some((t) => t.name === name))
    return { required: [], notNull: [], optional: [], mayBeAbsent: true };
  const master = masterRequirement(name as LimSimTableName);
  if (variant === 'limsim') return master;
  switch (name) {
    case 'simINFO':
      return { required: ['egoID'], notNull: [], optional: ['netBoundary'], mayBeAbsent: false };
    case 'laneINFO':
      return { ...master, optional: ['type', 'allow', 'disallow'] };
    case 'junctionLaneINFO':
      return {
        ...master,
        required: ['id', 'width', 'maxSpeed', 'length', 'tlsIndex'],
        optional: ['tlLogicID', 'type', 'allow', 'disallow'],
      };
    case 'tlLogicINFO':
      return { ...master, mayBeAbsent: true };
    case 'trafficLightStates':
      return { ...master, required: ['frame', 'id', 'currPhase'], optional: ['nextPhase', 'switchTime'] };
    case 'evaluationINFO':
      // LimSim++'s offline evaluator writes its own scores; every column but frame is kept as found.
      return { required: ['frame'], notNull: ['frame'], optional: [], mayBeAbsent: true };
    default:
      return master;
  }
}

/** LimSim++'s tables that LimSim master does not have, read when present. */
export const LIMSIM_PLUS_TABLES = ['imageINFO', 'QAINFO', 'resultINFO'] as const;
