/* Names of the strategy and result-status lists (fusedtune_tool.h): the text the database and
 * the exports store, made from the lists in one place. */
#include <string.h>

#include "fusedtune_tool.h"

static const char *const k_strategy[] = {
#define FT_NAME_(name, text) text,
    FT_STRATEGY_MAP(FT_NAME_)
#undef FT_NAME_
};
static const char *const k_status[] = {
#define FT_NAME_(name, text) text,
    FT_RESULT_STATUS_MAP(FT_NAME_)
#undef FT_NAME_
};

const char *ft_strategy_name(ft_strategy s) {
  return (unsigned)s < FT_STRATEGY_COUNT ? k_strategy[s] : "?";
}

const char *ft_result_status_name(ft_result_status s) {
  return (unsigned)s < FT_RESULT_STATUS_COUNT ? k_status[s] : "?";
}

int ft_strategy_from_name(const char *text, ft_strategy *out) {
  for (int i = 0; text && i < FT_STRATEGY_COUNT; i++)
    if (strcmp(text, k_strategy[i]) == 0) {
      if (out) *out = (ft_strategy)i;
      return 1;
    }
  return 0;
}

int ft_result_status_from_name(const char *text, ft_result_status *out) {
  for (int i = 0; text && i < FT_RESULT_STATUS_COUNT; i++)
    if (strcmp(text, k_status[i]) == 0) {
      if (out) *out = (ft_result_status)i;
      return 1;
    }
  return 0;
}
