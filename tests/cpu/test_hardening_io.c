/* Export and import against hostile paths and files, through the CLI ($FT_CLI): --out over
 * devices, FIFOs, links and the database itself, long names; imported cubins; imported values
 * the library would refuse; two large imports at once; inputs that are not regular files. */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cli_run.h"
#include "db_fixture.h"
#include "epilogue.h"

/* Runs a shell script (no single quotes in it); $FT_CLI is the CLI. */
static int sh(const char *script) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "env -u FUSEDTUNE_DB FT_CLI='%s' sh -c '%s'", cli, script);
  return capture(cmd);
}

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    FT_FAIL_AT_("cannot write %s", path);
    return;
  }
  fputs(text, f);
  fclose(f);
}

static char g_canon[256], g_hash[64]; /* of the epilogue the documents use */

/* An export with one device, problem and run and n results (a "cubins" section when cubin is
 * set), written to path. */
static void write_doc(const char *path, int n, int offset, const char *cubin) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    FT_FAIL_AT_("cannot write %s", path);
    return;
  }
  fprintf(f,
          "{\"format\":\"fusedtune-export\",\"version\":1,\n"
          "\"devices\":[{\"fingerprint\":\"00000000000000aa\",\"name\":\"H200\",\"cc_major\":9,"
          "\"cc_minor\":0,\"sm_count\":132,\"mem_bytes\":150011101184,\"driver_version\":13000,"
          "\"runtime_version\":13000,\"nvrtc_version\":13000,\"cublas_version\":130000,"
          "\"first_seen\":\"2026-11-29T08:00:00.000Z\",\"last_seen\":\"2026-11-29T09:00:00.000Z\"}],\n"
          "\"problems\":[{\"m\":128,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
          "\"epilogue\":\"%s\",\"epilogue_hash\":\"%s\"}],\n"
          "\"runs\":[{\"uuid\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
          "\"started\":\"2026-11-29T08:00:00.000Z\",\"ended\":null,\"tool_version\":\"0.1.0\","
          "\"options\":\"{}\",\"budget_s\":170,\"outcome\":null}],\n\"results\":[",
          g_canon, g_hash);
  for (int i = 0; i < n; i++)
    fprintf(f,
            "%s\n{\"uuid\":\"22222222-2222-4222-8222-%012d\","
            "\"run\":\"11111111-1111-4111-8111-111111111111\",\"device\":\"00000000000000aa\","
            "\"problem\":{\"m\":128,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\","
            "\"epilogue_hash\":\"%s\"},\"strategy\":\"fused\",\"variant\":\"v%d\","
            "\"config\":\"{}\",\"status\":\"ok\",\"median_ms\":1.5,\"min_ms\":1.4,\"iqr_ms\":null,"
            "\"repeats\":30,\"rel_err\":1e-07,\"max_abs_err\":null,\"source_hash\":\"abcd\","
            "\"fusedtune_version\":\"0.1.0\",\"message\":\"\",\"created\":\"2026-11-29T08:00:01.000Z\"}",
            i ? "," : "", i + offset, g_hash, i + offset);
  fprintf(f, "],\n\"best\":[]");
  if (cubin)
    fprintf(f,
            ",\n\"cubins\":[{\"source_hash\":\"abcd\",\"arch\":\"sm_90\",\"nvrtc_version\":13000,"
            "\"options\":\"\",\"size\":%zu,\"created\":\"2026-11-29T08:00:00.000Z\",\"data\":\"%s\"}]",
            (strlen(cubin) / 4) * 3 - (strchr(cubin, '=') ? strlen(strchr(cubin, '=')) : 0), cubin);
  fprintf(f, "\n}\n");
  fclose(f);
}

/* The database's JSON export, malloc'd (NULL when the export fails). */
static char *export_of(const char *db) {
  char a[1024];
  snprintf(a, sizeof a, "--db '%s' export --with-cubins --out snapshot.json", db);
  if (run(a) != 0) {
    FT_FAIL_AT_("export of %s failed: %s", db, R.out);
    return NULL;
  }
  size_t n;
  return read_file("snapshot.json", &n);
}

