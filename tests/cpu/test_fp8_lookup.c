/* query --tolerance (ft_lookup_within) on a bf16 layer also considers its fp8 form, no GPU: a
 * database (imported from an export written here, with the current kernel sources) holding a bf16
 * best and the fp8 best of ft_fp8_epilogue(E) at one shape; a tolerance the fp8 layer's stored
 * error (against the bf16 layer) fits picks fp8 and names its epilogue, a tighter one bf16. */
#include <unistd.h>

#include "cli_run.h"
#include "export_doc.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

typedef struct stored {
  const char *math, *canon, *hash, *variant, *config, *source;
  double fused_ms, rel_err;
} stored;

static void write_export(const char *path, const stored *p, int count) {
  FILE *f = ft_doc_open(path);
  if (!f) return;
  for (int i = 0; i < count; i++) ft_doc_problem(f, i, 1024, 8192, 8192, p[i].math, p[i].canon, p[i].hash);
  ft_doc_runs(f);
  static const char *const strategies[] = {"fused", "eager", "cublas_gemm"};
  for (int j = 0; j < count; j++)
    for (int i = 0; i < 3; i++)
      ft_doc_result(f, j * 3 + i, 1024, 8192, 8192, p[j].math, p[j].hash, strategies[i], i ? "v" : p[j].variant,
                    i ? "{}" : p[j].config, p[j].fused_ms * (i == 0 ? 1.0 : i == 1 ? 1.5 : 1.1), p[j].rel_err,
                    i ? "" : p[j].source);
  ft_doc_end(f);
  fclose(f);
}

/* A current fused configuration of (text, math) at the shape, and the epilogue's canonical form. */
static int fused_of(const char *text, ft_math math, stored *s, ft_variant_list **list, ft_epilogue_info **info) {
  char msg[512];
  const ft_problem p = {1024, 8192, 8192, text, math};
  if (ft_epilogue_inspect(text, info, msg, sizeof msg) != FT_OK || ft_variants(&p, "sm_90", 0, list, msg, sizeof msg) != FT_OK) {
    FT_FAIL_AT_("%s: %s", text, msg);
    return 0;
  }
  for (int i = 0; i < (*list)->count; i++)
    if ((*list)->items[i].strategy == FT_STRATEGY_FUSED) {
      s->variant = (*list)->items[i].name, s->config = (*list)->items[i].config, s->source = (*list)->items[i].source_hash;
      s->canon = (*info)->canonical, s->hash = (*info)->hash, s->math = ft_math_name(math);
      return 1;
    }
  FT_FAIL_AT_("no fused %s variant", ft_math_name(math));
  return 0;
}

int main(void) {
  cli = getenv("FT_CLI");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  if (enter_scratch("fp8_lookup") != 0) RETURN_FAIL("cannot make a scratch folder");
  char fp8_text[512];
  ASSERT_OK(ft_fp8_epilogue("relu(x + bias)", fp8_text, sizeof fp8_text));
  stored p[2];
  memset(p, 0, sizeof p);
  ft_variant_list *lists[2] = {NULL, NULL};
  ft_epilogue_info *infos[2] = {NULL, NULL};
  if (fused_of("relu(x + bias)", FT_MATH_BF16, &p[0], &lists[0], &infos[0]) &&
      fused_of(fp8_text, FT_MATH_FP8, &p[1], &lists[1], &infos[1])) {
    p[0].fused_ms = 0.20, p[0].rel_err = 1.7e-3; /* the bf16 layer */
    p[1].fused_ms = 0.10, p[1].rel_err = 3.6e-2; /* its fp8 form, twice as fast, error against bf16 */
    write_export("f.json", p, 2);
    ASSERT_EQ_INT(run("--db f.db import f.json"), 0);
    static const char q[] = "--db f.db query --shape 1024x8192x8192 --epilogue 'relu(x + bias)' --math bf16 "
                            "--device-name 'H200 SXM' --tolerance";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s 0.05", q);
    ASSERT_EQ_INT(run(cmd), 0);
    ASSERT_CONTAINS(R.out, "problem    1024x8192x8192 fp8, epilogue relu(x * sx * sw + bias) where col sw, row sx");
    ASSERT_CONTAINS(R.out, "rel_err 0.036");
    snprintf(cmd, sizeof cmd, "%s 0.01", q);
    ASSERT_EQ_INT(run(cmd), 0);
    ASSERT_CONTAINS(R.out, "problem    1024x8192x8192 bf16, epilogue relu(x + bias)");
    snprintf(cmd, sizeof cmd, "%s 0.001", q);
    ASSERT_EQ_INT(run(cmd), 3);
    ASSERT_CONTAINS(R.out, "per mode: bf16 0.0017, fp8 0.036");
    ASSERT_EQ_INT(lines(R.out), 1);
    /* a bf16 layer with no valid fp8 form (x twice, a reduction, x2 twice) is looked up in bf16 alone */
    static const char *const no_fp8[] = {"x * sigmoid(x)", "rowsum(x)", "x * x2 + x2"};
    for (int i = 0; i < 3; i++) {
      snprintf(cmd, sizeof cmd, "--db f.db query --shape 1024x8192x8192 --epilogue '%s' --math bf16 "
               "--device-name 'H200 SXM' --tolerance 0.05", no_fp8[i]);
      ASSERT_EQ_INT(run(cmd), 3);
      ASSERT_CONTAINS(R.out, "nothing tuned");
    }
    /* fp16 layers have no fp8 form to look at */
    ASSERT_EQ_INT(run("--db f.db query --shape 1024x8192x8192 --epilogue 'relu(x + bias)' --math fp16 "
                      "--device-name 'H200 SXM' --tolerance 0.05"), 3);
  }
  for (int i = 0; i < 2; i++) ft_variant_list_free(lists[i]), ft_epilogue_info_free(infos[i]);
  if (!ft_test_failures) leave_scratch();
  return FT_TEST_DONE();
}
