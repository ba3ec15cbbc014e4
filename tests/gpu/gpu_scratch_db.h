/* A GPU test's scratch database: $FT_TEST_TMP (or /tmp)/<name>_<pid>.db, removed first, created
 * and opened into *ctx (NULL on failure, counted by ASSERT_OK). */
#ifndef GPU_SCRATCH_DB_H
#define GPU_SCRATCH_DB_H

#include <unistd.h>

#include "ft_test.h"
#include "fusedtune_tool.h"

static inline void gpu_scratch_db(char *path, size_t len, const char *name, ft_ctx **ctx) {
  const char *tmp = getenv("FT_TEST_TMP");
  snprintf(path, len, "%s/%s_%ld.db", tmp ? tmp : "/tmp", name, (long)getpid());
  ft_remove_database(path);
  *ctx = NULL;
  ASSERT_OK(ft_open(path, FT_OPEN_CREATE, ctx));
}

#endif
