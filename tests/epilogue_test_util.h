/* What the epilogue tests share: a parse that must succeed, and one that must fail at a column
 * with a one-line message (test_epilogue, test_epilogue_reduce). */
#ifndef FT_TEST_EPILOGUE_UTIL_H
#define FT_TEST_EPILOGUE_UTIL_H

#include "epilogue.h"
#include "ft_test.h"

/* Parses text, which must succeed; NULL (and a recorded failure) otherwise. */
static inline ft_epilogue *parse_ok_at(const char *text, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_parse(text, &ep, &err);
  if (s != FT_OK) {
    fprintf(stderr, "%s:%d: parse of \"%s\" failed: %s\n", __FILE__, line, text, err.msg);
    ft_test_failures++;
  }
  return ep;
}
#define parse_ok(text) parse_ok_at((text), __LINE__)

/* The parse must fail with FT_ERR_PARSE at column col, the message (one line) containing what. */
static inline void expect_reject_at(const char *text, int col, const char *what, int line) {
  ft_epilogue *ep = NULL;
  ft_err err;
  ft__err_clear(&err);
  ft_status s = ft_ep_parse(text, &ep, &err);
  char want[32];
  snprintf(want, sizeof want, "epilogue: col %d: ", col);
  if (s != FT_ERR_PARSE || ep || strncmp(err.msg, want, strlen(want)) != 0 || !strstr(err.msg, what) ||
      strchr(err.msg, '\n')) {
    fprintf(stderr, "%s:%d: \"%.60s\": status %d, message \"%s\"; want \"%s...%s\"\n", __FILE__, line, text,
            (int)s, err.msg, want, what);
    ft_test_failures++;
  }
  ft_ep_free(ep);
}
#define REJECT(text, col, what) expect_reject_at((text), (col), (what), __LINE__)

#endif
