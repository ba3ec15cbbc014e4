/* The public C API without a GPU: argument checks, open/close, lookup hit / miss / nearest /
 * stale on a pretended device, read-only databases, FT_ERR_NO_DEVICE where a GPU is needed. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_internal.h"
#include "codegen.h"
#include "device.h"
#include "ft_test.h"
#include "fusedtune_tool.h"

static char path[512];

static void fake_device(ft_device_info *dev, ft_device_limits *lim) {
  memset(dev, 0, sizeof *dev);
  snprintf(dev->name, sizeof dev->name, "Test GPU H200-like");
  dev->cc_major = 9;
  dev->sm_count = 132;
  dev->mem_bytes = (int64_t)141 << 30;
  ft_device_fingerprint(dev);
  ft_err e;
  ft_limits_for_arch("sm_90", lim, &e);
}

/* Stores a fused result for (m, n, k, epilogue) measured with variant v; hash NULL = today's. */
static void store_result(ft_db *db, int64_t dev_id, int64_t m, int64_t n, int64_t k, const char *epi,
                         const ft_variant *v, double ms, const char *hash) {
  ft_err e;
  ft_epilogue *ep = NULL;
  ASSERT_OK(ft_ep_parse(epi, &ep, &e));
  ft_problem_key key;
  memset(&key, 0, sizeof key);
  key.m = m, key.n = n, key.k = k;
  snprintf(key.layout, sizeof key.layout, "xrow_wrow");
  snprintf(key.math, sizeof key.math, "fp32");
  snprintf(key.epilogue, sizeof key.epilogue, "%s", ft_ep_canonical(ep));
  snprintf(key.epilogue_hash, sizeof key.epilogue_hash, "%s", ft_ep_hash(ep));
  int64_t pid = 0, rid = 0;
  ASSERT_OK(ft_db_upsert_problem(db, &key, &pid, &e));
  ASSERT_OK(ft_db_begin_run(db, dev_id, "{}", 10, &rid, &e));
  ft_kernel_src src;
  ASSERT_OK(ft_codegen_variant(v, ep, &src, &e));
  char name[128], json[512];
  ft_variant_name(v, name, sizeof name);
  ft_variant_json(v, json, sizeof json);
  ft_result_row r = {rid, dev_id, pid, "fused", name, json, "ok", ms, ms, 0.01, 30, 1e-7, 1e-6,
                     hash ? hash : src.hash, "", -1};
  ASSERT_OK(ft_db_insert_result(db, &r, &e));
  ft_result_row eager = {rid, dev_id, pid, "eager", "cuBLAS + 2 kernels", "{}", "ok", ms * 1.2, ms, 0.01, 30,
                         1e-7, 1e-6, "", "", -1};
  ASSERT_OK(ft_db_insert_result(db, &eager, &e));
  ft_kernel_src_free(&src);
  ft_ep_free(ep);
}

static void test_bad_arguments(void) {
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_open(path, FT_OPEN_CREATE, NULL), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_open(path, 0x80, &ctx), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "flags");
  ft_close(ctx);
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  ft_config cfg;
  ft_problem p = {128, 16384, 16384, "minsub", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, NULL, 0, &cfg), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_lookup(ctx, &p, 0, NULL), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_lookup(ctx, &p, 0x40, &cfg), FT_ERR_INVALID_ARG);
  ft_problem bad = p;
  bad.m = 0;
  ASSERT_EQ_INT(ft_lookup(ctx, &bad, 0, &cfg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "positive");
  bad = p;
  bad.k = -5;
  ASSERT_EQ_INT(ft_lookup(ctx, &bad, 0, &cfg), FT_ERR_INVALID_ARG);
  bad = p;
  bad.epilogue = NULL;
  ASSERT_EQ_INT(ft_lookup(ctx, &bad, 0, &cfg), FT_ERR_INVALID_ARG);
  bad = p;
  bad.epilogue = "sigmod(x)";
  ASSERT_EQ_INT(ft_lookup(ctx, &bad, 0, &cfg), FT_ERR_PARSE);
  ASSERT_CONTAINS(ft_errmsg(ctx), "sigmoid");
  bad = p;
  bad.math = (ft_math)7;
  ASSERT_EQ_INT(ft_lookup(ctx, &bad, 0, &cfg), FT_ERR_UNSUPPORTED);
  ft_plan *plan = NULL;
  ASSERT_EQ_INT(ft_plan_create(ctx, &p, NULL, &plan), FT_ERR_INVALID_ARG);
  ASSERT_TRUE(plan == NULL);
  ft_tune_options junk;
  memset(&junk, 0, sizeof junk);
  ASSERT_EQ_INT(ft_tune(ctx, &p, &junk, &cfg), FT_ERR_INVALID_ARG);
  ASSERT_CONTAINS(ft_errmsg(ctx), "FT_TUNE_OPTIONS_INIT");
  ASSERT_EQ_INT(ft_plan_launch(NULL, NULL, 0), FT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ft_plan_launch_ptrs(NULL, NULL, NULL, NULL, NULL, NULL, 0), FT_ERR_INVALID_ARG);
  ft_close(ctx);
  ft_close(NULL);
  ft_plan_destroy(NULL);
}

