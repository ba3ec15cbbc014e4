/* Built against the installed package only: the version, and the statuses the header documents
 * for opening and looking up, each one checked. Without a GPU it also calls ft_tune, which
 * looks for the worker executable before it finds no device (.ci/run watches that lookup). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <cuda_runtime_api.h>
#include <fusedtune.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures = 0;

static void expect(const char *what, ft_status got, ft_status want, const ft_ctx *ctx) {
  if (got == want) return;
  fprintf(stderr, "%s: %s (%s), expected %s\n", what, ft_status_string(got), ctx ? ft_errmsg(ctx) : "no context",
          ft_status_string(want));
  failures++;
}

int main(void) {
  if (ft_version_number() != FUSEDTUNE_VERSION_NUMBER) {
    fprintf(stderr, "header %d but library %d\n", FUSEDTUNE_VERSION_NUMBER, ft_version_number());
    return 1;
  }
  const char *tmp = getenv("TMPDIR");
  char dir[1024], path[1100], side[1200];
  snprintf(dir, sizeof dir, "%s/ft_consumer_XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  snprintf(path, sizeof path, "%s/results.db", dir);

  ft_ctx *ctx = NULL;
  expect("ft_open of a missing file without FT_OPEN_CREATE", ft_open(path, 0, &ctx), FT_ERR_NOT_FOUND, ctx);
  ft_close(ctx);
  ctx = NULL;
  if (access(path, F_OK) == 0) {
    fprintf(stderr, "ft_open without FT_OPEN_CREATE made %s\n", path);
    failures++;
  }
  expect("ft_open with FT_OPEN_CREATE", ft_open(path, FT_OPEN_CREATE, &ctx), FT_OK, ctx);
  if (ctx) {
    int ndev = 0;
    const int gpu = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0;
    ft_problem p = {128, 256, 512, "minsub", FT_MATH_FP32};
    ft_config cfg;
    /* Nothing was tuned: a miss on a GPU, and no device to key the lookup on without one. */
    expect("ft_lookup on an empty database", ft_lookup(ctx, &p, 0, &cfg), gpu ? FT_ERR_NOT_FOUND : FT_ERR_NO_DEVICE,
           ctx);
    if (!gpu) {
      ft_tune_options opt = FT_TUNE_OPTIONS_INIT;
      expect("ft_tune without a GPU", ft_tune(ctx, &p, &opt, &cfg), FT_ERR_NO_DEVICE, ctx);
    }
    printf("fusedtune %s linked (%s GPU)\n", ft_version_string(), gpu ? "with a" : "without a");
  }
  ft_close(ctx);
  const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    snprintf(side, sizeof side, "%s%s", path, suffixes[i]);
    unlink(side);
  }
  rmdir(dir);
  return failures ? 1 : 0;
}
