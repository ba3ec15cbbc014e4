/* query, list and report over what the database holds but cannot serve as it stands (issue 40):
 * results measured with an older kernel source (stale), device names given wrongly or not at
 * all, long epilogues and non-ASCII device names in list's columns. Through $FT_CLI, no GPU. */
#include <sys/stat.h>
#include <unistd.h>

#include "ft_test.h"
#include "cli_run.h"
#include "db_fixture.h"
#include "epilogue.h"
#include "fusedtune_tool.h"

static char g_canon[256], g_hash[64]; /* of the epilogue the fixture stores */

/* The fused result's variant, configuration (JSON text) and source hash: by default "abcd", which
 * no kernel of today hashes to (stale); write_current sets today's. */
static const char *g_variant = "v0", *g_config = "{}", *g_source = "abcd";
static int g_n = 256;

/* An export of one device (name) with results for epilogue canon (hash) at 128xg_nx64 in fp32:
 * fused (g_variant), eager and cuBLAS's GEMM. */
static void write_stale(const char *path, const char *device, const char *canon, const char *hash) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    FT_FAIL_AT_("cannot write %s", path);
    return;
  }
  fprintf(f,
          "{\"format\":\"fusedtune-export\",\"version\":1,\n"
          "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"%s\",\"cc_major\":9,"
          "\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
          "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
          "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
          "\"problems\":[{\"m\":128,\"n\":%d,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
          "\"epilogue\":\"%s\",\"epilogue_hash\":\"%s\"}],\n"
          "\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
          "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
          "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n\"results\":[",
          device, g_n, canon, hash);
  static const char *const strategies[] = {"fused", "eager", "cublas_gemm"};
  static const double ms[] = {0.5, 0.6, 0.55};
  for (int i = 0; i < 3; i++) {
    fprintf(f,
            "%s\n{\"uuid\":\"22222222-2222-4222-8222-%012d\","
            "\"run\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
            "\"problem\":{\"m\":128,\"n\":%d,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
            "\"epilogue_hash\":\"%s\"},\"strategy\":\"%s\",\"variant\":\"%s\",\"config\":",
            i ? "," : "", i + g_n, g_n, hash, strategies[i], i ? "v" : g_variant);
    ft_write_json_string(f, i ? "{}" : g_config);
    fprintf(f,
            ",\"status\":\"ok\",\"median_ms\":%g,\"min_ms\":%g,\"iqr_ms\":null,"
            "\"repeats\":30,\"rel_err\":1e-07,\"max_abs_err\":null,\"source_hash\":\"%s\","
            "\"fusedtune_version\":\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01.000Z\"}",
            ms[i], ms[i], i ? "" : g_source);
  }
  fprintf(f, "],\n\"best\":[]\n}\n");
  fclose(f);
}

/* Item 5: by tolerance or not, a stale key gets one message, naming the expression. */
static void test_stale_query(void) {
  write_stale("stale.json", "H200 SXM", g_canon, g_hash);
  ASSERT_EQ_INT(run("--db s.db import stale.json"), 0);
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 3);
  char plain[sizeof R.out];
  snprintf(plain, sizeof plain, "%s", R.out);
  ASSERT_CONTAINS(plain, "only a stale result for 128x256x64, epilogue 'relu(x + bias)', fp32 on H200 SXM");
  /* The advice names the database (issue 58 item 6: d57500e dropped --db, so that followed as
   * written it tuned ./fusedtune.db). */
  ASSERT_CONTAINS(plain, "tune it again: fusedtune --db 's.db' tune --shape 128x256x64 --epilogue 'relu(x + bias)' "
                         "--math fp32");
  ASSERT_EQ_INT(lines(plain), 1);
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name 'H200 SXM' "
                    "--tolerance 1e-3"), 3);
  ASSERT_EQ_STR(R.out, plain);
}