static char preparing[10000];

static void on_progress(void *user, const ft_tune_progress *u) {
  (void)user;
  if (!strcmp(u->phase, "preparing")) snprintf(preparing, sizeof preparing, "%s", u->message ? u->message : "");
}

static void test_no_device(void) {
  if (ft_test_have_gpu()) {
    fprintf(stderr, "note: a GPU is present: the no-device checks do not apply here\n");
    return;
  }
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  ft_config cfg;
  ft_problem p = {128, 256, 512, "biasrelu", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, &p, 0, &cfg), FT_ERR_NO_DEVICE);
  ASSERT_CONTAINS(ft_errmsg(ctx), "no CUDA device");
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  /* This program holds the library's code itself (tests/): no fusedtune-worker beside it, so
   * candidates would run in here, and the tune's first message says where it looked. */
  unsetenv("FUSEDTUNE_WORKER");
  opt.quiet = 0;
  opt.progress = on_progress;
  ASSERT_EQ_INT(ft_tune(ctx, &p, &opt, &cfg), FT_ERR_NO_DEVICE);
  ASSERT_CONTAINS(preparing, "no worker executable: none at ");
  ASSERT_CONTAINS(preparing, "/libexec/fusedtune/fusedtune-worker (installed) or ");
  ASSERT_CONTAINS(preparing, "/tests/fusedtune-worker (build tree), and $FUSEDTUNE_WORKER unset");
  ASSERT_TRUE(strstr(preparing, "/../") == NULL); /* the paths as the file system names them */
  /* A configuration the space enumerates gets past the parse to the device check. */
  ft_device_limits lim;
  ft_err e;
  ASSERT_OK(ft_limits_for_arch("sm_90", &lim, &e));
  ft_variant *vs = NULL;
  int nv = 0;
  ASSERT_OK(ft_space_enumerate(FT_VK_GEMM, p.m, p.n, p.k, &lim, &vs, &nv, &e));
  ASSERT_TRUE(nv > 0);
  memset(&cfg, 0, sizeof cfg);
  if (nv > 0) ft_variant_json(&vs[0], cfg.config, sizeof cfg.config);
  free(vs);
  ft_plan *plan = NULL;
  ASSERT_EQ_INT(ft_plan_create(ctx, &p, &cfg, &plan), FT_ERR_NO_DEVICE);
  ASSERT_CONTAINS(ft_errmsg(ctx), "no CUDA device");
  ASSERT_TRUE(plan == NULL);
  /* "{}" is refused before any device is needed. */
  snprintf(cfg.config, sizeof cfg.config, "{}");
  ASSERT_EQ_INT(ft_plan_create(ctx, &p, &cfg, &plan), FT_ERR_FORMAT);
  ASSERT_CONTAINS(ft_errmsg(ctx), "variant JSON: empty object");
  ASSERT_TRUE(plan == NULL);
  ft_close(ctx);
}

static ft_variant pick_variant(int64_t m, int64_t n, int64_t k, int64_t m2, int64_t n2, int64_t k2,
                               const ft_device_limits *lim) {
  ft_variant *vs = NULL, out;
  int nv = 0;
  ft_err e;
  memset(&out, 0, sizeof out);
  ASSERT_OK(ft_space_enumerate(FT_VK_GEMM, m, n, k, lim, &vs, &nv, &e));
  for (int i = 0; i < nv; i++)
    if (ft_variant_applicable(&vs[i], m2, n2, k2, lim, NULL, 0)) {
      out = vs[i];
      break;
    }
  free(vs);
  return out;
}

/* The test database with the fake device in it (NULL after a failed assertion). */
static ft_db *open_fake_db(ft_device_info *dev, ft_device_limits *lim, int64_t *dev_id) {
  fake_device(dev, lim);
  ft_err e;
  ft_db *db = NULL;
  ASSERT_OK(ft_db_open(path, FT_DB_CREATE, &db, &e));
  if (db) ASSERT_OK(ft_db_upsert_device(db, dev, dev_id, &e));
  return db;
}

