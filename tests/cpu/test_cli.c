/* The command line as a person uses it, without a GPU: help, usage errors (exit 2, one line),
 * database commands, export -> import -> export round trip, no-device failures. */
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cli_run.h"
#include "ft_test.h"


static void test_help(void) {
  ASSERT_EQ_INT(run("--help"), 0);
  ASSERT_CONTAINS(R.out, "commands:");
  ASSERT_CONTAINS(R.out, "MxNxK");
  ASSERT_EQ_INT(run("--version"), 0);
  ASSERT_CONTAINS(R.out, "fusedtune 0.");
  const char *cmds[] = {"tune", "query", "list", "export", "import", "init", "variants", "epilogue", "devices", "bench"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char a[64];
    snprintf(a, sizeof a, "%s --help", cmds[i]);
    ASSERT_EQ_INT(run(a), 0);
    ASSERT_CONTAINS(R.out, "usage: fusedtune");
  }
  ASSERT_EQ_INT(run(""), 2);
  ASSERT_EQ_INT(run("frobnicate"), 2);
  ASSERT_CONTAINS(R.out, "unknown command");
}

static void test_usage_errors(void) {
  const char *bad[] = {
      "tune --shape 0x1x1 --epilogue none",         "tune --shape -1x2x3 --epilogue none",
      "tune --shape axbxc --epilogue none",         "tune --shape 1x2 --epilogue none",
      "tune --shape 99999999999x1x1 --epilogue none", "tune --shape 1x2x3x4",
      "tune --shape 8x8x8 --epilogue 'sigmod(x)'",  "tune --shape 8x8x8 --epilogue 'x; system(1)'",
      "tune --shape 8x8x8 --math fp64",             "tune --shape 8x8x8 --strategy best",
      "tune --shape 8x8x8 --budget -3",             "tune --shape 8x8x8 --repeats 3",
      "tune --epilogue minsub",                     "tune --shape",
      "--shape 0x8x8 --epilogue minsub",            "query --shape 8x8x8",
      "export --format xml",                        "import",
      "epilogue 'max(x,'",                          "variants --shape 8x8x8 --arch sm_12",
      "tune --shape 8x8x8 --epilogue 'rowsum(softmax(x))'", "tune --shape 8x9x8 --epilogue 'groupnorm(x, 2)'",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int code = run(bad[i]);
    if (code != 2 || lines(R.out) != 1)
      FT_FAIL_AT_("'%s' gave exit %d with %d line(s): %s", bad[i], code, lines(R.out), R.out);
  }
  ASSERT_TRUE(access("fusedtune.db", F_OK) != 0); /* bad input created no database */
}

static void test_epilogue_cmd(void) {
  ASSERT_EQ_INT(run("epilogue minsub"), 0);
  ASSERT_CONTAINS(R.out, "canonical");
  ASSERT_EQ_INT(run("epilogue 'relu(x+bias)' --json"), 0);
  ASSERT_CONTAINS(R.out, "\"canonical\":\"relu(x + bias)\"");
  ASSERT_EQ_INT(run("epilogue 'sigmod(x)'"), 2);
  ASSERT_CONTAINS(R.out, "did you mean 'sigmoid'");
  ASSERT_EQ_INT(run("epilogue 'logsumexp(x+bias)'"), 0);
  ASSERT_CONTAINS(R.out, "logsumexp(x + bias)");
  ASSERT_CONTAINS(R.out, "(none: a reduction");
  /* A reduction no kernel serves: one line, exit 1, no database made. */
  ASSERT_EQ_INT(run("tune --shape 8x8x8 --epilogue 'softmax(maxpool(x, 2))'"), 1);
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_CONTAINS(R.out, "no kernel serves 'softmax' of 'maxpool' yet");
  ASSERT_TRUE(access("fusedtune.db", F_OK) != 0);
  ASSERT_EQ_INT(run("epilogue 'x + bias + r where mat r' --json"), 0);
  ASSERT_CONTAINS(R.out, "{\"slot\":1,\"name\":\"r\",\"kind\":\"matrix\",\"default\":null}");
  /* x2 (a gated pair) at an n the interleaved weight has no whole groups for: refused before any
   * device or database. */
  ASSERT_EQ_INT(run("--db x2.db tune --shape 64x100x64 --epilogue 'silu(x) * x2' --math bf16"), 2);
  ASSERT_CONTAINS(R.out, "n 100: an epilogue with x2 (a gated pair) needs n a multiple of 8");
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_TRUE(access("x2.db", F_OK) != 0);
}

