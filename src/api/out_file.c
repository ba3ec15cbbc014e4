/* An output file written safely (fusedtune_tool.h, ft_out_open): through a temporary file beside
 * it, renamed over it only when complete, so a failed write never leaves half a file; what is
 * refused is refused before anything is written. The CLI's export --out and report -o and the
 * Python package's Database.export_file all come here. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api_internal.h"
#include "fusedtune_tool.h"

struct ft_out {
  int dir_fd;        /* the folder of the path, or AT_FDCWD */
  char *path;        /* as given, for messages */
  const char *base;  /* its last component */
  char what[24];     /* the start of every message ("export") */
  char tmp[64];      /* the temporary file's name in that folder */
  FILE *f;
};

static ft_status out_fail(char *msg, size_t msg_size, ft_status s, const char *fmt, ...) FT_PRINTF(4, 5);
static ft_status out_fail(char *msg, size_t msg_size, ft_status s, const char *fmt, ...) {
  ft_err e;
  char text[sizeof e.msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  ft__fail(&e, s, "%s", text);
  if (msg && msg_size) snprintf(msg, msg_size, "%s", e.msg);
  return s;
}

/* Whether path names a file SQLite keeps beside the database db (stat'ed): the database's
 * -wal, -shm or -journal, which SQLite removes when the database closes and rewrites while it
 * is open, so that an output there would be lost. That is path ending in one of those suffixes
 * where the path without it is the database (by any name: a hard or symbolic link to it opens
 * the same database, with side files of that name), or path a hard link to one that exists. */
static int names_side_file(const char *path, const char *db_path, const struct stat *db) {
  static const char *const suffix[] = {"-wal", "-shm", "-journal"};
  size_t np = strlen(path), nd = strlen(db_path);
  struct stat out_sb, sb;
  int have_out = stat(path, &out_sb) == 0;
  char *buf = malloc((np > nd ? np : nd) + 16);
  if (!buf) return 0;
  int found = 0;
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix && !found; i++) {
    size_t ns = strlen(suffix[i]);
    if (np > ns && !strcmp(path + np - ns, suffix[i]) && path[np - ns - 1] != '/') {
      memcpy(buf, path, np - ns);
      buf[np - ns] = 0;
      found = stat(buf, &sb) == 0 && sb.st_dev == db->st_dev && sb.st_ino == db->st_ino;
    }
    if (!found && have_out) {
      memcpy(buf, db_path, nd);
      memcpy(buf + nd, suffix[i], ns + 1);
      found = stat(buf, &sb) == 0 && sb.st_dev == out_sb.st_dev && sb.st_ino == out_sb.st_ino;
    }
  }
  free(buf);
  return found;
}

static ft_status check_target(ft_out *o, const char *db_path, int *existing, mode_t *mode, char *msg, size_t cap) {
  struct stat sb, db;
  const char *cmd = o->what, *path = o->path;
  const char *being = strcmp(cmd, "export") ? "read" : "exported";
  *existing = lstat(path, &sb) == 0;
  if (!*existing && errno != ENOENT) return out_fail(msg, cap, FT_ERR_IO, "%s: cannot write %s: %s", cmd, path, strerror(errno));
  if (*existing && S_ISLNK(sb.st_mode))
    return out_fail(msg, cap, FT_ERR_IO, "%s: %s is a symbolic link: refusing to replace it (name the file it points to)",
                    cmd, path);
  if (*existing && !S_ISREG(sb.st_mode))
    return out_fail(msg, cap, FT_ERR_IO,
                    "%s: %s is not a regular file (a directory, device, FIFO or socket): refusing to replace it", cmd, path);
  int have_db = db_path && stat(db_path, &db) == 0;
  if (*existing && have_db && db.st_dev == sb.st_dev && db.st_ino == sb.st_ino)
    return out_fail(msg, cap, FT_ERR_IO, "%s: %s is the database being %s: choose another file", cmd, path, being);
  if (!*o->base) return out_fail(msg, cap, FT_ERR_IO, "%s: %s names a folder, not a file", cmd, path);
  if (have_db && names_side_file(path, db_path, &db))
    return out_fail(msg, cap, FT_ERR_IO,
                    "%s: %s is a file SQLite keeps beside the database being %s (removed or overwritten by it): "
                    "choose another file", cmd, path, being);
  *mode = *existing ? (sb.st_mode & 07777) : 0666;
  return FT_OK;
}