static void test_lookup(void) {
  ft_device_info dev;
  ft_device_limits lim;
  int64_t dev_id = 0;
  ft_db *db = open_fake_db(&dev, &lim, &dev_id);
  if (!db) return;
  ft_variant v = pick_variant(128, 4096, 4096, 256, 4096, 4096, &lim);
  ASSERT_TRUE(v.bm > 0);
  store_result(db, dev_id, 128, 4096, 4096, "minsub", &v, 0.5, NULL);
  store_result(db, dev_id, 64, 64, 64, "minsub", &v, 0.01, "0000000000000000"); /* stale */
  /* A faster result of an older kernel source must not hide the current one. */
  store_result(db, dev_id, 128, 4096, 4096, "minsub", &v, 0.3, "00000000000000ff");
  ft_db_close(db);

  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, 0, &ctx));
  ft__ctx_set_device(ctx, &dev, &lim);
  ft_config cfg;
  /* hit: exact key, written in another spelling of the same epilogue */
  ft_problem p = {128, 4096, 4096, "min(x+bias, c) - c where c = 2.0", FT_MATH_FP32};
  ASSERT_OK(ft_lookup(ctx, &p, 0, &cfg));
  ASSERT_EQ_INT(cfg.exact, 1);
  ASSERT_EQ_STR(cfg.strategy, "fused");
  ASSERT_NEAR(cfg.median_ms, 0.5, 1e-12); /* not the stale 0.3 */
  ASSERT_TRUE(cfg.eager_ms > 0);
  /* miss of the exact key */
  ft_problem other = {256, 4096, 4096, "minsub", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, &other, FT_LOOKUP_EXACT, &cfg), FT_ERR_NOT_FOUND);
  ASSERT_CONTAINS(ft_errmsg(ctx), "nothing tuned");
  ASSERT_EQ_INT(ft_lookup(ctx, &other, FT_LOOKUP_EXACT | FT_LOOKUP_NEAREST, &cfg), FT_ERR_INVALID_ARG);
  /* the same N and K at another M: M bucket 128 serves 256 (beyond the largest bucket), with or
   * without FT_LOOKUP_NEAREST */
  ASSERT_OK(ft_lookup(ctx, &other, 0, &cfg));
  ASSERT_EQ_INT(cfg.exact, FT_MATCH_BUCKET);
  ASSERT_EQ_INT(cfg.tuned_m, 128);
  ASSERT_OK(ft_lookup(ctx, &other, FT_LOOKUP_NEAREST, &cfg));
  ASSERT_EQ_INT(cfg.exact, FT_MATCH_BUCKET);
  ASSERT_EQ_INT(cfg.tuned_m, 128);
  /* another epilogue has nothing, not even nearby */
  ft_problem relu = {128, 4096, 4096, "relu", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, &relu, FT_LOOKUP_NEAREST, &cfg), FT_ERR_NOT_FOUND);
  /* stale: measured with another kernel source, never returned as exact, nor as nearest */
  ft_problem small = {64, 64, 64, "minsub", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, &small, 0, &cfg), FT_ERR_NOT_FOUND);
  ASSERT_CONTAINS(ft_errmsg(ctx), "stale");
  ASSERT_OK(ft_lookup(ctx, &small, FT_LOOKUP_NEAREST, &cfg));
  ASSERT_EQ_INT(cfg.exact, 0);
  ASSERT_EQ_INT(cfg.tuned_m, 128);
  ft_close(ctx);

  /* a read-only file works through FT_OPEN_READONLY */
  ASSERT_OK(chmod(path, 0444));
  ASSERT_OK(ft_open(path, FT_OPEN_READONLY, &ctx));
  ft__ctx_set_device(ctx, &dev, &lim);
  ASSERT_OK(ft_lookup(ctx, &p, 0, &cfg));
  ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
  ASSERT_EQ_INT(ft_tune(ctx, &p, &opt, &cfg), FT_ERR_INVALID_ARG); /* read-only */
  ft_close(ctx);
  chmod(path, 0644);
}

/* M buckets (issue 42): tuned at M = 16, 64, 256 (and 64 at another N, 1024 stale), every M of
 * that N and K is served by the smallest tuned M >= m, beyond 256 by 256; another N only with
 * FT_LOOKUP_NEAREST. */
