/* The cubin cache: compiled kernels keyed by (source hash, arch, NVRTC version, options), so a
 * program launching a tuned kernel does not pay NVRTC again. */
#include <stdlib.h>
#include <string.h>

#include "db_columns.h"
#include "db_internal.h"

/* The key, at the same numbers in FT_ST_CUBIN_GET and in the insert. */
static void bind_cubin_key(sqlite3_stmt *st, const char *source_hash, const char *arch,
                           int nvrtc_version, const char *options) {
  sqlite3_bind_text(st, FT_COL(cubins, source_hash), source_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, FT_COL(cubins, arch), arch, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, FT_COL(cubins, nvrtc_version), nvrtc_version);
  sqlite3_bind_text(st, FT_COL(cubins, options), options ? options : "", -1, SQLITE_STATIC);
}

static ft_status copy_blob(ft_db *db, sqlite3_stmt *st, void **data, size_t *size, ft_err *err) {
  const void *blob = sqlite3_column_blob(st, 0);
  size_t n = (size_t)sqlite3_column_bytes(st, 0);
  if (!blob && n) return ft__db_error(db, err, sqlite3_errcode(db->h), "reading a cubin");
  void *copy = malloc(n ? n : 1);
  if (!copy) return ft__fail(err, FT_ERR_NOMEM, "out of memory reading a cubin of %zu bytes", n);
  if (n) memcpy(copy, blob, n);
  *data = copy;
  *size = n;
  return FT_OK;
}

ft_status ft_db_cubin_get(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, void **data, size_t *size, ft_err *err) {
  FT_TRY(ft__db_need(err, db && source_hash && arch && data && size,
                     "ft_db_cubin_get: NULL argument"));
  *data = NULL;
  *size = 0;
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_CUBIN_GET, err);
  if (!st) return err ? err->status : FT_ERR_DB;
  bind_cubin_key(st, source_hash, arch, nvrtc_version, options);
  int rc = sqlite3_step(st);
  ft_status s;
  if (rc == SQLITE_ROW)
    s = copy_blob(db, st, data, size, err);
  else if (rc == SQLITE_DONE)
    s = ft__fail(err, FT_ERR_NOT_FOUND, "database %s: no cached cubin for %s on %s", db->path,
                 source_hash, arch);
  else
    s = ft__db_error(db, err, rc, "reading a cubin");
  sqlite3_reset(st);
  return s;
}

ft_status ft_db_cubin_put(ft_db *db, const char *source_hash, const char *arch, int nvrtc_version,
                          const char *options, const void *data, size_t size, ft_err *err) {
  FT_TRY(ft__db_need(err, db && source_hash && arch && (data || !size),
                     "ft_db_cubin_put: NULL argument"));
  FT_TRY(ft__db_need(err, size <= (size_t)INT32_MAX, "ft_db_cubin_put: cubin larger than 2 GiB"));
  FT_TRY(ft__db_begin_write(db, "storing a cubin", err));
  sqlite3_stmt *st = ft__db_stmt(db, FT_ST_CUBIN_PUT, err);
  ft_status s = st ? FT_OK : (err ? err->status : FT_ERR_DB);
  if (s == FT_OK) {
    bind_cubin_key(st, source_hash, arch, nvrtc_version, options);
    /* A zero-length blob must still be a BLOB, not NULL, for the NOT NULL column. */
    sqlite3_bind_blob64(st, FT_COL(cubins, data), size ? data : "", (sqlite3_uint64)size,
                        SQLITE_STATIC);
    sqlite3_bind_int64(st, FT_COL(cubins, size), (sqlite3_int64)size);
    s = ft__db_step_done(db, st, "storing a cubin", err);
  }
  return ft__db_finish(db, s, "storing a cubin", err);
}
