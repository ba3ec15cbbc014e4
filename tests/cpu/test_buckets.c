/* M buckets (issue 42) through the CLI, no GPU: a database holding bests at M = 16, 64 and 256 of
 * one N, K (imported from an export written here, with today's kernel sources) serves every M by
 * the smallest tuned M >= it; query says which bucket served, list groups the tuned M values. */
#include <unistd.h>

#include "cli_run.h"
#include "export_doc.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

static const char *g_variant, *g_config, *g_source; /* a current fused configuration */

/* An export of device "H200 SXM" with, per (m, n): fused (the current configuration; median m /
 * 1000 ms), eager and cuBLAS's GEMM, for relu(x + bias) in fp32 at K = 64. */
static void write_export(const char *path, const int ms[][2], int count, const char *canon, const char *hash) {
  FILE *f = ft_doc_open(path);
  if (!f) return;
  for (int i = 0; i < count; i++) ft_doc_problem(f, i, ms[i][0], ms[i][1], 64, "fp32", canon, hash);
  ft_doc_runs(f);
  static const char *const strategies[] = {"fused", "eager", "cublas_gemm"};
  for (int p = 0; p < count; p++)
    for (int i = 0; i < 3; i++) {
      const double ms_fused = ms[p][0] / 1000.0, t = i == 0 ? ms_fused : i == 1 ? ms_fused * 1.5 : ms_fused * 1.1;
      ft_doc_result(f, p * 3 + i, ms[p][0], ms[p][1], 64, "fp32", hash, strategies[i], i ? "v" : g_variant,
                    i ? "{}" : g_config, t, 1e-07, i ? "" : g_source);
    }
  ft_doc_end(f);
  fclose(f);
}

static void test_cli(const char *canon, const char *hash) {
  static const int shapes[][2] = {{16, 256}, {64, 256}, {256, 256}, {64, 512}};
  write_export("b.json", shapes, 4, canon, hash);
  ASSERT_EQ_INT(run("--db b.db import b.json"), 0);
  /* query: the bucket that served, by name */
  ASSERT_EQ_INT(run("--db b.db query --shape 40x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 0);
  ASSERT_CONTAINS(R.out, "problem    40x256x64 fp32, epilogue relu(x + bias) (bucket M=64 serves m=40)\n");
  ASSERT_CONTAINS(R.out, "median     0.0640 ms");
  ASSERT_EQ_INT(run("--db b.db query --shape 1x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 0);
  ASSERT_CONTAINS(R.out, "(bucket M=16 serves m=1)");
  ASSERT_EQ_INT(run("--db b.db query --shape 4096x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 0);
  ASSERT_CONTAINS(R.out, "(bucket M=256 serves m=4096)"); /* beyond the largest bucket */
  ASSERT_EQ_INT(run("--db b.db query --shape 64x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 0);
  ASSERT_TRUE(strstr(R.out, "bucket") == NULL); /* exact */
  ASSERT_CONTAINS(R.out, "problem    64x256x64 fp32, epilogue relu(x + bias)\n");
  ASSERT_EQ_INT(run("--db b.db query --shape 40x256x64 --epilogue biasrelu --device-name 'H200 SXM' --json"), 0);
  ASSERT_CONTAINS(R.out, "\"m\":64,\"n\":256,\"k\":64,");
  ASSERT_CONTAINS(R.out, "\"exact\":false,\"lookup\":\"bucket\",\"bucket_m\":64,\"asked_m\":40,\"stale\":false}");
  /* --exact: no bucket; --nearest for another N */
  ASSERT_EQ_INT(run("--db b.db query --shape 40x256x64 --epilogue biasrelu --device-name 'H200 SXM' --exact"), 3);
  ASSERT_CONTAINS(R.out, "nothing tuned for 40x256x64");
  ASSERT_EQ_INT(run("--db b.db query --shape 40x256x64 --epilogue biasrelu --exact --nearest"), 2);
  ASSERT_CONTAINS(R.out, "--exact and --nearest exclude each other");
  ASSERT_EQ_INT(run("--db b.db query --shape 40x1024x64 --epilogue biasrelu --device-name 'H200 SXM'"), 3);
  ASSERT_EQ_INT(run("--db b.db query --shape 40x1024x64 --epilogue biasrelu --device-name 'H200 SXM' --nearest"), 0);
  ASSERT_CONTAINS(R.out, "(nearest tuned shape ");
  ASSERT_EQ_INT(run("--db b.db query --shape 40x1024x64 --epilogue biasrelu --device-name 'H200 SXM' --nearest "
                    "--json"), 0);
  ASSERT_CONTAINS(R.out, "\"exact\":false,\"lookup\":\"nearest\",\"stale\":false}");
  /* a range is not a query's shape */
  ASSERT_EQ_INT(run("--db b.db query --shape 1..64x256x64 --epilogue biasrelu --device-name 'H200 SXM'"), 2);
  ASSERT_EQ_INT(lines(R.out), 1);

  /* list: the group of N=256 as buckets; N=512's single M is no group */
  ASSERT_EQ_INT(run("--db b.db list"), 0);
  ASSERT_CONTAINS(R.out, "\nM buckets (an M not tuned is served by the smallest tuned M >= it");
  ASSERT_CONTAINS(R.out, "N=256 K=64           fp32   M 16..256 (3 buckets: 16 64 256)  relu(x + bias)\n");
  ASSERT_TRUE(strstr(R.out, "N=512") == NULL);
  ASSERT_EQ_INT(run("--db b.db list --json"), 0);
  ASSERT_CONTAINS(R.out, "\"buckets\":[16,64,256],\"stale\":false}");
  ASSERT_CONTAINS(R.out, "\"m\":64,\"n\":512,");
  ASSERT_CONTAINS(R.out, "\"buckets\":[64],\"stale\":false}");
  ASSERT_EQ_INT(run("list --help"), 0);
  ASSERT_CONTAINS(R.out, "M buckets");
  ASSERT_EQ_INT(run("query --help"), 0);
  ASSERT_CONTAINS(R.out, "--exact");
}

int main(void) {
  cli = getenv("FT_CLI");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  if (enter_scratch("buckets") != 0) RETURN_FAIL("cannot make a scratch folder");
  ft_epilogue_info *info = NULL;
  char msg[512];
  if (ft_epilogue_inspect("biasrelu", &info, msg, sizeof msg) != FT_OK) RETURN_FAIL("biasrelu: %s", msg);
  /* A fused variant of the smallest M that applies to the largest too: one configuration for every bucket. */
  ft_problem small = {1, 256, 64, "biasrelu", FT_MATH_FP32};
  ft_variant_list *list = NULL;
  if (ft_variants(&small, "sm_90", 0, &list, msg, sizeof msg) != FT_OK) RETURN_FAIL("variants: %s", msg);
  for (int i = 0; i < list->count && !g_variant; i++)
    if (list->items[i].strategy == FT_STRATEGY_FUSED)
      g_variant = list->items[i].name, g_config = list->items[i].config, g_source = list->items[i].source_hash;
  if (!g_variant) RETURN_FAIL("no fused variant for 1x256x64");
  test_cli(info->canonical, info->hash);
  ft_variant_list_free(list);
  ft_epilogue_info_free(info);
  if (!ft_test_failures) leave_scratch();
  return FT_TEST_DONE();
}