static void test_buckets(void) {
  ft_device_info dev;
  ft_device_limits lim;
  int64_t dev_id = 0;
  ft_db *db = open_fake_db(&dev, &lim, &dev_id);
  if (!db) return;
  ft_variant v = pick_variant(1, 256, 64, 2048, 256, 64, &lim);
  ASSERT_TRUE(v.bm > 0);
  store_result(db, dev_id, 16, 256, 64, "biasrelu", &v, 0.016, NULL);
  store_result(db, dev_id, 64, 256, 64, "biasrelu", &v, 0.064, NULL);
  store_result(db, dev_id, 256, 256, 64, "biasrelu", &v, 0.256, NULL);
  store_result(db, dev_id, 1024, 256, 64, "biasrelu", &v, 0.001, "0000000000000000"); /* stale */
  store_result(db, dev_id, 64, 512, 64, "biasrelu", &v, 0.5, NULL);
  ft_db_close(db);

  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_READONLY, &ctx));
  ft__ctx_set_device(ctx, &dev, &lim);
  static const struct {
    int64_t m, bucket;
    int exact;
  } cases[] = {{1, 16, FT_MATCH_BUCKET},   {15, 16, FT_MATCH_BUCKET},  {16, 16, FT_MATCH_EXACT},
               {17, 64, FT_MATCH_BUCKET},  {40, 64, FT_MATCH_BUCKET},  {64, 64, FT_MATCH_EXACT},
               {65, 256, FT_MATCH_BUCKET}, {256, 256, FT_MATCH_EXACT}, {257, 256, FT_MATCH_BUCKET},
               {1024, 256, FT_MATCH_BUCKET}, {2000, 256, FT_MATCH_BUCKET}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ft_problem p = {cases[i].m, 256, 64, "relu(x + bias)", FT_MATH_FP32};
    ft_config cfg;
    memset(&cfg, 0, sizeof cfg);
    ASSERT_OK(ft_lookup(ctx, &p, 0, &cfg));
    ASSERT_EQ_INT(cfg.exact, cases[i].exact);
    ASSERT_EQ_INT(cfg.tuned_m, cases[i].bucket);
    ASSERT_EQ_INT(cfg.tuned_n, 256);
    ASSERT_NEAR(cfg.median_ms, (double)cases[i].bucket / 1000, 1e-12);
    /* FT_LOOKUP_EXACT: the exact key only */
    ASSERT_EQ_INT(ft_lookup(ctx, &p, FT_LOOKUP_EXACT, &cfg), cases[i].exact == FT_MATCH_EXACT ? FT_OK : FT_ERR_NOT_FOUND);
  }
  /* Another N: no bucket; the nearest shape only when asked for, marked 0. */
  ft_problem wide = {40, 1024, 64, "biasrelu", FT_MATH_FP32};
  ft_config cfg;
  ASSERT_EQ_INT(ft_lookup(ctx, &wide, 0, &cfg), FT_ERR_NOT_FOUND);
  ASSERT_OK(ft_lookup(ctx, &wide, FT_LOOKUP_NEAREST, &cfg));
  ASSERT_EQ_INT(cfg.exact, FT_MATCH_NEAREST);
  ASSERT_EQ_INT(cfg.tuned_n, 512);
  /* Another mode or epilogue: nothing. */
  ft_problem tf = {40, 256, 64, "biasrelu", FT_MATH_TF32};
  ASSERT_EQ_INT(ft_lookup(ctx, &tf, 0, &cfg), FT_ERR_NOT_FOUND);
  ft_problem relu = {40, 256, 64, "relu", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup(ctx, &relu, 0, &cfg), FT_ERR_NOT_FOUND);
  /* A tolerance picks among exact keys only. */
  ft_problem p40 = {40, 256, 64, "biasrelu", FT_MATH_FP32};
  ASSERT_EQ_INT(ft_lookup_within(ctx, &p40, 1e-3, &cfg), FT_ERR_NOT_FOUND);
  /* By device name, no GPU: the entry says the same. */
  ft_best_entry *entry = malloc(sizeof *entry);
  ASSERT_OK(ft_lookup_entry(ctx, dev.name, &p40, 0, entry));
  ASSERT_EQ_INT(entry->config.exact, FT_MATCH_BUCKET);
  ASSERT_EQ_INT(entry->config.tuned_m, 64);
  free(entry);
  ft_close(ctx);
}

static void test_open(void) {
  char missing[600];
  snprintf(missing, sizeof missing, "%s.missing", path);
  unlink(missing);
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_open(missing, 0, &ctx), FT_ERR_NOT_FOUND);
  ASSERT_TRUE(ctx != NULL && strlen(ft_errmsg(ctx)) > 0);
  ft_close(ctx);
  ASSERT_TRUE(access(missing, F_OK) != 0); /* not created */
  ASSERT_EQ_INT(ft_open(missing, FT_OPEN_READONLY | FT_OPEN_CREATE, &ctx), FT_ERR_INVALID_ARG);
  ft_close(ctx);
  ASSERT_EQ_INT(ft_version_number(), FUSEDTUNE_VERSION_NUMBER);
  ASSERT_EQ_STR(ft_status_string(FT_OK), "success");
  ASSERT_EQ_STR(ft_status_string((ft_status)999), "unknown status");
}