/* Item 6: no GPU, a near-miss name, an empty or huge name. */
static void test_device_names(void) {
  if (!ft_test_have_gpu()) {
    ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu"), 1);
    ASSERT_CONTAINS(R.out, "no CUDA device");
    ASSERT_CONTAINS(R.out, "add --device-name NAME");
    ASSERT_EQ_INT(lines(R.out), 1);
  }
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name 'h200 sxm'"), 3);
  ASSERT_CONTAINS(R.out, "no device named \"h200 sxm\" (did you mean \"H200 SXM\"?)");
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name A100"), 3);
  ASSERT_CONTAINS(R.out, "(stored: \"H200 SXM\")");
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name A100 --tolerance 1"), 3);
  ASSERT_CONTAINS(R.out, "(stored: \"H200 SXM\")");
  ASSERT_EQ_INT(run("--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name ''"), 2);
  ASSERT_CONTAINS(R.out, "--device-name is empty");
  char a[12000];
  int n = snprintf(a, sizeof a, "--db s.db query --shape 128x256x64 --epilogue biasrelu --device-name ");
  memset(a + n, 'G', 10000);
  a[n + 10000] = 0;
  ASSERT_EQ_INT(run(a), 2);
  ASSERT_CONTAINS(R.out, "--device-name is 10000 bytes long");
  ASSERT_TRUE(strlen(R.out) < 300);
  /* The library's own check, for callers other than the CLI. */
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_open("s.db", FT_OPEN_READONLY, &ctx), FT_OK);
  ft_problem p = {128, 256, 64, "biasrelu", FT_MATH_FP32};
  ft_best_entry e;
  ASSERT_EQ_INT(ft_lookup_entry(ctx, "", &p, 0, &e), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_lookup_entry(ctx, a + n, &p, 0, &e), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(strlen(ft_errmsg(ctx)) < 200);
  ft_close(ctx);
}

/* Item 8: list shows the epilogue whole, and counts columns, not bytes or characters. */
static void test_list_columns(void) {
  ft_epilogue *ep = NULL;
  ft_err err;
  if (ft_ep_parse("min(x + bias, c) - c where c = 2", &ep, &err) != FT_OK) {
    FT_FAIL_AT_("%s", err.msg);
    return;
  }
  /* e-acute (2 bytes, 1 column), full-width letters and CJK (3 bytes, 2 columns): 19 columns */
  write_stale("wide.json", "T\xc3\xa9sla \xef\xbc\xa8\xef\xbc\x92\xef\xbc\x90\xef\xbc\x90 \xe6\x97\xa5\xe6\x9c\xac",
              ft_ep_canonical(ep), ft_ep_hash(ep));
  ft_ep_free(ep);
  ASSERT_EQ_INT(run("--db w.db import wide.json"), 0);
  ASSERT_EQ_INT(run("--db w.db list"), 0);
  ASSERT_CONTAINS(R.out, "min(x + bias, c) - c where c = 2");
  /* 19 columns, padded to 24, then the separator: 6 spaces before the shape */
  ASSERT_CONTAINS(R.out, "\xe6\x97\xa5\xe6\x9c\xac      128x256x64 ");
  const char *row = strstr(R.out, "\n");
  ASSERT_TRUE(row && strstr(R.out, "shape") - R.out == 25);
}

/* Item 4: list, list --json and report mark a stale best and say how to tune it again; a
 * current one beside it is not marked. */
static void test_stale_marked(void) {
  /* A current best for 128x512x64: the first fused variant listed, with today's source hash. */
  ft_problem pr = {128, 512, 64, "biasrelu", FT_MATH_FP32};
  ft_variant_list *list = NULL;
  char msg[512];
  ASSERT_EQ_INT(ft_variants(&pr, "sm_90", 0, &list, msg, sizeof msg), FT_OK);
  if (!list) return;
  for (int i = 0; i < list->count; i++)
    if (list->items[i].strategy == FT_STRATEGY_FUSED) {
      g_variant = list->items[i].name, g_config = list->items[i].config, g_source = list->items[i].source_hash;
      break;
    }
  g_n = 512;
  write_stale("current.json", "H200 SXM", g_canon, g_hash);
  g_variant = "v0", g_config = "{}", g_source = "abcd", g_n = 256;
  ft_variant_list_free(list);
  ASSERT_EQ_INT(run("--db s.db import current.json"), 0);
  ASSERT_EQ_INT(run("--db s.db query --shape 128x512x64 --epilogue biasrelu --device-name 'H200 SXM'"), 0);

  ASSERT_EQ_INT(run("--db s.db list"), 0);
  const char *stale_row = strstr(R.out, "128x256x64"), *current_row = strstr(R.out, "128x512x64");
  ASSERT_TRUE(stale_row && current_row);
  if (stale_row && current_row) {
    ASSERT_TRUE(strstr(stale_row, "stale") < strchr(stale_row, '\n')); /* in its speedup column */
    ASSERT_TRUE(strstr(stale_row, "1.200x") == NULL || strstr(stale_row, "1.200x") > strchr(stale_row, '\n'));
    ASSERT_TRUE(strstr(current_row, "1.200x") < strchr(current_row, '\n'));
  }
  ASSERT_CONTAINS(R.out, "stale: measured with an older kernel source");
  ASSERT_CONTAINS(R.out, "  fusedtune --db 's.db' tune --shape 128x256x64 --epilogue 'relu(x + bias)' --math fp32\n");
  ASSERT_TRUE(strstr(R.out, "--shape 128x512x64") == NULL);

  ASSERT_EQ_INT(run("--db s.db list --json"), 0);
  ASSERT_CONTAINS(R.out, "\"stale\":true,\"tune_again\":\"fusedtune --db 's.db' tune --shape 128x256x64 --epilogue "
                         "'relu(x + bias)' --math fp32\"}");
  ASSERT_CONTAINS(R.out, "\"stale\":false}");

  ASSERT_EQ_INT(run("--db s.db report -o stale.html"), 0);
  ASSERT_CONTAINS(R.out, "1 of them stale");
  size_t n = 0;
  char *html = read_file("stale.html", &n);
  ASSERT_TRUE(html != NULL);
  if (html) {
    ASSERT_CONTAINS(html, "<span class=\"stale\">stale</span>");
    ASSERT_CONTAINS(html, "Tune it again: <code>fusedtune --db &#39;s.db&#39; tune --shape 128x256x64 --epilogue "
                          "&#39;relu(x + bias)&#39; --math fp32</code>");
    ASSERT_TRUE(strstr(html, "--shape 128x512x64") == NULL);
    free(html);
  }
}