static void test_database_commands(void) {
  ASSERT_EQ_INT(run("--db missing.db list"), 1);
  ASSERT_CONTAINS(R.out, "missing.db");
  ASSERT_TRUE(access("missing.db", F_OK) != 0);
  ASSERT_EQ_INT(run("--db missing.db query --shape 8x8x8 --epilogue none --device-name X"), 1);
  ASSERT_TRUE(access("missing.db", F_OK) != 0);

  /* a missing folder is named as such, not "unable to open database file" */
  ASSERT_EQ_INT(run("--db no/such/dir/x.db init"), 1);
  ASSERT_CONTAINS(R.out, "its folder no/such/dir does not exist");
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_EQ_INT(run("--db a.db init"), 0);
  ASSERT_EQ_INT(run("--db a.db init"), 0); /* idempotent */
  ASSERT_EQ_INT(run("--db a.db list"), 0);
  ASSERT_CONTAINS(R.out, "nothing tuned");
  ASSERT_EQ_INT(run("--db a.db query --shape 8x8x8 --epilogue none --device-name 'No Such GPU'"), 3);
  ASSERT_EQ_INT(run("--db a.db export --format json --out a.json"), 0);
  ASSERT_EQ_INT(run("--db b.db import a.json"), 0);
  ASSERT_EQ_INT(run("--db b.db export --format json --out b.json"), 0);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cmp -s '%s/a.json' '%s/b.json'", dir, dir);
  ASSERT_EQ_INT(system(cmd), 0);
  ASSERT_EQ_INT(run("--db a.db export --format json"), 0);
  ASSERT_CONTAINS(R.out, "\"format\"");
  ASSERT_EQ_INT(run("--db a.db export --format csv"), 0);

  /* a malformed import is rejected whole, the database unchanged */
  FILE *f = NULL;
  snprintf(cmd, sizeof cmd, "%s/bad.json", dir);
  f = fopen(cmd, "w");
  ASSERT_TRUE(f != NULL);
  if (f) {
    fputs("{\"format\":\"fusedtune-export\",\"version\":1,\"devices\":[", f);
    fclose(f);
  }
  ASSERT_EQ_INT(run("--db fresh.db import bad.json"), 1);
  ASSERT_TRUE(access("fresh.db", F_OK) != 0); /* a rejected import creates nothing */
  ASSERT_EQ_INT(run("--db b.db import bad.json"), 1);
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_EQ_INT(run("--db b.db export --format json --out b2.json"), 0);
  snprintf(cmd, sizeof cmd, "cmp -s '%s/b.json' '%s/b2.json'", dir, dir);
  ASSERT_EQ_INT(system(cmd), 0);

  /* not a database: a directory, random bytes */
  ASSERT_EQ_INT(run("--db . list"), 1);
  snprintf(cmd, sizeof cmd, "head -c 4096 /dev/urandom > '%s/junk.db'", dir);
  ASSERT_EQ_INT(system(cmd), 0);
  ASSERT_EQ_INT(run("--db junk.db list"), 1);
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_EQ_INT(run("--db junk.db init"), 1);
}

