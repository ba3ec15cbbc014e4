/* The command line's output under hostile data and environments (issue 18): imported control
 * characters and UTF-8 in `list`, non-finite JSON numbers, stdout on a full device, no driver,
 * small usage messages, and compile progress on a terminal. Driven through $FT_CLI, no GPU. */
#include <dlfcn.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fusedtune.h"
#include "ft_test.h"

static const char *cli;
static char dir[400];
static char out[1 << 16];

/* Runs `fusedtune ARGS` in the scratch folder; ARGS carries its own redirections, so stderr
 * can be read while stdout goes to /dev/full. Returns the exit status; out gets what the
 * shell's stdout received. */
static int run_raw(const char *args) {
  char cmd[16384];
  const int w = snprintf(cmd, sizeof cmd, "cd '%s' && env -u FUSEDTUNE_DB '%s' %s", dir, cli, args);
  if (w < 0 || (size_t)w >= sizeof cmd) {
    FT_FAIL_AT_("command too long (%d bytes)", w);
    return -1;
  }
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int run(const char *args) {
  char a[16384];
  snprintf(a, sizeof a, "%s 2>&1", args);
  return run_raw(a);
}

/* Whether s is well-formed UTF-8 (no sequence cut in the middle). */
static int valid_utf8(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
    if (!n) return 0;
    for (int i = 1; i < n; i++)
      if ((p[i] & 0xC0) != 0x80) return 0;
    p += n;
  }
  return 1;
}

