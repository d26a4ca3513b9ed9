import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import { json, parse, type Row, type SqliteStoreFile } from './sqlite-store-file.js';

/** SqliteBackend's attachments: a row each, its bytes a blob beside its description. */
export class SqliteAttachments {
  private readonly file: SqliteStoreFile;

  constructor(file: SqliteStoreFile) {
    this.file = file;
  }

  async putAttachment(run: number, a: Attachment): Promise<void> {
    this.file.guard(`attaching ${JSON.stringify(a.name)} to run ${run}`, () => this.putAttachmentNow(run, a));
  }

  private putAttachmentNow(run: number, a: Attachment): void {
    this.file.requireRun(run);
    // Put again under its name, an attachment takes a rowid larger than any before, as a new one does:
    // attachmentsVersion's largest rowid then changes at every put (an upsert kept the old rowid, and
    // a row deleted and inserted again could take back the largest). Immediate: the write lock taken
    // first, waiting for another writer as any write does, rather than a read's snapshot that another
    // process's commit makes too old to write from (SQLite's "database is locked" at once).
    this.file.db
      .transaction(() => {
        const next = this.file
          .stmt('SELECT IFNULL(MAX(rowid), 0) + 1 FROM attachments')
          .pluck()
          .get() as number;
        this.file.stmt('DELETE FROM attachments WHERE run_id = ? AND name = ?').run(run, a.name);
        this.file
          .stmt(
            'INSERT INTO attachments (rowid, run_id, name, media_type, t_us, metadata, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
          )
          .run(next, run, a.name, a.mediaType, a.t ?? null, a.metadata ? json(a.metadata) : null, a.data);
      })
      .immediate();
  }

  async attachmentsVersion(run: number): Promise<string | undefined> {
    if (!this.file.stmt('SELECT 1 FROM runs WHERE id = ?').get(run)) return undefined;
    // From the primary key's index alone (which holds each row's rowid): no attachment's data is read.
    const { n, last } = this.file
      .stmt('SELECT COUNT(*) AS n, MAX(rowid) AS last FROM attachments WHERE run_id = ?')
      .get(run) as { n: number; last: number | null };
    return `${n}:${last ?? 0}`;
  }

  async getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    const row = this.file.stmt('SELECT * FROM attachments WHERE run_id = ? AND name = ?').get(run, name) as
      Row | undefined;
    if (!row) return undefined;
    const data = row.data as Buffer;
    return { ...attachmentFromRow(row), data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  }

  async listAttachments(run: number): Promise<AttachmentInfo[]> {
    const rows = this.file
      .stmt(
        'SELECT run_id, name, media_type, t_us, metadata, length(data) AS size FROM attachments WHERE run_id = ? ORDER BY name',
      )
      .all(run) as Row[];
    return rows.map((row) => ({ ...attachmentFromRow(row), size: row.size as number }));
  }
}

function attachmentFromRow(row: Row): Omit<AttachmentInfo, 'size'> {
  const info: Omit<AttachmentInfo, 'size'> = {
    name: row.name as string,
    mediaType: row.media_type as string,
  };
  if (row.t_us !== null) info.t = row.t_us as number;
  if (row.metadata !== null) info.metadata = parse(row.metadata);
  return info;
}