/* ---------------------------------------------------------------------------------------------
 * Item 1: export --out over what is not a regular file, over the database, modes, long names */

static void test_export_out(void) {
  struct stat sb;
  ASSERT_EQ_INT(run("--db e.db init"), 0);
  /* A FIFO stays a FIFO: refused before anything is opened (opening it would block). */
  ASSERT_EQ_INT(mkfifo("fifo", 0644), 0);
  ASSERT_EQ_INT(run("--db e.db export --out fifo"), 1);
  ASSERT_CONTAINS(R.out, "export: fifo is not a regular file");
  ASSERT_EQ_INT(lines(R.out), 1);
  ASSERT_TRUE(lstat("fifo", &sb) == 0 && S_ISFIFO(sb.st_mode));
  /* (No device here: run against the old code as root, the test would destroy it.) */
  /* A symbolic link is not replaced by a file. */
  put("target.json", "keep");
  ASSERT_EQ_INT(symlink("target.json", "link.json"), 0);
  ASSERT_EQ_INT(run("--db e.db export --out link.json"), 1);
  ASSERT_CONTAINS(R.out, "link.json is a symbolic link");
  ASSERT_TRUE(lstat("link.json", &sb) == 0 && S_ISLNK(sb.st_mode));
  size_t n;
  char *t = read_file("target.json", &n);
  ASSERT_EQ_STR(t, "keep");
  free(t);
  /* The database itself, by its name and through a hard link: refused, still a database. */
  ASSERT_EQ_INT(run("--db e.db export --out e.db"), 1);
  ASSERT_CONTAINS(R.out, "e.db is the database being exported");
  ASSERT_EQ_INT(link("e.db", "hard.db"), 0);
  ASSERT_EQ_INT(run("--db e.db export --out hard.db"), 1);
  ASSERT_CONTAINS(R.out, "is the database being exported");
  ASSERT_EQ_INT(run("--db e.db list"), 0);
  /* The files SQLite keeps beside it: removed at close (-wal, -shm) or by the next write
   * (-journal), so an export there would vanish; refused, also from another folder's view. */
  const char *side[] = {"e.db-wal", "e.db-shm", "e.db-journal", "./e.db-wal", "ABS"};
  for (size_t i = 0; i < sizeof side / sizeof *side; i++) {
    char a[1024];
    if (strcmp(side[i], "ABS"))
      snprintf(a, sizeof a, "--db e.db export --out %s", side[i]);
    else
      snprintf(a, sizeof a, "--db e.db export --out '%s/e.db-shm'", dir);
    ASSERT_EQ_INT(run(a), 1);
    ASSERT_CONTAINS(R.out, "is a file SQLite keeps beside the database being exported");
    ASSERT_EQ_INT(lines(R.out), 1);
  }
  ASSERT_EQ_INT(run("--db e.db report -o e.db-wal"), 1);
  ASSERT_CONTAINS(R.out, "beside the database being read");
  /* The side files of a hard or symbolic link to the database: opening the database by that
   * name makes SQLite keep (and remove) them there (issue 58 item 8; d57500e wrote them, exit 0). */
  ASSERT_EQ_INT(symlink("e.db", "soft.db"), 0);
  const char *linked[] = {"export --out hard.db-wal", "export --out hard.db-journal", "report -o hard.db-shm",
                          "export --out soft.db-wal"};
  for (size_t i = 0; i < sizeof linked / sizeof *linked; i++) {
    char a[256];
    snprintf(a, sizeof a, "--db e.db %s", linked[i]);
    ASSERT_EQ_INT(run(a), 1);
    ASSERT_CONTAINS(R.out, "is a file SQLite keeps beside the database being");
  }
  ASSERT_TRUE(lstat("hard.db-wal", &sb) != 0 && lstat("hard.db-shm", &sb) != 0 && lstat("soft.db-wal", &sb) != 0);
  ASSERT_TRUE(lstat("e.db-wal", &sb) != 0 && lstat("e.db-journal", &sb) != 0);
  /* A name that only starts like one is an ordinary file. */
  ASSERT_EQ_INT(run("--db e.db export --out e.db-wal.json"), 0);
  ASSERT_TRUE(stat("e.db-wal.json", &sb) == 0 && sb.st_size > 0);
  /* A directory. */
  ASSERT_EQ_INT(mkdir("adir", 0755), 0);
  ASSERT_EQ_INT(run("--db e.db export --out adir"), 1);
  ASSERT_CONTAINS(R.out, "adir is not a regular file");
  /* An existing file keeps its mode; a new one gets the umask's. */
  put("mode.json", "old");
  ASSERT_EQ_INT(chmod("mode.json", 0600), 0);
  ASSERT_EQ_INT(run("--db e.db export --out mode.json"), 0);
  ASSERT_TRUE(stat("mode.json", &sb) == 0 && (sb.st_mode & 0777) == 0600);
  t = read_file("mode.json", &n);
  ASSERT_CONTAINS(t, "\"format\":\"fusedtune-export\"");
  free(t);
  /* A 250-byte name (legal: NAME_MAX is 255) and a path of 4093 bytes. */
  char name[256];
  memset(name, 'n', 250);
  name[250] = 0;
  char a[8192];
  snprintf(a, sizeof a, "--db e.db export --out %s", name);
  ASSERT_EQ_INT(run(a), 0);
  ASSERT_TRUE(stat(name, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0);
  /* Deep folders of 200-byte names up to 4093 bytes in all; its prefix truncated to 4095
   * (where the old temporary name was cut) is an unrelated file that must survive. */
  char deep[4200];
  int len = snprintf(deep, sizeof deep, "%s", dir);
  ASSERT_EQ_INT(chdir(dir), 0);
  char comp[201];
  memset(comp, 'd', 200);
  comp[200] = 0;
  while (4093 - len - 1 > 250) {
    len += snprintf(deep + len, sizeof deep - (size_t)len, "/%s", comp);
    if (mkdir(deep, 0755) != 0) FT_FAIL_AT_("mkdir %s failed", deep);
  }
  int fill = 4093 - len - 1;
  deep[len] = '/';
  memset(deep + len + 1, 'f', (size_t)fill);
  deep[4093] = 0;
  ASSERT_EQ_INT((int)strlen(deep), 4093);
  char other[4200];
  if (snprintf(other, sizeof other, "%s.t", deep) >= (int)sizeof other) FT_FAIL_AT_("path too long");
  put(other, "unrelated");
  snprintf(a, sizeof a, "--db e.db export --out '%s'", deep);
  ASSERT_EQ_INT(run(a), 0);
  ASSERT_TRUE(stat(deep, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0);
  t = read_file(other, &n);
  ASSERT_EQ_STR(t, "unrelated");
  free(t);
  /* No temporary file left anywhere. */
  ASSERT_EQ_INT(sh("find . -name \".fusedtune-export*\" | wc -l"), 0);
  ASSERT_EQ_INT(atoi(R.out), 0);
}

/* ---------------------------------------------------------------------------------------------
 * Item 2: an imported cubin is never stored, so never loaded: kernels are rebuilt locally */

static void test_import_cubins(void) {
  write_doc("cubin.json", 1, 0, "AAECAwQF"); /* six arbitrary bytes */
  ASSERT_EQ_INT(run("--db c.db import cubin.json"), 0);
  ASSERT_EQ_INT(lines(R.out), 2);
  ASSERT_CONTAINS(R.out, "1 cubin ignored");
  char *e = export_of("c.db");
  ASSERT_CONTAINS(e, "\"cubins\":[]");
  ASSERT_CONTAINS(e, "\"variant\":\"v0\"");
  free(e);
}

/* ---------------------------------------------------------------------------------------------
 * Item 3: import checks what the library checks: shape, time, strategy, layout, math, epilogue */

typedef struct bad_case {
  const char *from, *to, *expect;
} bad_case;

static void test_import_values(void) {
  write_doc("good.json", 1, 0, NULL);
  size_t n;
  char *good = read_file("good.json", &n);
  ASSERT_EQ_INT(run("--db v.db import good.json"), 0);
  char *before = export_of("v.db");
  char hash_to[512];
  snprintf(hash_to, sizeof hash_to, "\"epilogue\":\"relu(x + 1)\",\"epilogue_hash\":\"%s\"", g_hash);
  char hash_from[512];
  snprintf(hash_from, sizeof hash_from, "\"epilogue\":\"%s\",\"epilogue_hash\":\"%s\"", g_canon, g_hash);
  char bogus_from[512], bogus_to[512];
  snprintf(bogus_from, sizeof bogus_from, "\"epilogue\":\"%s\"", g_canon);
  snprintf(bogus_to, sizeof bogus_to, "\"epilogue\":\"frob(x)\"");
  const bad_case cases[] = {
      {"\"m\":128,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "\"m\":9223372036854775807,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "import: problems[0]: shape 9223372036854775807x256x64"},
      {"\"m\":128,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "\"m\":1073741825,\"n\":256,\"k\":64,\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"",
       "each dimension must be <="},
      {"\"started\":\"2026-11-29T08:00:00.000Z\"", "\"started\":\"2026-13-45T99:99:99Z\"",
       "import: runs[0].started: not an ISO-8601 UTC time"},
      {"\"first_seen\":\"2026-11-29T08:00:00.000Z\"", "\"first_seen\":\"2026-02-30T08:00:00.000Z\"",
       "import: devices[0].first_seen: not an ISO-8601 UTC time"},
      {"\"strategy\":\"fused\"", "\"strategy\":\"magic\"", "import: results[0].strategy: unknown strategy \"magic\" (one of: fused cublas+epilogue"},
      {"\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"", "\"layout\":\"xcol\",\"math\":\"fp32\",\"epilogue\"",
       "import: problems[0].layout: unknown layout \"xcol\""},
      {"\"layout\":\"xrow_wrow\",\"math\":\"fp32\",\"epilogue\"", "\"layout\":\"xrow_wrow\",\"math\":\"fp64\",\"epilogue\"",
       "import: problems[0].math: unknown math mode \"fp64\" (one of: fp32"},
      {hash_from, hash_to, "import: problems[0].epilogue_hash: does not match the epilogue"},
      {bogus_from, bogus_to, "import: problems[0].epilogue:"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *hit = strstr(good, cases[i].from);
    if (!hit) {
      FT_FAIL_AT_("case %zu: \"%s\" not in the document", i, cases[i].from);
      continue;
    }
    size_t at = (size_t)(hit - good), fl = strlen(cases[i].from);
    FILE *f = fopen("bad.json", "wb");
    fwrite(good, 1, at, f);
    fputs(cases[i].to, f);
    fputs(hit + fl, f);
    fclose(f);
    run("--db v.db import bad.json");
    if (R.code != 1 || !strstr(R.out, cases[i].expect) || lines(R.out) != 1)
      FT_FAIL_AT_("case %zu: exit %d, \"%s\" lacks \"%s\"", i, R.code, R.out, cases[i].expect);
    ASSERT_EQ_INT(run("--db new.db import bad.json"), 1);
    ASSERT_TRUE(access("new.db", F_OK) != 0);
  }
  char *after = export_of("v.db");
  ASSERT_TRUE(before && after && strcmp(before, after) == 0);
  free(before);
  free(after);
  free(good);
}

/* ---------------------------------------------------------------------------------------------
 * Item 4: two large imports at once both finish */

/* Another writer holds the database for longer than the busy timeout (10 s): the import waits
 * its turn instead of failing with "database is locked". */
static void test_import_waits(void) {
  write_doc("small.json", 10, 0, NULL);
  ASSERT_EQ_INT(run("--db wait.db init"), 0);
  char path[600];
  snprintf(path, sizeof path, "%s/wait.db", dir);
  int pipefd[2];
  ASSERT_EQ_INT(pipe(pipefd), 0);
  pid_t pid = fork();
  if (pid == 0) {
    sqlite3 *h = NULL;
    char c = 1;
    if (sqlite3_open(path, &h) != SQLITE_OK || sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
      c = 0;
    if (write(pipefd[1], &c, 1) != 1) c = 0;
    sleep(12);
    sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(h);
    _exit(c ? 0 : 1);
  }
  char c = 0;
  ASSERT_TRUE(pid > 0 && read(pipefd[0], &c, 1) == 1 && c == 1);
  close(pipefd[0]);
  close(pipefd[1]);
  time_t t0 = time(NULL);
  ASSERT_EQ_INT(run("--db wait.db import small.json"), 0);
  ASSERT_TRUE(time(NULL) - t0 >= 10);
  int st = 0;
  ASSERT_TRUE(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  ASSERT_EQ_INT(run("--db wait.db export --format csv --out wait.csv"), 0);
  ASSERT_EQ_INT(sh("wc -l < wait.csv"), 0);
  ASSERT_EQ_INT(atol(R.out), 11);
}

static long file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Starts `fusedtune --db big.db import JSON`, stdout and stderr to LOG. */
static pid_t spawn_import(const char *json, const char *log) {
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(120);
    unsetenv("FUSEDTUNE_DB");
    execl(cli, cli, "--db", "big.db", "import", json, (char *)NULL);
    _exit(121);
  }
  return pid;
}

/* Two large imports at once: committed in batches, they take turns and both finish. Each file
 * has $FT_TEST_IMPORT_N results (60000; the bench test bench_concurrent_imports runs 300000,
 * the size). Should one still fail, its message must say to run it again, and that run
 * completes it. Prints the wall times and the rows. */
static void test_concurrent_imports(void) {
  const char *env = getenv("FT_TEST_IMPORT_N");
  const int n = env && atoi(env) > 0 ? atoi(env) : 60000;
  double t0 = now_s();
  write_doc("big1.json", n, 0, NULL);
  write_doc("big2.json", n, n, NULL);
  const double t_write = now_s() - t0;
  ASSERT_EQ_INT(run("--db big.db init"), 0);
  const char *json[2] = {"big1.json", "big2.json"}, *log[2] = {"one.log", "two.log"};
  pid_t pid[2];
  double took[2] = {0, 0};
  int code[2] = {-1, -1};
  t0 = now_s();
  for (int i = 0; i < 2; i++) pid[i] = spawn_import(json[i], log[i]);
  for (int done = 0; done < 2 && pid[0] > 0 && pid[1] > 0; done++) {
    int st = 0;
    pid_t p = waitpid(-1, &st, 0);
    for (int i = 0; i < 2; i++)
      if (p == pid[i]) {
        took[i] = now_s() - t0;
        code[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
      }
  }
  size_t len;
  for (int i = 0; i < 2; i++) {
    char *text = read_file(log[i], &len);
    if (code[i] != 0) {
      /* The one allowed failure: the message says what to do, and doing it completes the file. */
      if (!text || !strstr(text, "run the import again")) FT_FAIL_AT_("import %s: exit %d: %s", json[i], code[i], text);
      char a[256];
      snprintf(a, sizeof a, "--db big.db import %s", json[i]);
      ASSERT_EQ_INT(run(a), 0);
      printf("note: import %s failed after %.1f s and was run again: %s", json[i], took[i], text);
    }
    free(text);
  }
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  long rows = -1;
  ASSERT_OK(sqlite3_open("big.db", &h));
  ASSERT_OK(sqlite3_prepare_v2(h, "SELECT count(*) FROM results", -1, &st, NULL));
  if (sqlite3_step(st) == SQLITE_ROW) rows = (long)sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  ASSERT_EQ_INT((int)rows, 2 * n);
  printf("BENCH concurrent imports: 2 x %d results (%.0f MB each, written in %.1f s): %s %.1f s exit %d, "
         "%s %.1f s exit %d; %ld rows\n",
         n, file_size("big1.json") / 1e6, t_write, json[0], took[0], code[0], json[1], took[1], code[1], rows);
  fflush(stdout);
  unlink("big1.json");
  unlink("big2.json");
}

/* ---------------------------------------------------------------------------------------------
 * Item 10: read commands leave no -wal or -shm beside a database that had none */

/* How many of db's side files (-wal, -shm) exist. */
static int side_files(const char *db) {
  char p[700];
  int n = 0;
  snprintf(p, sizeof p, "%s-wal", db);
  n += access(p, F_OK) == 0;
  snprintf(p, sizeof p, "%s-shm", db);
  n += access(p, F_OK) == 0;
  return n;
}

static const char *const k_reads[] = {
    "list", "list --json", "query --shape 128x256x64 --epilogue relu", "export --out side-out.json",
    "export --format csv", "report -o side.html", "bench --shape 128x256x64 --epilogue relu", "devices",
    "variants --shape 128x256x64"};

/* Each read command, on a database with no side files; list, export and report must succeed
 * (the others need a GPU, and fail here or not: the files are what counts). */
static void reads_leave_nothing(const char *db) {
  for (size_t i = 0; i < sizeof k_reads / sizeof k_reads[0]; i++) {
    char a[512];
    snprintf(a, sizeof a, "--db %s %s", db, k_reads[i]);
    int code = run(a);
    if ((i < 2 || (i >= 3 && i <= 5)) && code != 0) FT_FAIL_AT_("'%s': exit %d: %s", a, code, R.out);
    if (side_files(db)) FT_FAIL_AT_("'%s' left %d side file(s) beside %s", a, side_files(db), db);
  }
}

/* Runs the read commands as user nobody on PATH, whose folder or file is not writable: list
 * and export work, say nothing on stderr. Returns 0, or -1 when nobody cannot run here. */
static int nobody_reads(const char *path) {
  char *list[] = {(char *)cli, "--db", (char *)path, "list", NULL};
  char *exp[] = {(char *)cli, "--db", (char *)path, "export", "--format", "csv", NULL};
  char *const *cmds[] = {list, exp};
  for (int i = 0; i < 2; i++) {
    int rc = run_as_nobody(cmds[i]);
    if (rc < 0) return -1;
    size_t n;
    char *o = read_file("nobody.out", &n), *e = read_file("nobody.err", &n);
    if (rc != 0 || !e || e[0]) FT_FAIL_AT_("%s %s on %s as nobody: exit %d, stderr \"%s\"", cmds[i][3],
                                          i ? "--format csv" : "", path, rc, e ? e : "?");
    ASSERT_CONTAINS(o, i ? "22222222-2222-4222-8222-000000000019" : "128x256x64");
    free(o);
    free(e);
  }
  return 0;
}

static void test_read_side_files(void) {
  write_doc("side.json", 20, 0, NULL);
  ASSERT_EQ_INT(run("--db side.db import side.json"), 0);
  ASSERT_EQ_INT(side_files("side.db"), 0); /* a write command removes its own on close */
  reads_leave_nothing("side.db");

  /* A writer holds the database open with frames in its WAL: readers use that WAL and leave it
   * as it is (SQLite removes it only on the last close, under an exclusive lock). */
  sqlite3 *w = NULL;
  ASSERT_OK(sqlite3_open("side.db", &w));
  ASSERT_OK(sqlite3_exec(w, "PRAGMA wal_autocheckpoint = 0; INSERT INTO meta (key, value) VALUES ('side1', 'x')",
                         NULL, NULL, NULL));
  const long wal = file_size("side.db-wal");
  ASSERT_TRUE(wal > 0);
  ASSERT_EQ_INT(run("--db side.db list"), 0);
  ASSERT_EQ_INT(side_files("side.db"), 2);
  ASSERT_EQ_INT((int)(file_size("side.db-wal") == wal), 1);
  /* ... also while it is in the middle of a write transaction */
  ASSERT_OK(sqlite3_exec(w, "BEGIN IMMEDIATE; INSERT INTO meta (key, value) VALUES ('side2', 'y')", NULL, NULL, NULL));
  ASSERT_EQ_INT(run("--db side.db export --format csv"), 0);
  ASSERT_CONTAINS(R.out, "22222222-2222-4222-8222-000000000019");
  ASSERT_OK(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL));
  ASSERT_EQ_INT(side_files("side.db"), 2);
  sqlite3_stmt *st = NULL;
  ASSERT_OK(sqlite3_prepare_v2(w, "SELECT (SELECT count(*) FROM meta WHERE key LIKE 'side%'),"
                                  " (SELECT integrity_check FROM pragma_integrity_check)", -1, &st, NULL));
  ASSERT_EQ_INT(sqlite3_step(st), SQLITE_ROW);
  ASSERT_EQ_INT(sqlite3_column_int(st, 0), 2);
  ASSERT_EQ_STR((const char *)sqlite3_column_text(st, 1), "ok");
  sqlite3_finalize(st);
  sqlite3_close(w);
  ASSERT_EQ_INT(side_files("side.db"), 0); /* the writer was the last: it removed them */

  /* A real writer: list in a loop while an import of 10000 results commits its batches. */
  write_doc("side-big.json", 10000, 100, NULL);
  ASSERT_EQ_INT(sh("\"$FT_CLI\" --db side.db import side-big.json > side-imp.log 2>&1 & p=$!; n=0;"
                   " while kill -0 $p 2>/dev/null; do \"$FT_CLI\" --db side.db list > /dev/null || echo LISTFAIL;"
                   " n=$((n+1)); done; wait $p; echo \"import $? lists $n\"; cat side-imp.log"),
                0);
  ASSERT_CONTAINS(R.out, "import 0 lists");
  ASSERT_TRUE(strstr(R.out, "LISTFAIL") == NULL);
  ASSERT_EQ_INT(side_files("side.db"), 0);
  ASSERT_EQ_INT(sh("\"$FT_CLI\" --db side.db export --format csv | wc -l"), 0);
  ASSERT_EQ_INT(atoi(R.out), 10020 + 1);

  /* Files and folders the reader may not write (as user nobody; root is not bound by modes). */
  if (geteuid() != 0) {
    fprintf(stderr, "note: not root, so no user nobody to switch to; read-only checks skipped\n");
    return;
  }
  ASSERT_EQ_INT(sh("rm -rf ro && mkdir ro && cp side.db ro/side.db && chmod 0444 ro/side.db && chmod 0555 ro"), 0);
  if (nobody_reads("ro/side.db") < 0) {
    fprintf(stderr, "note: cannot run as nobody here; read-only checks skipped\n");
    chmod("ro", 0755);
    return;
  }
  ASSERT_EQ_INT(side_files("ro/side.db"), 0);
  ASSERT_EQ_INT(sh("cmp side.db ro/side.db"), 0); /* not a byte changed */
  /* A file nobody may write, in a folder it may not write either: immutable fallback. */
  ASSERT_OK(chown("ro/side.db", 65534, 65534));
  ASSERT_OK(chmod("ro/side.db", 0644));
  ASSERT_EQ_INT(nobody_reads("ro/side.db"), 0);
  ASSERT_EQ_INT(side_files("ro/side.db"), 0);
  /* A file nobody may not write, in a folder it may: SQLite makes -wal and -shm, which a
   * connection that may not write cannot remove; the next reader that may, removes them. */
  ASSERT_OK(chown("ro/side.db", 0, 0));
  ASSERT_OK(chmod("ro/side.db", 0444));
  ASSERT_OK(chmod("ro", 0777));
  ASSERT_EQ_INT(nobody_reads("ro/side.db"), 0);
  ASSERT_EQ_INT(run("--db ro/side.db list"), 0);
  ASSERT_EQ_INT(side_files("ro/side.db"), 0);
  ASSERT_EQ_INT(sh("cmp side.db ro/side.db"), 0);
  chmod("ro", 0755);
}

/* ---------------------------------------------------------------------------------------------
 * Item 5: import reads only regular files, at most 1 GiB */

static void test_import_inputs(void) {
  ASSERT_EQ_INT(run("--db z.db init"), 0);
  /* /dev/zero: refused at once, before reading a byte (it took 1.2 GB before). */
  ASSERT_EQ_INT(run("--db z.db import /dev/zero"), 1);
  ASSERT_CONTAINS(R.out, "cannot import /dev/zero: not a regular file");
  ASSERT_EQ_INT(lines(R.out), 1);
  /* A FIFO without a writer: refused, not waited on. */
  ASSERT_EQ_INT(mkfifo("in.fifo", 0644), 0);
  ASSERT_EQ_INT(sh("timeout 20 \"$FT_CLI\" --db z.db import in.fifo"), 1);
  ASSERT_CONTAINS(R.out, "not a regular file");
  /* A sparse file of 1 GiB + 1 byte: refused from its size, without reading it. */
  int fd = open("huge.json", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_TRUE(fd >= 0 && ftruncate(fd, (off_t)((1LL << 30) + 1)) == 0);
  close(fd);
  ASSERT_EQ_INT(run("--db z.db import huge.json"), 1);
  ASSERT_CONTAINS(R.out, "larger than the limit of 1073741824 bytes");
  unlink("huge.json");
  ASSERT_EQ_INT(run("--db z.db list"), 0);
  ASSERT_CONTAINS(R.out, "nothing tuned yet");
}

int main(void) {
  cli = getenv("FT_CLI");
  const char *tmp = getenv("FT_TEST_TMP");
  if (!cli) RETURN_FAIL("FT_CLI is not set (run through ctest)");
  snprintf(dir, sizeof dir, "%s/hardening_io_%ld", tmp ? tmp : "/tmp", (long)getpid());
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
  if (system(cmd) != 0 || chdir(dir) != 0) RETURN_FAIL("cannot make the scratch folder %s", dir);
  ft_epilogue *ep = NULL;
  ft_err err;
  if (ft_ep_parse("relu(x)", &ep, &err) != FT_OK) RETURN_FAIL("relu(x): %s", err.msg);
  snprintf(g_canon, sizeof g_canon, "%s", ft_ep_canonical(ep));
  snprintf(g_hash, sizeof g_hash, "%s", ft_ep_hash(ep));
  ft_ep_free(ep);
  /* FT_TEST_ONLY=name runs the tests whose name contains it; FT_TEST_QUICK=1 skips the large
   * concurrent imports and the wait for a busy database. */
  static const struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {{"export_out", test_export_out},       {"import_inputs", test_import_inputs},
               {"import_cubins", test_import_cubins}, {"import_values", test_import_values},
               {"concurrent_imports", test_concurrent_imports}, {"import_waits", test_import_waits},
               {"read_side_files", test_read_side_files}};
  const char *only = getenv("FT_TEST_ONLY");
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    if (only && !strstr(tests[i].name, only)) continue;
    if (!only && getenv("FT_TEST_QUICK") && (tests[i].fn == test_concurrent_imports || tests[i].fn == test_import_waits))
      continue;
    tests[i].fn();
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!ft_test_failures && system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  return FT_TEST_DONE();
}
