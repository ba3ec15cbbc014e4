/* libFuzzer target for the import reader: any bytes must be either refused with FT_ERR_FORMAT
 * (or FT_ERR_VERSION) and leave the database unchanged, or imported; an accepted file must
 * export, re-import as a no-op, and import into a fresh database giving the same export. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"

/* Exports db into a malloc'd buffer; NULL on failure. */
static char *export_text(ft_db *db, size_t *len) {
  char *buf = NULL;
  FILE *f = tmpfile();
  if (!f) return NULL;
  ft_err err;
  if (ft_db_export_json(db, f, 1, &err) == FT_OK) {
    long n = ftell(f);
    buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    rewind(f);
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
      *len = (size_t)n;
    } else {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_import: %s\n", what);
    __builtin_trap();
  }
}

/* Whether the last input was imported (1) or refused (0): the corpus replay checks that valid_*
 * seeds import and bad_* ones do not, so a seed that stops importing is noticed. */
int fuzz_accepted = -1;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ft_db *db = NULL;
  ft_err err;
  if (ft_db_open(":memory:", FT_DB_CREATE, &db, &err) != FT_OK) return 0;
  size_t empty_len = 0, len1 = 0, len2 = 0, len3 = 0;
  char *empty = export_text(db, &empty_len);
  ft_status s = ft_db_import_json(db, (const char *)data, size, &err);
  fuzz_accepted = s == FT_OK;
  check(s == FT_OK || s == FT_ERR_FORMAT || s == FT_ERR_VERSION || s == FT_ERR_NOMEM,
        "unexpected import status");
  char *e1 = export_text(db, &len1);
  check(empty && e1, "export failed");
  if (s != FT_OK) {
    check(len1 == empty_len && memcmp(e1, empty, len1) == 0, "a refused import changed the db");
  } else {
    ft_import_stats st;
    check(ft_db_import_json_stats(db, e1, len1, &st, &err) == FT_OK, "re-import failed");
    check(st.devices + st.problems + st.runs + st.results + st.cubins == 0,
          "re-import added rows");
    char *e2 = export_text(db, &len2);
    check(e2 && len2 == len1 && memcmp(e1, e2, len1) == 0, "re-import changed the export");
    free(e2);
    ft_db *fresh = NULL;
    check(ft_db_open(":memory:", FT_DB_CREATE, &fresh, &err) == FT_OK, "second open failed");
    check(ft_db_import_json(fresh, e1, len1, &err) == FT_OK, "import of an export failed");
    char *e3 = export_text(fresh, &len3);
    check(e3 && len3 == len1 && memcmp(e1, e3, len1) == 0, "export differs after a round trip");
    free(e3);
    ft_db_close(fresh);
  }
  free(empty);
  free(e1);
  ft_db_close(db);
  return 0;
}
