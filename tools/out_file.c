/* The output file of export and report: written through a temporary file beside it and renamed
 * over it only when complete, so a failed command never leaves half a file; what is refused is
 * refused before anything is written. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The folder holding path (".", or the text before its last slash), stat'ed. */
static int stat_folder(const char *path, struct stat *sb) {
  const char *slash = strrchr(path, '/');
  if (!slash) return stat(".", sb);
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (!d) return -1;
  memcpy(d, path, n);
  d[n] = 0;
  int rc = stat(d, sb);
  free(d);
  return rc;
}

/* Whether path (its last component base) is the database's -wal, -shm or -journal file: SQLite
 * removes those when the database closes and rewrites them while it is open, so an export there
 * would be lost. Compared by folder identity and name, since the file need not exist yet, and by
 * inode, for a hard link to one that does. */
static int names_side_file(const char *path, const char *base, const char *db_path) {
  static const char *const suffix[] = {"-wal", "-shm", "-journal"};
  const char *db_slash = strrchr(db_path, '/');
  const char *db_base = db_slash ? db_slash + 1 : db_path;
  size_t nb = strlen(db_base);
  struct stat out_dir, db_dir, out_sb, side_sb;
  int have_dirs = -1, have_out = stat(path, &out_sb) == 0;
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    size_t ns = strlen(suffix[i]);
    if (strlen(base) == nb + ns && !strncmp(base, db_base, nb) && !strcmp(base + nb, suffix[i])) {
      if (have_dirs < 0) have_dirs = stat_folder(path, &out_dir) == 0 && stat_folder(db_path, &db_dir) == 0;
      if (have_dirs && out_dir.st_dev == db_dir.st_dev && out_dir.st_ino == db_dir.st_ino) return 1;
    }
    if (!have_out) continue;
    size_t nd = strlen(db_path);
    char *side = malloc(nd + ns + 1);
    if (!side) continue;
    memcpy(side, db_path, nd);
    memcpy(side + nd, suffix[i], ns + 1);
    int same = stat(side, &side_sb) == 0 && side_sb.st_dev == out_sb.st_dev && side_sb.st_ino == out_sb.st_ino;
    free(side);
    if (same) return 1;
  }
  return 0;
}

int out_open(out_file *o, const char *path, const char *db_path, const char *cmd) {
  struct stat sb, db;
  o->dir_fd = AT_FDCWD;
  o->f = NULL;
  o->tmp[0] = 0;
  int existing = lstat(path, &sb) == 0;
  if (!existing && errno != ENOENT) return fail_msg("%s: cannot write %s: %s", cmd, path, strerror(errno));
  if (existing && S_ISLNK(sb.st_mode))
    return fail_msg("%s: %s is a symbolic link: refusing to replace it (name the file it points to)", cmd, path);
  if (existing && !S_ISREG(sb.st_mode))
    return fail_msg("%s: %s is not a regular file (a directory, device, FIFO or socket): refusing to replace it", cmd,
                    path);
  if (existing && db_path && stat(db_path, &db) == 0 && db.st_dev == sb.st_dev && db.st_ino == sb.st_ino)
    return fail_msg("%s: %s is the database being %s: choose another --out", cmd, path,
                    strcmp(cmd, "export") ? "read" : "exported");
  const char *slash = strrchr(path, '/');
  o->base = slash ? slash + 1 : path;
  if (!*o->base) return fail_msg("%s: --out %s names a folder, not a file", cmd, path);
  if (db_path && names_side_file(path, o->base, db_path))
    return fail_msg("%s: %s is a file SQLite keeps beside the database being %s (removed or overwritten by "
                    "it): choose another --out", cmd, path, strcmp(cmd, "export") ? "read" : "exported");
  if (slash) {
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *dir = malloc(n + 1);
    if (!dir) return fail_msg("out of memory");
    memcpy(dir, path, n);
    dir[n] = 0;
    o->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int e = errno;
    free(dir);
    if (o->dir_fd < 0) return fail_msg("%s: cannot write %s: its folder: %s", cmd, path, strerror(e));
  }
  /* O_EXCL on a fresh name: like mkstemp, but relative to the folder, so the length of the
   * file's own name never matters. */
  mode_t mode = existing ? (sb.st_mode & 07777) : 0666;
  unsigned long seed = (unsigned long)getpid() * 2654435761u ^ (unsigned long)time(NULL);
  int fd = -1;
  for (int i = 0; i < 100 && fd < 0; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    snprintf(o->tmp, sizeof o->tmp, ".fusedtune-%.16s.%016lx", cmd, seed);
    fd = openat(o->dir_fd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, existing ? 0600 : mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    o->tmp[0] = 0;
    return fail_msg("%s: cannot create a temporary file beside %s: %s", cmd, path, strerror(e));
  }
  /* An existing file keeps its mode (the umask applied to a new one only). */
  if ((existing && fchmod(fd, mode) != 0) || !(o->f = fdopen(fd, "w"))) {
    int e = errno;
    close(fd);
    return fail_msg("%s: cannot write %s: %s", cmd, path, strerror(e));
  }
  return 0;
}

int out_close(out_file *o, int ok) {
  int rc = 0;
  if (o->f && fclose(o->f) != 0) rc = -1;
  if (o->tmp[0]) {
    if (ok && rc == 0 && renameat(o->dir_fd, o->tmp, o->dir_fd, o->base) != 0) rc = -1;
    if (!ok || rc != 0) unlinkat(o->dir_fd, o->tmp, 0);
  }
  if (o->dir_fd >= 0) close(o->dir_fd);
  return rc;
}
