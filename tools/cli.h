/* Shared pieces of the fusedtune command line. */
#ifndef FT_CLI_H
#define FT_CLI_H

#include <stdio.h>

#include "common.h"
#include "db.h"
#include "epilogue.h"

/* Exit codes: 0 success, 1 failure, 2 usage error, 3 nothing tuned for the key (query). */
enum { EXIT_USAGE = 2, EXIT_NOT_TUNED = 3 };

typedef struct cli {
  const char *db_path; /* --db, else $FUSEDTUNE_DB, else ./fusedtune.db */
  const char *prog;
} cli;

/* Option scanning: each command walks argv with these. */
typedef struct opt_iter {
  int argc;
  char **argv;
  int i;
  const char *cmd;
} opt_iter;

/* Returns the next option name ("--shape") or positional (kind 'p'); NULL at the end. */
const char *opt_next(opt_iter *it, int *positional);
/* The value of the option just returned (next argv, or after '='); NULL after a usage error. */
const char *opt_value(opt_iter *it, const char *name);

int usage_error(const char *cmd, const char *fmt, ...) FT_PRINTF(2, 3);
/* Prints text and returns 1 when argv holds -h or --help. */
int wants_help(int argc, char **argv, const char *text);
int fail_msg(const char *fmt, ...) FT_PRINTF(1, 2);
int fail_err(const ft_err *e);

/* "MxNxK" with each a positive integer within the kernels' limits. */
int parse_shape(const char *s, int64_t *m, int64_t *n, int64_t *k, char *why, size_t whylen);
int parse_math(const char *s, ft_math *out);
int parse_double(const char *s, double *out);
int parse_int(const char *s, long lo, long hi, long *out);

/* Parses --shape and --epilogue into a problem key and the parsed epilogue (*ep, caller frees).
 * Returns 0, or the exit code after printing the error. */
int cli_problem_key(const char *cmd, const char *shape, const char *epi, ft_problem_key *key,
                    ft_epilogue **ep, ft_err *err);

/* Opens the database for a command: read commands never create it. */
ft_status cli_open_db(const cli *c, int write, ft_db **db, ft_err *err);
const char *cli_db_path(const cli *c);

int cmd_init(cli *c, int argc, char **argv);
int cmd_list(cli *c, int argc, char **argv);
int cmd_query(cli *c, int argc, char **argv);
int cmd_export(cli *c, int argc, char **argv);
int cmd_import(cli *c, int argc, char **argv);
int cmd_tune(cli *c, int argc, char **argv);
int cmd_devices(cli *c, int argc, char **argv);
int cmd_variants(cli *c, int argc, char **argv);
int cmd_epilogue(cli *c, int argc, char **argv);
int cmd_bench(cli *c, int argc, char **argv);

#endif
