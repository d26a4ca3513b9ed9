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
    this.file
      .stmt(
        `INSERT INTO attachments (run_id, name, media_type, t_us, metadata, data) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, name) DO UPDATE SET media_type = excluded.media_type, t_us = excluded.t_us,
           metadata = excluded.metadata, data = excluded.data`,
      )
      .run(run, a.name, a.mediaType, a.t ?? null, a.metadata ? json(a.metadata) : null, a.data);
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
