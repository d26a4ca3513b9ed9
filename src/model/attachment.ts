import { describeValue, invalid } from './errors.js';
import { checkJsonValue, type JsonObject } from './json.js';

/** A named blob kept with a run: an image, a depth map, a point cloud, the scenario binary... */
export interface Attachment {
  /** Unique within the run; a relative path such as `camera/rgb_00001.png` is fine, `..` is not. */
  name: string;
  mediaType: string;
  /** When it was taken (microseconds), if it belongs to a moment of the run. */
  t?: number;
  data: Uint8Array;
  metadata?: JsonObject;
}

export type AttachmentInfo = Omit<Attachment, 'data'> & { size: number };

/** Attachments larger than this are refused: one sample is never a gigabyte. */
export const MAX_ATTACHMENT_BYTES = 512 * 1024 * 1024;

export function validateAttachment(a: Attachment): Attachment {
  const name = a?.name;
  if (
    typeof name !== 'string' ||
    name === '' ||
    name.length > 1024 ||
    name.startsWith('/') ||
    name.includes('\\') ||
    name.includes('\0') ||
    name.split('/').some((part) => part === '' || part === '.' || part === '..')
  )
    throw invalid(
      `attachment.name: expected a relative name without '..', '.', '\\' or empty parts, got ${describeValue(name)}`,
    );
  if (typeof a.mediaType !== 'string' || !/^[\w.+-]+\/[\w.+-]+$/.test(a.mediaType))
    throw invalid(
      `attachment ${name}.mediaType: expected a media type like image/png, got ${describeValue(a.mediaType)}`,
    );
  if (a.t !== undefined && !Number.isSafeInteger(a.t))
    throw invalid(`attachment ${name}.t: expected integer microseconds, got ${describeValue(a.t)}`);
  if (!(a.data instanceof Uint8Array))
    throw invalid(`attachment ${name}.data: expected bytes, got ${describeValue(a.data)}`);
  if (a.data.byteLength > MAX_ATTACHMENT_BYTES)
    throw invalid(
      `attachment ${name}: ${a.data.byteLength} bytes exceeds the limit of ${MAX_ATTACHMENT_BYTES}`,
    );
  if (a.metadata !== undefined) checkJsonValue(a.metadata, `attachment ${name}.metadata`);
  return a;
}
