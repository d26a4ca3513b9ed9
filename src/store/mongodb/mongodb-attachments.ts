import { Binary, ObjectId } from 'mongodb';
import type { Attachment, AttachmentInfo } from '../../model/attachment.js';
import { bytes, DURABLE, type AttachmentDoc, type MongoStore } from './mongodb-store.js';

/** Attachments above this go to GridFS-style parts: a document may not exceed 16 MB. */
const ATTACHMENT_PART_BYTES = 8 * 1024 * 1024;

/** MongoBackend's attachments: a document each, its bytes in it or, when large, in parts beside it. */
export class MongoAttachments {
  private readonly store: MongoStore;

  constructor(store: MongoStore) {
    this.store = store;
  }

  async putAttachment(run: number, a: Attachment): Promise<void> {
    await this.store.requireRun(run);
    const key = { run, name: a.name };
    const parts = Math.ceil(a.data.byteLength / ATTACHMENT_PART_BYTES);
    // Parts first, the document that names them last: a reader never finds a document without its parts.
    await this.store.attachmentParts().deleteMany({ '_id.run': run, '_id.name': a.name });
    if (parts > 1)
      for (let p = 0; p < parts; p++)
        await this.store.attachmentParts().insertOne(
          {
            _id: { ...key, part: p },
            data: new Binary(a.data.subarray(p * ATTACHMENT_PART_BYTES, (p + 1) * ATTACHMENT_PART_BYTES)),
          },
          { writeConcern: DURABLE },
        );
    const doc: AttachmentDoc = {
      _id: key,
      mediaType: a.mediaType,
      size: a.data.byteLength,
      parts: parts > 1 ? parts : 0,
      // ObjectIds grow with their creation time: the run's largest changes at every put (attachmentsVersion).
      written: new ObjectId(),
    };
    if (a.t !== undefined) doc.t = a.t;
    if (a.metadata !== undefined) doc.metadata = a.metadata;
    if (parts <= 1) doc.data = new Binary(a.data);
    await this.store.attachments().replaceOne({ _id: key }, doc, { upsert: true, writeConcern: DURABLE });
  }

  async getAttachment(run: number, name: string): Promise<Attachment | undefined> {
    const doc = await this.store.attachments().findOne({ _id: { run, name } });
    if (!doc) return undefined;
    let data: Uint8Array;
    if (doc.parts > 0) {
      const parts = await this.store
        .attachmentParts()
        .find({ '_id.run': run, '_id.name': name })
        .sort({ '_id.part': 1 })
        .toArray();
      data = new Uint8Array(doc.size);
      let offset = 0;
      for (const p of parts) {
        const b = bytes(p.data);
        data.set(b, offset);
        offset += b.length;
      }
    } else data = doc.data ? bytes(doc.data) : new Uint8Array(0);
    return { ...attachmentInfo(doc), data };
  }

  async attachmentsVersion(run: number): Promise<string | undefined> {
    if (!(await this.store.runs().findOne({ _id: run }, { projection: { _id: 1 } }))) return undefined;
    const [summary] = await this.store
      .attachments()
      .aggregate<{ n: number; last: ObjectId | null }>([
        { $match: { '_id.run': run } },
        { $group: { _id: null, n: { $sum: 1 }, last: { $max: '$written' } } },
      ])
      .toArray();
    return `${summary?.n ?? 0}:${summary?.last?.toHexString() ?? ''}`;
  }

  async listAttachments(run: number): Promise<AttachmentInfo[]> {
    const docs = await this.store
      .attachments()
      .find({ '_id.run': run }, { projection: { data: 0 } })
      .sort({ '_id.name': 1 })
      .toArray();
    return docs.map((d) => ({ ...attachmentInfo(d), size: d.size }));
  }
}

function attachmentInfo(doc: AttachmentDoc): Omit<AttachmentInfo, 'size'> {
  const info: Omit<AttachmentInfo, 'size'> = { name: doc._id.name, mediaType: doc.mediaType };
  if (doc.t !== undefined) info.t = doc.t;
  if (doc.metadata !== undefined) info.metadata = doc.metadata;
  return info;
}
