/* Runs a libFuzzer target over every file of the corpus folders named on the command line, so
 * the committed corpus is replayed by CTest (with sanitizers when FUSEDTUNE_SANITIZE=ON) even
 * where libFuzzer is not available. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Set by a target that says whether it took its input (fuzz_import); -1 where none does. */
__attribute__((weak)) int fuzz_accepted = -1;
static int mismatches; /* seeds taken or refused against their name */

/* A seed named valid_* must be taken and bad_* refused, where the target says which. */
static int expected(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (fuzz_accepted < 0) return 1;
  if ((!strncmp(base, "valid_", 6) && fuzz_accepted != 1) || (!strncmp(base, "bad_", 4) && fuzz_accepted != 0)) {
    fprintf(stderr, "%s: %s\n", path, fuzz_accepted ? "accepted, but named bad_" : "refused, but named valid_");
    return 0;
  }
  return 1;
}

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  unsigned char *buf = NULL;
  size_t len = 0, cap = 0, got;
  unsigned char chunk[4096];
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + got > cap) {
      cap = (len + got) * 2;
      unsigned char *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return -1;
      }
      buf = nb;
    }
    memcpy(buf + len, chunk, got);
    len += got;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf ? buf : (const uint8_t *)"", len);
  free(buf);
  if (!expected(path)) mismatches++;
  return 1;
}

int main(int argc, char **argv) {
  int n = 0;
  for (int i = 1; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      int r = run_file(argv[i]);
      if (r < 0) return 1;
      n += r;
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      int r = run_file(path);
      if (r < 0) {
        closedir(d);
        return 1;
      }
      n += r;
    }
    closedir(d);
  }
  printf("replayed %d inputs%s\n", n, mismatches ? ", some against their names (above)" : "");
  return n > 0 && !mismatches ? 0 : 1;
}