static void test_no_device(void) {
  if (ft_test_have_gpu()) return;
  ASSERT_EQ_INT(run("--db t.db tune --shape 128x256x512 --epilogue minsub"), 1);
  ASSERT_CONTAINS(R.out, "fusedtune: no CUDA device: ");
  ASSERT_EQ_INT(lines(R.out), 1);
  /* without a command word, options go to tune: the same result */
  ASSERT_EQ_INT(run("--db t.db --shape 128x256x512 --epilogue minsub"), 1);
  ASSERT_CONTAINS(R.out, "fusedtune: no CUDA device: ");
  ASSERT_EQ_INT(run("devices"), 1);
  ASSERT_CONTAINS(R.out, "no CUDA device");
  ASSERT_TRUE(access("t.db", F_OK) != 0);
  /* variants needs no GPU */
  ASSERT_EQ_INT(run("variants --shape 127x1000x999 --epilogue minsub"), 0);
  ASSERT_CONTAINS(R.out, "variant(s)");
  /* bf16 on sm_90: tensor-core GEMMs where K is whole 16-byte rows; where it is not, and on a
   * GPU without them, the epilogue pass alone (never an error). */
  ASSERT_EQ_INT(run("variants --shape 128x1000x1000 --epilogue biasrelu --math bf16 --arch sm_90a"), 0);
  ASSERT_CONTAINS(R.out, "tc_bm128_");
  ASSERT_CONTAINS(R.out, "epi_b256_v4_e8_bf16");
  ASSERT_TRUE(strstr(R.out, "_se_") == NULL);
  /* --full: the exhaustive search's space, with the forms the default one leaves out */
  ASSERT_EQ_INT(run("variants --shape 128x1000x1000 --epilogue biasrelu --math bf16 --arch sm_90a --full"), 0);
  ASSERT_CONTAINS(R.out, "_pp_ts_se_bf16");
  ASSERT_CONTAINS(R.out, "epi_b256_v4_e8_bf16");
  ASSERT_EQ_INT(run("variants --shape 128x1000x1000 --full --full"), 2);
  ASSERT_EQ_INT(run("variants --shape 128x1000x1001 --epilogue biasrelu --math bf16"), 0);
  ASSERT_TRUE(strstr(R.out, "tc_") == NULL);
  ASSERT_CONTAINS(R.out, "\n9 variant(s)"); /* the pass with vec 4; the full space has all 36 */
  ASSERT_TRUE(strstr(R.out, "_v2_") == NULL);
  ASSERT_EQ_INT(run("variants --shape 128x1000x1001 --epilogue biasrelu --math bf16 --full"), 0);
  ASSERT_CONTAINS(R.out, "\n36 variant(s)");
  ASSERT_CONTAINS(R.out, "epi_b128_v1_e1_bf16");
  ASSERT_EQ_INT(run("variants --shape 128x1000x1000 --epilogue biasrelu --math tf32 --arch sm_80"), 0);
  ASSERT_TRUE(strstr(R.out, "tc_") == NULL);
  ASSERT_EQ_INT(run("variants --shape 128x1000x1000 --math bf17"), 2);
  ASSERT_CONTAINS(R.out, "unknown --math 'bf17'");
}

/* Unreadable and read-only databases, as a user the file modes apply to. */
static void test_file_modes(void) {
  if (geteuid() != 0) {
    fprintf(stderr, "note: not root, so no user nobody to switch to; file-mode checks skipped\n");
    return;
  }
  ASSERT_EQ_INT(run("--db modes.db init"), 0);
  ASSERT_EQ_INT(run("--db modes.db export --out modes.json"), 0);
  ASSERT_OK(chmod(".", 0755));
  ASSERT_OK(chmod("modes.db", 0000));
  char *list[] = {(char *)cli, "--db", "modes.db", "list", NULL};
  int rc = run_as_nobody(list);
  if (rc < 0) {
    fprintf(stderr, "note: cannot run as nobody here; file-mode checks skipped\n");
    chmod("modes.db", 0644);
    return;
  }
  ASSERT_EQ_INT(rc, 1); /* unreadable: an error, no crash */
  ASSERT_OK(chmod("modes.db", 0444));
  struct stat before, after;
  ASSERT_OK(stat("modes.db", &before));
  ASSERT_EQ_INT(run_as_nobody(list), 0); /* read-only: read commands work */
  char *imp[] = {(char *)cli, "--db", "modes.db", "import", "modes.json", NULL};
  ASSERT_EQ_INT(run_as_nobody(imp), 1); /* a write command is refused, saying what to do */
  FILE *ef = fopen("nobody.err", "r");
  char msg[512] = "";
  if (ef) {
    size_t got = fread(msg, 1, sizeof msg - 1, ef);
    msg[got] = 0;
    fclose(ef);
  }
  ASSERT_CONTAINS(msg, "is not writable");
  ASSERT_TRUE(strstr(msg, "open it read-only") == NULL); /* the CLI has no way to */
  /* init on it: the database is current, so nothing needs writing (--help: "left as it is") */
  char *init[] = {(char *)cli, "--db", "modes.db", "init", NULL};
  ASSERT_EQ_INT(run_as_nobody(init), 0);
  FILE *of = fopen("nobody.out", "r");
  char said[512] = "";
  if (of) {
    size_t got = fread(said, 1, sizeof said - 1, of);
    said[got] = 0;
    fclose(of);
  }
  ASSERT_CONTAINS(said, "not writable, left as it is");
  ASSERT_OK(stat("modes.db", &after));
  ASSERT_TRUE(before.st_mtime == after.st_mtime && before.st_size == after.st_size);
  chmod("modes.db", 0644);
}

int main(void) {
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  snprintf(dir, sizeof dir, "%s/cli_%ld", tmp ? tmp : "/tmp", (long)getpid());
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0 || chdir(dir) != 0) RETURN_FAIL("cannot make the scratch folder %s", dir);
  /* From here relative paths (access("missing.db")) name files in the scratch folder. */
  test_help();
  test_usage_errors();
  test_epilogue_cmd();
  test_database_commands();
  test_no_device();
  test_file_modes();
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!ft_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return FT_TEST_DONE();
}