static void write_file(const char *name, const char *text) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ASSERT_TRUE(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* An export whose device name starts with ESC sequences and goes on in two-byte characters past
 * the 24 columns `list` shows, with a fused result of 1e-300 ms beside an eager one of 1e308 ms. */
static const char k_evil[] =
    "{\"format\":\"fusedtune-export\",\"version\":1,\n"
    "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"\\u001b[31mEVIL\\u001b]0;x\\u0007"
    "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\","
    "\"cc_major\":9,\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
    "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
    "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
    "\"problems\":[{\"m\":128,\"n\":16384,\"k\":16384,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
    "\"epilogue\":\"relu(x)\",\"epilogue_hash\":\"ca47f1151711f396\"}],\n"
    "\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
    "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
    "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n"
    "\"results\":["
#define RESULT(uuid, strategy, ms)                                                                  \
  "{\"uuid\":\"" uuid "\",\"run\":\"11111111-1111-4111-8111-111111111111\","                        \
  "\"device\":\"00000000000000aa\",\"problem\":{\"m\":128,\"n\":16384,\"k\":16384,"                 \
  "\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue_hash\":\"ca47f1151711f396\"},"             \
  "\"strategy\":\"" strategy "\",\"variant\":\"v\",\"config\":\"{}\",\"status\":\"ok\","            \
  "\"median_ms\":" ms ",\"min_ms\":" ms ",\"iqr_ms\":null,\"repeats\":30,\"rel_err\":1e-07,"         \
  "\"max_abs_err\":null,\"source_hash\":\"abcd\",\"fusedtune_version\":\"0.1.0\",\"message\":\"\"," \
  "\"created\":\"2026-11-29T08:00:01.000Z\"}"
    RESULT("22222222-2222-4222-8222-222222222222", "fused", "1e-300") ","
    RESULT("33333333-2222-4222-8222-222222222222", "eager", "1e308")
#undef RESULT
    "],\n\"best\":[]\n}\n";

/* Item 6: no ESC reaches the terminal; text is cut between characters. */
static void test_list_sanitizes(void) {
  write_file("evil.json", k_evil);
  ASSERT_EQ_INT(run("--db evil.db import evil.json"), 0);
  ASSERT_EQ_INT(run_raw("--db evil.db list"), 0);
  ASSERT_TRUE(strchr(out, 0x1b) == NULL);
  ASSERT_TRUE(strchr(out, 0x07) == NULL);
  ASSERT_TRUE(valid_utf8(out));
  ASSERT_CONTAINS(out, "?[31mEVIL?]0;x?\xc3\xa9\xc3\xa9"); /* replaced, and the name goes on */
  /* 24 columns shown: 15 before the first e-acute, then 8 of them and an ellipsis (cut) */
  ASSERT_CONTAINS(out, "x?\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xe2\x80\xa6 ");
}

/* Item 7: 1e308 / 1e-300 overflows; JSON gets null, never inf. */
static void test_list_json_finite(void) {
  ASSERT_EQ_INT(run_raw("--db evil.db list --json"), 0);
  ASSERT_TRUE(strstr(out, "inf") == NULL);
  ASSERT_TRUE(strstr(out, "nan") == NULL);
  ASSERT_CONTAINS(out, "\"speedup_vs_eager\":null");
  ASSERT_CONTAINS(out, "\"median_ms\":1e-300");
  ASSERT_EQ_INT(run_raw("--db evil.db list"), 0);
  ASSERT_TRUE(strstr(out, "inf") == NULL);
}

/* Item 8: stdout on a full device is a failure with a message, for every printing command. */
static void test_write_errors(void) {
  ASSERT_EQ_INT(run("--db w.db init"), 0);
  const char *cmds[] = {"--db w.db list", "--db evil.db list", "--db evil.db list --json", "epilogue minsub",
                        "epilogue minsub --json", "variants --shape 8x8x8", "--help", "--version",
                        "list --help", "--db w.db init"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    char a[256];
    snprintf(a, sizeof a, "%s 2>&1 >/dev/full", cmds[i]);
    int code = run_raw(a);
    if (code != 1 || !strstr(out, "fusedtune: writing standard output failed"))
      FT_FAIL_AT_("'%s' with stdout on /dev/full: exit %d, stderr \"%s\"", cmds[i], code, out);
  }
}

/* Item 9: no driver at all is named as such, not as an old driver. */
static void test_no_driver(void) {
  if (ft_test_have_gpu()) return;
  void *h = dlopen("libcuda.so.1", RTLD_LAZY);
  if (h) {
    dlclose(h);
    fprintf(stderr, "note: libcuda.so.1 loads here (a driver without a GPU); no-driver checks skipped\n");
    return;
  }
  const char *cmds[] = {"--db nd.db tune --shape 64x64x64 --epilogue none", "devices",
                        "--db w.db bench --shape 64x64x64 --epilogue none"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    int code = run(cmds[i]);
    if (code != 1 || !strstr(out, "no NVIDIA driver found") || strstr(out, "insufficient"))
      FT_FAIL_AT_("'%s': exit %d: %s", cmds[i], code, out);
  }
  /* ft_lookup on an empty database: FT_ERR_NO_DEVICE, documented (the fingerprint is the key) */
  char path[600];
  snprintf(path, sizeof path, "%s/lookup.db", dir);
  ft_ctx *ctx = NULL;
  ASSERT_EQ_INT(ft_open(path, FT_OPEN_CREATE, &ctx), FT_OK);
  ft_problem p = {0};
  p.m = p.n = p.k = 64;
  p.epilogue = "none";
  ft_config cfg;
  ASSERT_EQ_INT(ft_lookup(ctx, &p, 0, &cfg), FT_ERR_NO_DEVICE);
  ASSERT_CONTAINS(ft_errmsg(ctx), "no NVIDIA driver found");
  ASSERT_TRUE(strstr(ft_errmsg(ctx), "insufficient") == NULL);
  ft_close(ctx);
}

/* Item 10: --db after the command, epilogue's prefix, a 6 KB path, options given twice. */
static void test_small_messages(void) {
  ASSERT_EQ_INT(run("list --db w.db"), 2);
  ASSERT_CONTAINS(out, "--db is a global option: it goes before the command");
  ASSERT_EQ_INT(run("tune --shape 8x8x8 --db=w.db"), 2);
  ASSERT_CONTAINS(out, "goes before the command");
  ASSERT_EQ_INT(run("epilogue 'sigmod(x)'"), 2);
  ASSERT_TRUE(strncmp(out, "fusedtune: epilogue: ", 21) == 0);

  /* 3000 two-byte characters: the message keeps its head and its end, whole characters only */
  char args[8192] = "--db '";
  size_t n = strlen(args);
  for (int i = 0; i < 3000; i++) args[n++] = (char)0xc3, args[n++] = (char)0xa9;
  snprintf(args + n, sizeof args - n, "/end.db' list");
  ASSERT_EQ_INT(run(args), 1);
  ASSERT_TRUE(valid_utf8(out));
  ASSERT_CONTAINS(out, "...");
  ASSERT_CONTAINS(out, "/end.db");
  ASSERT_TRUE(strlen(out) < 2100);

  const char *twice[] = {"tune --shape 8x8x8 --shape 16x16x16", "tune --shape 8x8x8 --budget 1 --budget=2",
                         "variants --shape 8x8x8 --math fp32 --math=fp16", "--db a.db --db b.db list",
                         "--db w.db list --json --json", "epilogue minsub --json --json", "devices --json --json",
                         "query --shape 8x8x8 --epilogue relu --nearest --nearest",
                         "bench --shape 8x8x8 --math bf16 --math=fp32", "export --format json --format csv"};
  for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++) {
    int code = run(twice[i]);
    if (code != 2 || !strstr(out, "given twice")) FT_FAIL_AT_("'%s': exit %d: %s", twice[i], code, out);
  }
  ASSERT_EQ_INT(run("--help"), 0);
  ASSERT_CONTAINS(out, "a repeated option is a usage error");
}

