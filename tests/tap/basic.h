/*
 * tests/tap/basic.h: a small TAP producer for trnbench's C tests, after the API of
 * c-tap-harness (plan, ok, is_int, is_double, is_string, skip, skip_all, diag, bail).
 * The expected value comes first. diag() writes to stderr so prove shows failures
 * without -v. A test exits 0 once it ran (prove counts the "not ok" lines); bail()
 * exits 255. The OK/IS_* macros add __FILE__ and __LINE__ to the failure message.
 */
#ifndef TB_TAP_BASIC_H
#define TB_TAP_BASIC_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __GNUC__
#define TAP_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TAP_NORETURN     __attribute__((noreturn))
#else
#define TAP_PRINTF(f, a)
#define TAP_NORETURN
#endif

/* Declare n tests; stdout becomes line-buffered; a mismatch is reported at exit. */
void plan(int n);
/* Count as we go and print the plan at exit. */
void plan_lazy(void);
/* Print "1..0 # SKIP reason" and exit 0. */
TAP_NORETURN void skip_all(const char *fmt, ...) TAP_PRINTF(1, 2);

/* Each returns whether the test passed. */
bool ok(bool pass, const char *fmt, ...) TAP_PRINTF(2, 3);
bool is_int(long long expected, long long got, const char *fmt, ...) TAP_PRINTF(3, 4);
/* Passes when |expected - got| <= eps, or both are NaN. */
bool is_double(double expected, double got, double eps, const char *fmt, ...) TAP_PRINTF(4, 5);
/* Passes when |expected - got| <= rel * |expected|. */
bool is_rel(double expected, double got, double rel, const char *fmt, ...) TAP_PRINTF(4, 5);
bool is_string(const char *expected, const char *got, const char *fmt, ...) TAP_PRINTF(3, 4);
void skip(const char *fmt, ...) TAP_PRINTF(1, 2);
void skip_block(int n, const char *fmt, ...) TAP_PRINTF(2, 3);
void diag(const char *fmt, ...) TAP_PRINTF(1, 2);
TAP_NORETURN void bail(const char *fmt, ...) TAP_PRINTF(1, 2);

/* Append s (static, or NULL for none) to every later test's description: one program
 * running the same tests on two targets names which ("... (cuemu)"). */
void tap_suffix(const char *s);

/* Where the next failure happened; set by the macros below. */
void tap_where(const char *file, int line);

#define OK(...)        (tap_where(__FILE__, __LINE__), ok(__VA_ARGS__))
#define IS_INT(...)    (tap_where(__FILE__, __LINE__), is_int(__VA_ARGS__))
#define IS_DOUBLE(...) (tap_where(__FILE__, __LINE__), is_double(__VA_ARGS__))
#define IS_REL(...)    (tap_where(__FILE__, __LINE__), is_rel(__VA_ARGS__))
#define IS_STRING(...) (tap_where(__FILE__, __LINE__), is_string(__VA_ARGS__))

/* Fixture and scratch paths: $TB_SRCDIR/rel and $TB_BUILDDIR/tests/tmp/rel (or "." and
 * "build" when unset). The result is malloc'ed; bail() on allocation failure. */
char *test_src_path(const char *rel);
char *test_tmp_path(const char *rel);

#endif
