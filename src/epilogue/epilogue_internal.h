/* Shared by the epilogue_*.c files: epilogue.c (tables, presets, entry points), epilogue_lex.c,
 * epilogue_parse.c, epilogue_print.c, epilogue_eval.c and epilogue_eager.c. Not part of the
 * interface other modules use: that is epilogue.h.
 *
 * Numbers are read with strtod and printed with snprintf, so LC_NUMERIC must be "C" (the
 * default of every C program that does not call setlocale). */
#ifndef FT_EPILOGUE_INTERNAL_H
#define FT_EPILOGUE_INTERNAL_H

#include "epilogue.h"

/* Functions of the language (the table is in epilogue.c). */
typedef enum fn_id {
  FN_MIN, FN_MAX, FN_RELU, FN_LEAKY_RELU, FN_GELU, FN_GELU_TANH, FN_SIGMOID, FN_SILU, FN_TANH,
  FN_MISH, FN_SOFTPLUS, FN_ELU, FN_CLAMP, FN_ABS, FN_EXP, FN_LOG, FN_SQRT, FN_COUNT
} fn_id;

typedef struct fn_def {
  const char *name; /* canonical spelling */
  int arity;
  const char *cuda; /* device function in kernels_src/ft_math.cuh */
} fn_def;

extern const fn_def ft__ep_fns[FN_COUNT];

/* The AST: nodes in one array, children always before their parents. */
typedef enum node_kind {
  N_NUM, N_X, N_PARAM, N_REF, N_X2, N_NEG, N_ADD, N_SUB, N_MUL, N_DIV, N_CALL,
  N_RED /* a reduction: fn is its ft_ep_red, num its integer argument (G, w) or 0 */
} node_kind;

typedef struct ep_node {
  node_kind kind;
  int fn;     /* N_CALL: fn_id */
  int nkids;  /* children used in kid[] */
  int kid[3];
  double num; /* N_NUM: always >= 0 (a minus sign is an N_NEG) */
  int slot;   /* N_PARAM: parameter slot */
  int col;    /* 1-based column of the token that made the node */
  int len;    /* N_REF: length of the name at col */
  int depth;  /* 0 for leaves, 1 + deepest child otherwise */
} ep_node;

struct ft_epilogue {
  ep_node *nodes;
  int nnodes;
  int root;
  ft_ep_param params[FT_EP_MAX_PARAMS];
  int nparams;
  char *canon;
  char *cuda;
  char *cuda_folded; /* the CUDA text with the folded `x + bias` read as x (ft_ep_cuda_folded), or NULL */
  char *red_inner, *red_post; /* a reduction's argument and the rest of E (ft_ep_cuda_reduce), or NULL */
  char *red_pool_arg;         /* with a pool: its windows' argument (ft_ep_cuda_reduce), or NULL */
  char *red_norm_arg;         /* with a batchnorm inside: its argument (ft_ep_norm), or NULL */
  int fold_slot;     /* that bias's slot, or -1 */
  char *cuda_lt_act; /* the CUDA text with the activation cuBLASLt applies read as x (ft_ep_cuda_lt_act), or NULL */
  int lt_act, lt_act_slot; /* that activation (ft_ep_lt_act) and the bias it wraps (slot, or -1) */
  char *cuda_resid;  /* the CUDA text with the residual `x + r` read as x (ft_ep_cuda_resid), or NULL */
  int resid_slot, resid_bias_slot; /* that matrix's slot and the bias added before it (or -1) */
  int uses_x2;       /* E reads x2 (a gated pair's second product) */
  char hash[17];
};

/* Lexer and parser state (epilogue_lex.c, epilogue_parse.c). */
typedef enum tok_kind {
  T_END, T_NUM, T_IDENT, T_PLUS, T_MINUS, T_STAR, T_SLASH, T_LPAREN, T_RPAREN, T_COMMA, T_EQ
} tok_kind;

typedef struct token {
  tok_kind kind;
  int pos; /* 0-based byte offset */
  int len;
  double num;
} token;

/* A declaration from the `where` clause, or the implicit `col bias`. */
typedef struct decl {
  char name[FT_EP_NAME_MAX];
  ft_param_kind kind;
  int has_default;
  double def;
  int col;
  int used;
} decl;