/* Issue 58 item 12: a command that needs a GPU, on a machine without one, says what works without
 * (d57500e said only "no CUDA device: ..."). */
static void test_no_device_hint(void) {
  if (ft_test_have_gpu()) return;
  ASSERT_EQ_INT(run("--db nd.db init"), 0);
  const char *cmds[] = {"--db nd.db tune --shape 8x8x8", "devices", "--db nd.db bench --shape 8x8x8 --epilogue x"};
  for (size_t i = 0; i < sizeof cmds / sizeof *cmds; i++) {
    int code = run(cmds[i]);
    if (code != 1 || !strstr(out, "no CUDA device") ||
        !strstr(out, "without a GPU these still work: import, export, list, report, query --device-name NAME") ||
        strchr(out, '\n') != out + strlen(out) - 1)
      FT_FAIL_AT_("'%s': exit %d: %s", cmds[i], code, out);
  }
}

/* Issue 58 item 11, the smaller things: each failed on d57500e. */
static void test_small_items_58(void) {
  /* An empty FILE is a usage error, as export --out '' is. */
  ASSERT_EQ_INT(run("--db s58.db import ''"), 2);
  ASSERT_CONTAINS(out, "FILE is empty");
  ASSERT_EQ_INT(run("--db s58.db export --out ''"), 2);
  /* The limit a message names is accepted. */
  ASSERT_EQ_INT(run("epilogue 'x * 1.17549435e-38'"), 0);
  ASSERT_EQ_INT(run("epilogue 'x * 1e-39'"), 2);
  ASSERT_CONTAINS(out, "(smallest 1.17549435e-38)");
  /* --help gives the range --repeats takes (1001 is refused). */
  ASSERT_EQ_INT(run("tune --help"), 0);
  ASSERT_CONTAINS(out, "--repeats N          timed repeats per candidate, 20..1000");
  ASSERT_EQ_INT(run("tune --shape 8x8x8 --repeats 1001"), 2);
  ASSERT_CONTAINS(out, "20..1000");
  ASSERT_EQ_INT(run("bench --help"), 0);
  ASSERT_CONTAINS(out, "--repeats N: timed calls per configuration, 20..1000");
  /* variants' summary names the math mode. */
  ASSERT_EQ_INT(run("variants --shape 16x16x16 --math bf16"), 0);
  ASSERT_CONTAINS(out, " variant(s) for 16x16x16, epilogue 'x', bf16, sm_90\n");
}

/* Reads everything the child writes on the pseudo-terminal master, until it closes or the
 * deadline passes (then the child is killed). Returns the child's exit status, or -1. */
