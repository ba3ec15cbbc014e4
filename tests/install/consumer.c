/* Built against the installed package only: checks the version and a database round trip. */
#include <fusedtune.h>
#include <stdio.h>

int main(void) {
  if (ft_version_number() != FUSEDTUNE_VERSION_NUMBER) {
    fprintf(stderr, "header %d but library %d\n", FUSEDTUNE_VERSION_NUMBER, ft_version_number());
    return 1;
  }
  ft_ctx *ctx = NULL;
  ft_status s = ft_open(":memory:", FT_OPEN_CREATE, &ctx);
  if (s != FT_OK) {
    fprintf(stderr, "ft_open: %s: %s\n", ft_status_string(s), ft_errmsg(ctx));
    ft_close(ctx);
    return 1;
  }
  ft_problem p = {128, 16384, 16384, "minsub", FT_MATH_FP32};
  ft_config cfg;
  s = ft_lookup(ctx, &p, 0, &cfg);
  printf("fusedtune %s linked; lookup without tuning: %s (%s)\n", ft_version_string(), ft_status_string(s),
         ft_errmsg(ctx));
  ft_close(ctx);
  return s == FT_OK ? 1 : 0; /* nothing was tuned, so a hit would be a bug */
}