ft_status ft_out_open(const char *path, const char *db_path, const char *what, ft_out **out, char *msg,
                      size_t msg_size) {
  if (msg && msg_size) msg[0] = 0;
  if (!out) return out_fail(msg, msg_size, FT_ERR_INVALID_ARG, "ft_out_open: out is NULL");
  *out = NULL;
  if (!path || !*path) return out_fail(msg, msg_size, FT_ERR_INVALID_ARG, "%s: no output file named", what ? what : "output");
  ft_out *o = calloc(1, sizeof *o);
  if (!o || !(o->path = ft__strdup(path))) {
    free(o);
    return out_fail(msg, msg_size, FT_ERR_NOMEM, "out of memory");
  }
  o->dir_fd = AT_FDCWD;
  snprintf(o->what, sizeof o->what, "%s", what && *what ? what : "output");
  const char *slash = strrchr(o->path, '/');
  o->base = slash ? slash + 1 : o->path;
  int existing = 0;
  mode_t mode = 0666;
  ft_status st = check_target(o, db_path, &existing, &mode, msg, msg_size);
  if (st == FT_OK && slash) {
    size_t n = slash == o->path ? 1 : (size_t)(slash - o->path);
    char *dir = malloc(n + 1);
    if (!dir) st = out_fail(msg, msg_size, FT_ERR_NOMEM, "out of memory");
    else {
      memcpy(dir, o->path, n);
      dir[n] = 0;
      o->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      int e = errno;
      free(dir);
      if (o->dir_fd < 0) st = out_fail(msg, msg_size, FT_ERR_IO, "%s: cannot write %s: its folder: %s", o->what, path, strerror(e));
    }
  }
  /* O_EXCL on a fresh name: like mkstemp, but relative to the folder, so the length of the
   * file's own name never matters. */
  int fd = -1;
  if (st == FT_OK) {
    unsigned long seed = (unsigned long)getpid() * 2654435761u ^ (unsigned long)time(NULL) ^ (unsigned long)(uintptr_t)o;
    for (int i = 0; i < 100 && fd < 0; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      snprintf(o->tmp, sizeof o->tmp, ".fusedtune-%.16s.%016lx", o->what, seed);
      fd = openat(o->dir_fd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, existing ? 0600 : mode);
      if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
      int e = errno;
      o->tmp[0] = 0;
      st = out_fail(msg, msg_size, FT_ERR_IO, "%s: cannot create a temporary file beside %s: %s", o->what, path, strerror(e));
    }
  }
  /* An existing file keeps its mode (the umask applies to a new one only). */
  if (st == FT_OK && ((existing && fchmod(fd, mode) != 0) || !(o->f = fdopen(fd, "w")))) {
    int e = errno;
    close(fd);
    st = out_fail(msg, msg_size, FT_ERR_IO, "%s: cannot write %s: %s", o->what, path, strerror(e));
  }
  if (st != FT_OK) {
    ft_out_close(o, 0, NULL, 0);
    return st;
  }
  *out = o;
  return FT_OK;
}

FILE *ft_out_stream(ft_out *o) { return o ? o->f : NULL; }

ft_status ft_out_close(ft_out *o, int commit, char *msg, size_t msg_size) {
  if (msg && msg_size) msg[0] = 0;
  if (!o) return FT_OK;
  ft_status st = FT_OK;
  if (o->f) {
    int bad = ferror(o->f), e = errno;
    if (fclose(o->f) != 0 && !bad) bad = 1, e = errno;
    if (bad && commit) st = out_fail(msg, msg_size, FT_ERR_IO, "%s: writing %s failed: %s", o->what, o->path, strerror(e));
  }
  if (o->tmp[0]) {
    if (commit && st == FT_OK && renameat(o->dir_fd, o->tmp, o->dir_fd, o->base) != 0)
      st = out_fail(msg, msg_size, FT_ERR_IO, "%s: cannot replace %s: %s", o->what, o->path, strerror(errno));
    if (!commit || st != FT_OK) unlinkat(o->dir_fd, o->tmp, 0);
  }
  if (o->dir_fd >= 0) close(o->dir_fd);
  free(o->path);
  free(o);
  return st;
}

ft_status ft_export_file(ft_ctx *ctx, const char *path, unsigned flags) {
  if (!ctx) return FT_ERR_INVALID_ARG;
  ft_err *err = ft__ctx_err(ctx);
  ft__err_clear(err);
  if (flags & ~(FT_EXPORT_CSV | FT_EXPORT_CUBINS))
    return ft__fail(err, FT_ERR_INVALID_ARG, "ft_export_file: unknown flags 0x%x", flags);
  ft_out *o = NULL;
  ft_status st = ft_out_open(path, ft_db_path(ft__ctx_db(ctx)), "export", &o, err->msg, sizeof err->msg);
  if (st != FT_OK) return err->status = st;
  st = ft_export(ctx, ft_out_stream(o), flags);
  if (st != FT_OK) {
    ft_out_close(o, 0, NULL, 0);
    return st;
  }
  st = ft_out_close(o, 1, err->msg, sizeof err->msg);
  return err->status = st;
}