static int read_pty(int master, pid_t pid, char *buf, size_t cap, int deadline_s) {
  size_t got = 0;
  const time_t end = time(NULL) + deadline_s;
  while (got < cap - 1 && time(NULL) < end) {
    struct pollfd pfd = {master, POLLIN, 0};
    int r = poll(&pfd, 1, 1000);
    if (r < 0) break;
    if (r == 0) continue;
    ssize_t n = read(master, buf + got, cap - 1 - got);
    if (n <= 0) break; /* EIO: the child closed the terminal */
    got += (size_t)n;
  }
  buf[got] = 0;
  int st = 0;
  pid_t w;
  while ((w = waitpid(pid, &st, WNOHANG)) == 0 && time(NULL) < end) nanosleep(&(struct timespec){0, 10000000}, NULL);
  if (w != pid) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
    return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Item 11: `variants --compile` on a terminal shows "compiling I/N" on stderr, redrawn in place,
 * I counting up to N; with stderr not a terminal, stderr stays empty and stdout is the same
 * report. 8x8x8 compiles 48 small variants in seconds; the old build printed nothing until
 * the end, so the terminal check fails on it. */
static void test_compile_progress(void) {
  ASSERT_EQ_INT(run("variants --shape 8x8x8"), 0);
  const char *tail = strstr(out, " variant(s) for 8x8x8");
  const char *num = tail;
  while (num && num > out && num[-1] >= '0' && num[-1] <= '9') num--;
  const int total = num && num < tail ? atoi(num) : 0;
  ASSERT_TRUE(total > 1);

  int master = -1;
  pid_t pid = forkpty(&master, NULL, NULL, NULL);
  if (pid < 0) {
    fprintf(stderr, "note: no pseudo-terminal here; progress check skipped\n");
    return;
  }
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(120);
    execl(cli, cli, "variants", "--shape", "8x8x8", "--compile", (char *)NULL);
    _exit(121);
  }
  static char buf[1 << 16];
  int code = read_pty(master, pid, buf, sizeof buf, 300);
  close(master);
  ASSERT_EQ_INT(code, 0);
  char want[128];
  snprintf(want, sizeof want, "\rcompiling 1/%d variant kernel(s)", total);
  if (!strstr(buf, want)) FT_FAIL_AT_("no progress on the terminal: \"%.400s\"", buf);
  /* Every count from 1 to N, in order, each redrawn over the last; then the report. */
  const char *at = buf;
  for (int i = 1; i <= total && at; i++) {
    snprintf(want, sizeof want, "\rcompiling %d/%d variant kernel(s)", i, total);
    at = strstr(at, want);
    if (!at) FT_FAIL_AT_("progress lacks \"compiling %d/%d\" after the earlier counts", i, total);
  }
  snprintf(want, sizeof want, "compiled %d variant(s) for sm_90: %d ok, 0 failed", total, total);
  if (at && !strstr(at, want)) FT_FAIL_AT_("no final report after the progress: \"%.400s\"", at);

  /* Not a terminal: no progress, no carriage return, the same report on stdout. */
  ASSERT_EQ_INT(run_raw("variants --shape 8x8x8 --compile 2>progress.err"), 0);
  ASSERT_CONTAINS(out, want);
  ASSERT_TRUE(strchr(out, '\r') == NULL);
  char path[600];
  snprintf(path, sizeof path, "%s/progress.err", dir);
  FILE *f = fopen(path, "r");
  ASSERT_TRUE(f != NULL);
  if (f) {
    ASSERT_EQ_INT(fgetc(f), EOF); /* stderr is empty */
    fclose(f);
  }
}

/* Runs the CLI with exactly argv (no shell: any byte can be passed), in the scratch folder, its
 * stdout and stderr together in out. Returns the exit status. */
static int run_argv(const char *const *args) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    if (chdir(dir) != 0) _exit(126);
    unsetenv("FUSEDTUNE_DB");
    char *argv[32] = {(char *)cli};
    for (int i = 0; args[i] && i < 30; i++) argv[i + 1] = (char *)args[i];
    execv(cli, argv);
    _exit(127);
  }
  close(fds[1]);
  size_t n = 0;
  ssize_t got;
  while (n < sizeof out - 1 && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0) n += (size_t)got;
  out[n] = 0;
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The first character of s that steers a terminal (C0 but newline, DEL, C1, bidi controls) or
 * byte that is not UTF-8, or NULL. */
static const char *first_unprintable(const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  for (; *p; p++) {
    if ((*p < 0x20 && *p != '\n') || *p == 0x7F) return (const char *)p;
    if (p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) return (const char *)p;
    if (p[0] == 0xE2 && ((p[1] == 0x80 && p[2] >= 0xAA && p[2] <= 0xAE) || (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9)))
      return (const char *)p;
  }
  return valid_utf8(s) ? NULL : s;
}

/* s with every from replaced by to, malloc'd. */
static char *replaced(const char *s, const char *from, const char *to) {
  size_t nf = strlen(from), nt = strlen(to), n = 0;
  for (const char *p = strstr(s, from); p; p = strstr(p + nf, from)) n++;
  char *r = malloc(strlen(s) + n * nt + 1), *w = r;
  if (!r) return NULL;
  for (const char *p; (p = strstr(s, from)); s = p + nf) {
    memcpy(w, s, (size_t)(p - s));
    w += p - s;
    memcpy(w, to, nt);
    w += nt;
  }
  strcpy(w, s);
  return r;
}

/* Issue 58 item 3: control characters and bidi overrides from argv, imported files, problem
 * files and stored device names, through every message that echoes them: each shown as '?',
 * each error one line (d57500e printed them raw: an import's error retitled the terminal). */
