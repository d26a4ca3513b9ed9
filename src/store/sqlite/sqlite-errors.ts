/** SQLite could not write (a read-only file, a full disk): not a reason to refuse reading. */
export function isCannotWrite(error: unknown): boolean {
  const code = (error as { cause?: { code?: string } }).cause?.code ?? (error as { code?: string }).code;
  return (
    code === 'SQLITE_READONLY' ||
    code === 'SQLITE_FULL' ||
    code === 'SQLITE_CANTOPEN' ||
    code === 'SQLITE_IOERR'
  );
}
