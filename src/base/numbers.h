/* Numbers on the host: the random inputs (splitmix64, the same values on every machine, so every
 * candidate of a problem sees identical data) and the 16-bit formats the modes compute in.
 * GPU-free. */
#ifndef FT_NUMBERS_H
#define FT_NUMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "fusedtune.h"

/* splitmix64's increment: a state advanced past n values is s + n * FT_RNG_STEP. */
#define FT_RNG_STEP 0x9e3779b97f4a7c15ULL

/* a[0..n) uniform in [lo, hi) from splitmix64 with state *s (the i-th value from its i-th
 * output), advancing *s past the n values; computed in chunks on several threads, the same
 * values as one thread drawing them in order. GPU-free. */
void ft_fill_uniform(float *a, size_t n, float lo, float hi, uint64_t *s);

/* Host conversions, round to nearest even; NaN stays NaN (quiet), out-of-range values become
 * infinities. GPU-free. */
uint16_t ft_f32_to_bf16(float f);
uint16_t ft_f32_to_f16(float f);
float ft_bf16_to_f32(uint16_t h);
float ft_f16_to_f32(uint16_t h);
/* A value of type dt rounded from f, as a float (exact). */
float ft_round_to(ft_dtype dt, float f);
/* Element i of an array of type dt, as a double (exact). */
double ft_elem_to_double(ft_dtype dt, const void *base, size_t i);

/* The most chunks a host loop runs in. */
#define FT_MAX_CHUNKS 64
/* The chunks a host loop over n elements runs in on several threads (src/base/parallel.h): the count
 * depends on the length only, so sums combined in chunk order are the same on every machine. */
int ft_host_chunks(size_t n);

#endif