static void test_messages_printable(void) {
  char *pwned = replaced(k_evil, "\"strategy\":\"fused\"", "\"strategy\":\"\\u001b]0;pwned\\u0007\\u001b[2J\"");
  char *two = replaced(k_evil, "00000000000000aa", "00000000000000bb");
  char *bidi = two ? replaced(two, "EVIL", "EVIL\\u202e\\u2066") : NULL;
  ASSERT_TRUE(pwned && bidi);
  if (!pwned || !bidi) return;
  write_file("pwned.json", pwned);
  write_file("bidi.json", bidi);
  write_file("bad.csv", "shape,epilogue,math\n8x8x8\x1b[2J,none,fp32\n");
  write_file("badepi.csv", "shape,epilogue,math\n8x8x8,relu(x)\xe2\x80\xae\x1b]0;t\x07,fp32\n");
  free(pwned), free(two), free(bidi);
  ASSERT_EQ_INT(run("--db evil.db import bidi.json"), 0);
  static const struct {
    const char *args[12];
    int code; /* the exit status expected; -1: any failure */
  } cases[] = {
      {{"tune", "--shape", "128x256x256\n"}, 2},
      {{"tune", "--shape", "\xff\xfe\x1b[2J"}, 2},
      {{"tune", "--shape", "8x8x8", "--epilogue", "relu(x)\x1b[2J"}, 2},
      {{"tune", "--shape", "8x8x8", "--epilogue", "relu(x) + \xe2\x80\xae"}, 2},
      {{"tune", "--shape", "8x8x8", "--math", "fp\x1b]0;t\x07"}, 2},
      {{"tune", "--shape", "8x8x8", "--budget", "1\x1b[2J"}, 2},
      {{"tune", "--shape", "8x8x8", "--strategy", "\x1b[2J"}, 2},
      {{"tune", "--problems", "p\x1b[2J.csv"}, -1},
      {{"tune", "--problems", "bad.csv"}, -1},
      {{"tune", "--problems", "badepi.csv"}, -1},
      {{"\x1b[2Jcmd"}, 2},
      {{"--db", "evil.db", "list", "--bog\x1bus"}, 2},
      {{"--db", "evil.db", "list", "extra\xe2\x80\xae"}, 2},
      {{"--db", "no\x1b[2J.db", "list"}, -1},
      {{"--db", "evil.db", "import", "no\x1b[2J.json"}, -1},
      {{"--db", "evil.db", "import", "pwned.json"}, -1},
      {{"--db", "evil.db", "export", "--out", "d\x1b[2J/x.json"}, -1},
      {{"--db", "evil.db", "export", "--format", "x\x1b"}, 2},
      {{"--db", "evil.db", "report", "-o", "d\xe2\x80\xae/x.html"}, -1},
      {{"epilogue", "x\xe2\x80\xae\x1b[2J"}, 2},
      {{"variants", "--shape", "8x8x8", "--arch", "sm\x1b[2J"}, -1},
      {{"bench", "--shape", "8x8x8", "--repeats", "5\x1b[2J"}, 2},
      {{"--db", "evil.db", "query", "--shape", "128x16384x16384", "--epilogue", "relu(x)", "--device-name",
        "EVIL\xe2\x80\xae\x1b[2J"}, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    int code = run_argv(cases[i].args);
    const char *bad = first_unprintable(out);
    const char *nl = strchr(out, '\n');
    if (bad || (cases[i].code >= 0 ? code != cases[i].code : code == 0) || !nl || nl[1])
      FT_FAIL_AT_("case %zu (%s %s %s): exit %d, %s at byte %td: \"%s\"", i, cases[i].args[0],
                  cases[i].args[1] ? cases[i].args[1] : "", cases[i].args[2] ? cases[i].args[2] : "", code,
                  bad ? "unprintable" : "lines", bad ? bad - out : (ptrdiff_t)-1, out);
  }
  /* The stored device name, echoed by query (nothing launchable is stored for it): printable. */
  const char *exact[] = {"--db", "evil.db", "query", "--shape", "128x16384x16384", "--epilogue", "relu(x)",
                         "--device-name",
                         "\x1b[31mEVIL\xe2\x80\xae\xe2\x81\xa6\x1b]0;x\x07\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
                         "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
                         NULL};
  ASSERT_EQ_INT(run_argv(exact), 3);
  ASSERT_TRUE(first_unprintable(out) == NULL);
  ASSERT_CONTAINS(out, " on ?[31mEVIL???]0;x?\xc3\xa9");
}

int main(void) {
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  snprintf(dir, sizeof dir, "%s/hardening_cli_%ld", tmp ? tmp : "/tmp", (long)getpid());
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0) RETURN_FAIL("cannot make the scratch folder %s", dir);
  test_list_sanitizes();
  test_list_json_finite();
  test_messages_printable();
  test_write_errors();
  test_no_driver();
  test_small_messages();
  test_small_items_58();
  test_no_device_hint();
  test_compile_progress();
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!ft_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return FT_TEST_DONE();
}