/* A program's own messages in the library's framing (what `tune --problems` and its children
 * send): whole, partial, another type, over the size asked for. */
static void test_messages(void) {
  int sv[2];
  ASSERT_EQ_INT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  ASSERT_EQ_INT(ft_message_send(sv[0], 7u, "hello", 5), 0);
  ASSERT_EQ_INT(ft_message_send(sv[0], 7u, "", 0), 0);
  char buf[256];
  size_t len = 0;
  while (len < 2 * 16 + 5) {
    ssize_t got = recv(sv[1], buf + len, sizeof buf - len, 0);
    if (got <= 0) break;
    len += (size_t)got;
  }
  size_t at = 0, n = 0, size = 0;
  ASSERT_EQ_INT(ft_message_parse(buf, 3, 7u, 100, &at, &n, &size), 0); /* not even a head yet */
  ASSERT_EQ_INT(ft_message_parse(buf, len, 7u, 100, &at, &n, &size), 1);
  ASSERT_EQ_INT((int)n, 5);
  ASSERT_TRUE(memcmp(buf + at, "hello", 5) == 0);
  ASSERT_EQ_INT(ft_message_parse(buf, size - 1, 7u, 100, &at, &n, &size), 0); /* its bytes not all here */
  const size_t first = at + 5;
  ASSERT_EQ_INT(ft_message_parse(buf + first, len - first, 7u, 100, &at, &n, &size), 1);
  ASSERT_EQ_INT((int)n, 0);
  ASSERT_EQ_INT(ft_message_parse(buf, len, 8u, 100, &at, &n, &size), -1); /* another type */
  ASSERT_EQ_INT(ft_message_parse(buf, len, 7u, 4, &at, &n, &size), -1);   /* longer than max */
  close(sv[1]);
  ASSERT_EQ_INT(ft_message_send(sv[0], 7u, "x", 1), -1); /* the peer gone: an error, no SIGPIPE */
  close(sv[0]);
}

/* The modes a tune takes (ft_tune_modes): fp32 tensors without a mode asked for are tuned at fp32
 * accuracy, 3xtf32 first then fp32, on a device with Hopper's tensor cores; fp32 alone before it or
 * when the mode is asked for; any other mode alone. */
static void test_tune_modes(void) {
  ft_device_info dev;
  ft_device_limits lim;
  fake_device(&dev, &lim);
  ft_ctx *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, &ctx));
  ft_math modes[2];
  int n = 0;
  ft_problem p = {128, 1024, 1024, "minsub", FT_MATH_FP32};
  lim.cc_major = 9;
  ft__ctx_set_device(ctx, &dev, &lim);
  ASSERT_OK(ft_tune_modes(ctx, &p, 0, modes, &n));
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(modes[0], FT_MATH_3XTF32);
  ASSERT_EQ_INT(modes[1], FT_MATH_FP32);
  ASSERT_OK(ft_tune_modes(ctx, &p, 1, modes, &n)); /* --math fp32: FFMA alone */
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(modes[0], FT_MATH_FP32);
  p.math = FT_MATH_BF16;
  ASSERT_OK(ft_tune_modes(ctx, &p, 0, modes, &n));
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(modes[0], FT_MATH_BF16);
  p.math = FT_MATH_FP32;
  lim.cc_major = 8; /* no 3xtf32 kernels before sm_90 */
  ft__ctx_set_device(ctx, &dev, &lim);
  ASSERT_OK(ft_tune_modes(ctx, &p, 0, modes, &n));
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(modes[0], FT_MATH_FP32);
  ASSERT_EQ_INT(ft_tune_modes(ctx, NULL, 0, modes, &n), FT_ERR_INVALID_ARG);
  ft_close(ctx);
}

int main(void) {
  test_messages();
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, sizeof path, "%s/test_api_%ld.db", tmp ? tmp : "/tmp", (long)getpid());
  unlink(path);
  test_open();
  test_bad_arguments();
  test_no_device();
  unlink(path);
  test_lookup();
  ft_db_remove_files(path);
  test_buckets();
  ft_db_remove_files(path);
  test_tune_modes();
  ft_db_remove_files(path);
  return FT_TEST_DONE();
}
