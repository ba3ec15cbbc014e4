/* Export documents the CLI tests import (docs/FORMAT.md): one device "H200 SXM" (fingerprint
 * 00000000000000aa) and one run; the caller writes the problems and the results between. */
#ifndef FT_TEST_EXPORT_DOC_H
#define FT_TEST_EXPORT_DOC_H

#include <stdio.h>

#include "ft_test.h"
#include "fusedtune_tool.h"

/* The header through the opening of the problems array. */
static void ft_doc_begin(FILE *f);

/* path opened for writing with the header written; NULL (a failure noted) when it cannot be. */
static FILE *ft_doc_open(const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) fprintf(stderr, "cannot write %s\n", path), ft_test_failures++;
  else ft_doc_begin(f);
  return f;
}

static void ft_doc_begin(FILE *f) {
  fprintf(f,
          "{\"format\":\"fusedtune-export\",\"version\":1,\n"
          "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"H200 SXM\",\"cc_major\":9,"
          "\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
          "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
          "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
          "\"problems\":[");
}

/* Problem number i of the problems array. */
static void ft_doc_problem(FILE *f, int i, int m, int n, int k, const char *math, const char *canon, const char *hash) {
  fprintf(f,
          "%s{\"m\":%d,\"n\":%d,\"k\":%d,\"layout\":\"xrow_wrow\",\"math\":\"%s\",\"epilogue\":\"%s\","
          "\"epilogue_hash\":\"%s\"}",
          i ? "," : "", m, n, k, math, canon, hash);
}

/* After the problems: the run, and the opening of the results array. */
static void ft_doc_runs(FILE *f) {
  fprintf(f,
          "],\n\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
          "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
          "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n\"results\":[");
}

/* Result number i of the run (its uuid's tail) for the problem (m, n, k, math, hash): ok, t ms. */
static void ft_doc_result(FILE *f, int i, int m, int n, int k, const char *math, const char *hash,
                          const char *strategy, const char *variant, const char *config, double t, double rel_err,
                          const char *source) {
  fprintf(f,
          "%s\n{\"uuid\":\"22222222-2222-4222-8222-%012d\","
          "\"run\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
          "\"problem\":{\"m\":%d,\"n\":%d,\"k\":%d,\"layout\":\"xrow_wrow\",\"math\":\"%s\","
          "\"epilogue_hash\":\"%s\"},\"strategy\":\"%s\",\"variant\":\"%s\",\"config\":",
          i ? "," : "", i, m, n, k, math, hash, strategy, variant);
  ft_write_json_string(f, config);
  fprintf(f,
          ",\"status\":\"ok\",\"median_ms\":%.17g,\"min_ms\":%.17g,\"iqr_ms\":null,"
          "\"repeats\":30,\"rel_err\":%.17g,\"max_abs_err\":null,\"source_hash\":\"%s\","
          "\"fusedtune_version\":\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01.000Z\"}",
          t, t, rel_err, source);
}

/* The end of the document. */
static void ft_doc_end(FILE *f) { fprintf(f, "],\n\"best\":[]\n}\n"); }

#endif
