/* The results database's cubin cache, JSON/CSV export and import: round trips, malformed and
 * hostile input. GPU-free. */
#define _POSIX_C_SOURCE 200809L

#include "db_fixture.h"



static void test_cubins(void) {
  ft_db *db = open_ok(":memory:", FT_DB_CREATE);
  ft_err err;
  unsigned char blob[4096];
  for (size_t i = 0; i < sizeof blob; i++) blob[i] = (unsigned char)(i ^ (i >> 3));
  ASSERT_OK(ft_db_cubin_put(db, "aaaa", "sm_90", 12080, "-lineinfo", blob, sizeof blob, &err));
  ASSERT_OK(ft_db_cubin_put(db, "aaaa", "sm_90", 12080, "-lineinfo", blob, sizeof blob, &err));
  void *data = NULL;
  size_t size = 0;
  ASSERT_OK(ft_db_cubin_get(db, "aaaa", "sm_90", 12080, "-lineinfo", &data, &size, &err));
  ASSERT_TRUE(size == sizeof blob && memcmp(data, blob, size) == 0);
  free(data);
  ASSERT_EQ_INT(ft_db_cubin_get(db, "aaaa", "sm_90", 12090, "-lineinfo", &data, &size, &err), FT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ft_db_cubin_get(db, "aaaa", "sm_80", 12080, "-lineinfo", &data, &size, &err), FT_ERR_NOT_FOUND);
  ASSERT_TRUE(data == NULL);
  ASSERT_OK(ft_db_cubin_put(db, "bbbb", "sm_90", 12080, NULL, "", 0, &err));
  ASSERT_OK(ft_db_cubin_get(db, "bbbb", "sm_90", 12080, NULL, &data, &size, &err));
  ASSERT_EQ_INT(size, 0);
  free(data);
  ft_db_close(db);
}

static void test_roundtrip(void) {
  ft_db *src = open_ok(":memory:", FT_DB_CREATE);
  populate(src);
  for (int with_cubins = 0; with_cubins < 2; with_cubins++) {
    size_t n1, n2, n3;
    char *e1 = export_str(src, with_cubins, &n1);
    ASSERT_CONTAINS(e1, "{\"format\":\"fusedtune-export\",\"version\":2,");
    ASSERT_CONTAINS(e1, "\"gemm_ratio\":0.95}");
    ASSERT_CONTAINS(e1, "\"gemm_ratio\":null}");
    ASSERT_TRUE((strstr(e1, "\"cubins\":[") != NULL) == with_cubins);
    ASSERT_TRUE(strstr(e1, "\"id\"") == NULL && strstr(e1, "_id\"") == NULL);
    ft_db *dst = open_ok(":memory:", FT_DB_CREATE);
    ft_import_stats st;
    ft_err err;
    ASSERT_OK(ft_db_import_json_stats(dst, e1, n1, &st, &err));
    ASSERT_EQ_INT(st.devices, 2);
    ASSERT_EQ_INT(st.problems, 2);
    ASSERT_EQ_INT(st.runs, 2);
    ASSERT_EQ_INT(st.results, 6);
    /* Imported cubins are checked, counted and dropped: never stored, never loaded. */
    ASSERT_EQ_INT(st.cubins, 0);
    ASSERT_EQ_INT(st.cubins_in, with_cubins ? 4 : 0);
    char *e2 = export_str(dst, with_cubins, &n2);
    ASSERT_TRUE(!with_cubins || strstr(e2, "\"cubins\":[]") != NULL);
    free(e1);
    e1 = export_str(src, 0, &n1);
    free(e2);
    e2 = export_str(dst, 0, &n2);
    ASSERT_TRUE(n1 == n2 && strcmp(e1, e2) == 0);
    /* Importing again, into either database, adds nothing and changes nothing. */
    ASSERT_OK(ft_db_import_json_stats(dst, e1, n1, &st, &err));
    ASSERT_EQ_INT(st.devices + st.problems + st.runs + st.results + st.cubins, 0);
    ASSERT_EQ_INT(st.results_in, 6);
    ASSERT_OK(ft_db_import_json_stats(src, e2, n2, &st, &err));
    ASSERT_EQ_INT(st.devices + st.problems + st.runs + st.results + st.cubins, 0);
    char *e3 = export_str(dst, 0, &n3);
    ASSERT_TRUE(n1 == n3 && strcmp(e1, e3) == 0);
    free(e1);
    free(e2);
    free(e3);
    ft_db_close(dst);
  }
  /* Merge: a third database with its own result gains the others', keeps its own. */
  ft_db *third = open_ok(":memory:", FT_DB_CREATE);
  fixture fx = setup(third, "00000000000000aa", 128);
  ASSERT_OK(add_ref(third, &fx, "fused", "mine", "ok", 0.75, 0.75)); /* 0.75 of cuBLAS beats v1's 0.95 */
  size_t n;
  char *e = export_str(src, 1, &n);
  ft_err err;
  ASSERT_OK(ft_db_import_json(third, e, n, &err));
  ft_best b;
  ASSERT_OK(ft_db_best(third, fx.dev, &fx.key, &b, &err));
  ASSERT_EQ_STR(b.variant, "mine");
  free(e);
  e = export_str(third, 0, &n);
  ASSERT_CONTAINS(e, "\"variant\":\"v1\"");
  ASSERT_CONTAINS(e, "\"variant\":\"mine\"");
  free(e);
  ft_db_close(third);

  /* CSV: header, one line per result, RFC 4180 quoting. */
  FILE *f = tmpfile();
  ASSERT_OK(ft_db_export_csv(src, f, &err));
  long len = ftell(f);
  char *csv = malloc((size_t)len + 1);
  rewind(f);
  csv[fread(csv, 1, (size_t)len, f)] = '\0';
  fclose(f);
  ASSERT_TRUE(strncmp(csv, "uuid,created,device,fingerprint,m,n,k,layout,math,epilogue,", 59) == 0);
  ASSERT_CONTAINS(csv, ",\"odd,\"\"name\"\"\n\",");
  ASSERT_CONTAINS(csv, ",\"min(x + bias, c) - c where c = 2\",");
  ASSERT_CONTAINS(csv, ",1.25,1.125,");
  ASSERT_CONTAINS(csv, ",message,run,gemm_ratio\r\n");
  ASSERT_CONTAINS(csv, ",0.95\r\n"); /* v1's gemm_ratio, last */
  int lines = 0;
  for (char *q = csv; (q = strstr(q, "\r\n")) != NULL; q += 2) lines++;
  ASSERT_EQ_INT(lines, 7);
  free(csv);
  ft_db_close(src);
}
/* k_doc with the first occurrence of from replaced by to. */
static char *edit(const char *from, const char *to) {
  const char *hit = strstr(k_doc, from);
  if (!hit) {
    FT_FAIL_AT_("edit: \"%s\" not in the document", from);
    return NULL;
  }
  size_t a = (size_t)(hit - k_doc), fl = strlen(from), tl = strlen(to);
  char *out = malloc(sizeof k_doc + tl);
  memcpy(out, k_doc, a);
  memcpy(out + a, to, tl);
  strcpy(out + a + tl, hit + fl);
  return out;
}