typedef struct parser {
  const char *src;
  int pos;
  token tok;
  int nest; /* current nesting of parentheses, calls and unary minus */
  ep_node *nodes;
  int nnodes, cap;
  decl decls[FT_EP_MAX_PARAMS];
  int ndecls;
  ft_err *err;
} parser;

static inline int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static inline int is_digit(int c) { return c >= '0' && c <= '9'; }
static inline int is_alnum(int c) { return is_alpha(c) || is_digit(c); }
static inline int is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Lexer (epilogue_lex.c). Errors read "epilogue: col C: what". */
ft_status ft__ep_perr(parser *p, int col, const char *fmt, ...) FT_PRINTF(3, 4);
ft_status ft__ep_next_token(parser *p);
int ft__ep_tok_is(const parser *p, const token *t, const char *word);
int ft__ep_is_nonfinite_word(const char *s, int len);
ft_status ft__ep_unexpected(parser *p, const char *expected); /* "expected E, found T" */
ft_status ft__ep_expect(parser *p, tok_kind kind, const char *what);

/* Parses p->src into ep's root, parameters and slots (epilogue_parse.c); the nodes stay in p. */
ft_status ft__ep_parse_text(parser *p, ft_epilogue *ep);

/* Parser pieces epilogue_reduce.c's calls use (epilogue_parse.c). */
ft_status ft__ep_parse_expr(parser *p, int *out);
ft_status ft__ep_new_node(parser *p, node_kind kind, int col, const int *kids, int nkids, int *out);
ft_status ft__ep_enter(parser *p, int col);

/* Reductions (epilogue_reduce.c). The ft_ep_red named s[0, len), or FT_RED_NONE. */
ft_ep_red ft__ep_find_reduction(const char *s, int len);
/* Parses the arguments of reduction r called as `name(`, p->tok on '('. */
ft_status ft__ep_parse_reduction(parser *p, token name, ft_ep_red r, int *out);
/* The nesting rules of docs/EPILOGUE.md ("Reductions"), checked on the resolved tree. */
ft_status ft__ep_check_reductions(parser *p, const ft_epilogue *ep);
/* The CUDA texts of ft_ep_cuda_reduce, set on ep when it has a reduction (epilogue_reduce.c). */
ft_status ft__ep_reduce_texts(ft_epilogue *ep, ft_err *err);
/* The outermost reduction node, or -1; *inner the pool inside it (or -1). */
int ft__ep_outer_reduction(const ft_epilogue *ep, int *inner);
/* The batchnorm inside the outermost reduction (a row reduction of column-normalized values), or -1. */
int ft__ep_inner_norm(const ft_epilogue *ep);
/* The float64 value of node n's subtree at one element, with node leaf (-1: none) read as
 * leaf_value (epilogue_eval.c). */
double ft__ep_eval_at(const ft_epilogue *ep, int n, double x, const double *vals, int leaf, double leaf_value);

/* The node `x + bias` that nn.Linear's addmm folds into its GEMM (the one x added to a column
 * vector), or -1; *slot gets the vector's slot (epilogue_eager.c). */
int ft__ep_bias_fold(const ft_epilogue *ep, int *slot);
/* The node relu(K) or gelu_tanh(K), K being x (occurring once) or that `x + bias`, or -1; *act gets
 * the ft_ep_lt_act, *slot the bias's slot or -1 (epilogue_eager.c). */
int ft__ep_act_fold(const ft_epilogue *ep, int *slot, int *act);
/* The node `K + r`, K being x (occurring once) or that `x + bias` and r a matrix operand, which
 * addmm's form computes in its GEMM (C = r, beta 1), or -1; *mat gets r's slot, *bias the bias's
 * or -1 (epilogue_eager.c). */
int ft__ep_resid_fold(const ft_epilogue *ep, int *mat, int *bias);

/* Printers (epilogue_print.c); both return malloc'd text, NULL when out of memory. The CUDA
 * text of node n reads IN<in_of[k]> for each node k with in_of[k] >= 0, and x for a node with
 * in_of[k] == FT__EP_AS_X (in_of may be NULL). */
#define FT__EP_AS_X (-2)
char *ft__ep_print_canonical(const ft_epilogue *ep);
char *ft__ep_print_cuda(const ft_epilogue *ep, int n, const int *in_of);

#endif