/* The smaller items: an unknown --arch, a CSV import, --seed 0, variants' source hashes. */
static void test_small_items(void) {
  ASSERT_EQ_INT(run("variants --shape 8x8x8 --arch sm_1000"), 2);
  ASSERT_CONTAINS(R.out, "architecture \"sm_1000\" is not known to fusedtune (known: sm_80, sm_89, sm_90, sm_90a)");
  ASSERT_TRUE(strstr(R.out, "limits:") == NULL);
  ASSERT_EQ_INT(run("--db s.db export --format csv --out s.csv"), 0);
  ASSERT_EQ_INT(run("--db csv.db import s.csv"), 1);
  ASSERT_CONTAINS(R.out, "this is a CSV export: CSV is export-only");
  ASSERT_TRUE(access("csv.db", F_OK) != 0);
  /* --seed 0 is the default seed, as the exports' "seed":0 says; checked before any device */
  ASSERT_EQ_INT(run("tune --shape 8x8x8 --seed -1"), 2);
  ASSERT_CONTAINS(R.out, "--seed '-1' must be an integer from 0 to 2147483647");
  if (!ft_test_have_gpu()) {
    ASSERT_EQ_INT(run("--db seed.db tune --shape 8x8x8 --seed 0"), 1);
    ASSERT_CONTAINS(R.out, "no CUDA device");
  }
  /* variants --help promises each variant's source hash: the text shows it */
  ASSERT_EQ_INT(run("variants --shape 8x8x8 --arch sm_90 --json"), 0);
  const char *h = strstr(R.out, "\"source_hash\":\"");
  ASSERT_TRUE(h != NULL);
  if (h) {
    char hash[17];
    snprintf(hash, sizeof hash, "%.16s", h + 15);
    ASSERT_EQ_INT(run("variants --shape 8x8x8 --arch sm_90"), 0);
    ASSERT_CONTAINS(R.out, hash);
  }
}

int main(void) {
  cli = getenv("FT_CLI");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  if (enter_scratch("hardening_query") != 0) RETURN_FAIL("cannot make a scratch folder");
  ft_epilogue *ep = NULL;
  ft_err err;
  if (ft_ep_parse("biasrelu", &ep, &err) != FT_OK) RETURN_FAIL("biasrelu: %s", err.msg);
  snprintf(g_canon, sizeof g_canon, "%s", ft_ep_canonical(ep));
  snprintf(g_hash, sizeof g_hash, "%s", ft_ep_hash(ep));
  ft_ep_free(ep);
  const char *only = getenv("FT_TEST_ONLY");
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"stale_query", test_stale_query}, {"device_names", test_device_names},
               {"list_columns", test_list_columns}, {"small_items", test_small_items},
               {"stale_marked", test_stale_marked}};
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
    if (!only || strstr(tests[i].name, only)) tests[i].fn();
  if (!ft_test_failures) leave_scratch();
  return FT_TEST_DONE();
}