typedef struct bad_case {
  const char *from, *to, *expect;
} bad_case;

static void test_malformed(void) {
  static const bad_case cases[] = {
      {"\"median_ms\":1.5", "\"median_ms\":\"1.5\"", "import: results[0].median_ms: expected a number or null, found a string"},
      {"\"median_ms\":1.5", "\"median_ms\":1e999", "out of range"},
      {"\"median_ms\":1.5", "\"median_ms\":-1", "results[0].median_ms: expected a non-negative"},
      {"\"repeats\":30", "\"repeats\":30.5", "results[0].repeats: expected an integer"},
      {"\"repeats\":30", "\"repeats\":99999999999999999999", "results[0].repeats: expected an integer"},
      {"\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "\"m\":0,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "problems[0].m: expected an integer in 1.."},
      {"\"status\":\"ok\"", "\"status\":\"great\"", "results[0].status: expected one of"},
      {"\"status\":\"ok\",", "", "results[0]: missing field \"status\""},
      {"\"status\":\"ok\"", "\"status\":\"ok\",\"status\":\"ok\"", "duplicate key \"status\""},
      {"\"status\":\"ok\"", "\"status\":\"ok\",\"extra\":1", "results[0]: unknown field \"extra\""},
      {"\"config\":\"{}\"", "\"config\":\"{bm:1}\"", "results[0].config: not valid JSON text"},
      {"\"config\":\"{}\"", "\"config\":{}", "results[0].config: expected a string, found an object"},
      {"\"device\":\"00000000000000aa\",\"problem\"", "\"device\":\"00000000000000ff\",\"problem\"",
       "results[0].device: no device with this fingerprint"},
      {"\"run\":\"11111111", "\"run\":\"31111111", "results[0].run: no run with this uuid"},
      {"\"epilogue_hash\":\"ca47f1151711f396\"},\"strategy\"", "\"epilogue_hash\":\"9999222233334444\"},\"strategy\"",
       "results[0].problem: no such problem"},
      {"\"uuid\":\"22222222-2222-4222-8222-222222222222\"", "\"uuid\":\"not-a-uuid\"", "results[0].uuid: not a lowercase uuid"},
      {"\"created\":\"2026-11-29T08:00:01.000Z\"", "\"created\":\"yesterday\"", "results[0].created: not an ISO-8601"},
      {"\"version\":1", "\"version\":\"1\"", "import: version: expected a positive integer"},
      {"\"format\":\"fusedtune-export\"", "\"format\":\"other\"", "import: format: expected"},
      {"\"best\":[]", "\"best\":{}", "import: best: expected an array"},
      {"\"best\":[]", "\"best\":[1]", "import: best[0]: expected an object"},
      {"\"best\":[]", "\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":3,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJD\"}]",
       "missing field \"best\""},
      {"\"best\":[]", "\"best\":[],\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":2,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJD\"}]",
       "cubins[0].size: differs"},
      {"\"best\":[]", "\"best\":[],\"cubins\":[{\"source_hash\":\"a\",\"arch\":\"sm_90\",\"nvrtc_version\":1,"
       "\"options\":\"\",\"size\":3,\"created\":\"2026-11-29T08:00:01Z\",\"data\":\"QUJ!\"}]",
       "cubins[0].data: not canonical base64"},
      {"\"name\":\"H200\"", "\"name\":\"H\\u0000200\"", "devices[0].name: contains a NUL"},
      {"\"name\":\"H200\"", "\"name\":\"H\xff\"", "invalid UTF-8"},
      {"\"best\":[]\n}\n", "\"best\":[]\n} x", "unexpected text after the JSON value"},
      {"\"version\":1", "\"version\":3", "export version 3, this fusedtune reads up to 2"},
      /* gemm_ratio came with version 2: a version-1 file may lack it, a version-2 one may not. */
      {"\"version\":1", "\"version\":2", "results[0]: missing field \"gemm_ratio\""},
      {"\"created\":\"2026-11-29T08:00:01.000Z\"", "\"created\":\"2026-11-29T08:00:01.000Z\",\"gemm_ratio\":0",
       "results[0].gemm_ratio: expected a positive number below 1e300 or null"},
      {"\"created\":\"2026-11-29T08:00:01.000Z\"", "\"created\":\"2026-11-29T08:00:01.000Z\",\"gemm_ratio\":1e308",
       "results[0].gemm_ratio: expected a positive number below 1e300 or null"},
      {"\"created\":\"2026-11-29T08:00:01.000Z\"", "\"created\":\"2026-11-29T08:00:01.000Z\",\"gemm_ratio\":\"1\"",
       "results[0].gemm_ratio: expected a number or null, found a string"},
  };
  const char *p = tmp_path("malformed.db");
  ft_db *db = open_ok(p, FT_DB_CREATE);
  populate(db);
  size_t n0;
  char *before = export_str(db, 1, &n0);
  ft_err err;
  /* The template itself imports (into a scratch database). */
  ft_db *scratch = open_ok(":memory:", FT_DB_CREATE);
  ASSERT_OK(ft_db_import_json(scratch, k_doc, strlen(k_doc), &err));
  ft_db_close(scratch);

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *doc = edit(cases[i].from, cases[i].to);
    if (!doc) continue;
    ft_status s = ft_db_import_json(db, doc, strlen(doc), &err);
    if (s == FT_OK) FT_FAIL_AT_("case %zu accepted", i);
    ASSERT_TRUE(s == FT_ERR_FORMAT || (s == FT_ERR_VERSION && strstr(doc, "\"version\":3")));
    if (!strstr(err.msg, cases[i].expect))
      FT_FAIL_AT_("case %zu: message \"%s\" lacks \"%s\"", i, err.msg, cases[i].expect);
    free(doc);
  }
  /* Truncations of a real export at every 97th byte, deep nesting, wrong top level. */
  for (size_t cut = 0; cut < n0; cut += 97)
    ASSERT_EQ_INT(ft_db_import_json(db, before, cut, &err), FT_ERR_FORMAT);
  size_t depth = 10000;
  char *deep = malloc(2 * depth + 1);
  memset(deep, '[', depth);
  memset(deep + depth, ']', depth);
  ASSERT_EQ_INT(ft_db_import_json(db, deep, 2 * depth, &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "nesting deeper than 64");
  free(deep);
  ASSERT_EQ_INT(ft_db_import_json(db, "[]", 2, &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "import: top level: expected an object");
  ASSERT_EQ_INT(ft_db_import_json(db, "", 0, &err), FT_ERR_FORMAT);
  ASSERT_EQ_INT(ft_db_import_json(db, NULL, 0, &err), FT_ERR_FORMAT);

  /* Duplicate records within one file. */
  char *two = edit("\"results\":[{", "\"results\":[{\"uuid\":\"22222222-2222-4222-8222-222222222222\","
                   "\"run\":null,\"device\":\"00000000000000aa\",\"problem\":{\"m\":128,\"n\":16384,"
                   "\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue_hash\":"
                   "\"ca47f1151711f396\"},\"strategy\":\"fused\",\"variant\":\"w\",\"config\":\"{}\","
                   "\"status\":\"ok\",\"median_ms\":1,\"min_ms\":1,\"iqr_ms\":null,\"repeats\":30,"
                   "\"rel_err\":null,\"max_abs_err\":null,\"source_hash\":\"\",\"fusedtune_version\":"
                   "\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01Z\"},{");
  ASSERT_EQ_INT(ft_db_import_json(db, two, strlen(two), &err), FT_ERR_FORMAT);
  ASSERT_CONTAINS(err.msg, "results[1]: same uuid as results[0]");
  free(two);

  size_t n1;
  char *after = export_str(db, 1, &n1);
  ASSERT_TRUE(n0 == n1 && strcmp(before, after) == 0);
  free(before);
  free(after);
  ft_db_close(db);
  ft_db_remove_files(p);
}

/* ---------------------------------------------------------------------------------------------
 * Concurrency and read-only use */
int main(void) {
  fixture_init();
  test_cubins();
  test_roundtrip();
  test_malformed();
  return FT_TEST_DONE();
}
