/*
 * tests/tap/float.h: comparing a fast path's float tensors with a reference (ggml's
 * NMSE and the worst absolute error), for the engine tests.
 */
#ifndef TB_TAP_FLOAT_H
#define TB_TAP_FLOAT_H

#include <stdbool.h>
#include <stddef.h>

/* Float results against double expectations: the largest absolute error, the largest
 * |expected|, and NMSE = sum (got - exp)^2 / sum exp^2 (infinite when exp is all 0). */
struct tap_cmp {
    double max_abs, max_ref, nmse;
};

struct tap_cmp tap_compare(const float *got, const double *exp, size_t n);
/* The same against float expectations (bail()s when memory runs out). */
struct tap_cmp tap_compare_f(const float *got, const float *exp, size_t n);
/* Whether every value is finite. */
bool tap_all_finite(const float *p, size_t n);

#endif
