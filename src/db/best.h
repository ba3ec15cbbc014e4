/* Which stored result today's fusedtune can launch as the best: the stored best unless it was
 * measured with a kernel source other than the one generated now (stale), in which case the
 * best-ranked current one. */
#ifndef FT_BEST_H
#define FT_BEST_H

#include "db.h"
#include "epilogue.h"

/* Whether b's kernel source is the one generated today; NULL checker: regenerate and compare. */
typedef int (*ft_source_check)(void *user, const ft_best *b);
int ft_best_source_is_current(const ft_best *b, const ft_epilogue *ep);

/* FT_OK with *out; FT_ERR_NOT_FOUND when nothing current exists (*stale set when only stale
 * results do). */
ft_status ft_best_current(ft_db *db, int64_t device_id, const ft_problem_key *key, const ft_epilogue *ep,
                          ft_source_check check, void *user, ft_best *out, int *stale, ft_err *err);

#endif
