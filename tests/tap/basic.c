/* tests/tap/basic.c: see basic.h. */
#include "basic.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int tap_planned = -1; /* -1: no plan yet */
static int tap_lazy;
static int tap_run;
static int tap_failed;
static const char *tap_file;
static int tap_line;

static void tap_finish(void)
{
    if (tap_lazy)
        printf("1..%d\n", tap_run);
    else if (tap_planned >= 0 && tap_planned != tap_run)
        fprintf(stderr, "# planned %d tests but ran %d\n", tap_planned, tap_run);
    if (tap_failed)
        fprintf(stderr, "# failed %d of %d tests\n", tap_failed, tap_run);
    fflush(stdout);
}

static void tap_start(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    atexit(tap_finish);
}

void plan(int n)
{
    tap_start();
    tap_planned = n;
    printf("1..%d\n", n);
}

void plan_lazy(void)
{
    tap_start();
    tap_lazy = 1;
}

void skip_all(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    printf("1..0 # SKIP ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    _Exit(0);
}

void tap_where(const char *file, int line)
{
    tap_file = file;
    tap_line = line;
}

static const char *tap_desc_suffix;

void tap_suffix(const char *s)
{
    tap_desc_suffix = s;
}

static bool tap_result(bool pass, const char *fmt, va_list ap)
{
    tap_run++;
    printf("%sok %d", pass ? "" : "not ", tap_run);
    if (fmt && *fmt) {
        printf(" - ");
        vprintf(fmt, ap);
    }
    if (tap_desc_suffix)
        printf("%s", tap_desc_suffix);
    printf("\n");
    if (!pass) {
        tap_failed++;
        if (tap_file)
            fprintf(stderr, "#   failed at %s line %d\n", tap_file, tap_line);
    }
    tap_file = NULL;
    return pass;
}

bool ok(bool pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_result(pass, fmt, ap);
    va_end(ap);
    return pass;
}

bool is_int(long long expected, long long got, const char *fmt, ...)
{
    va_list ap;
    bool pass = expected == got;
    const char *f = tap_file;
    int l = tap_line;
    va_start(ap, fmt);
    tap_file = NULL;
    tap_result(pass, fmt, ap);
    va_end(ap);
    if (!pass) {
        if (f)
            fprintf(stderr, "#   at %s line %d\n", f, l);
        fprintf(stderr, "#   wanted: %lld\n#     seen: %lld\n", expected, got);
    }
    return pass;
}

static bool is_num(bool pass, double expected, double got, const char *fmt, va_list ap)
{
    const char *f = tap_file;
    int l = tap_line;
    tap_file = NULL;
    tap_result(pass, fmt, ap);
    if (!pass) {
        if (f)
            fprintf(stderr, "#   at %s line %d\n", f, l);
        fprintf(stderr, "#   wanted: %.10g\n#     seen: %.10g (diff %.3g)\n", expected, got,
                got - expected);
    }
    return pass;
}

bool is_double(double expected, double got, double eps, const char *fmt, ...)
{
    va_list ap;
    bool pass = (isnan(expected) && isnan(got)) || fabs(expected - got) <= eps;
    va_start(ap, fmt);
    is_num(pass, expected, got, fmt, ap);
    va_end(ap);
    return pass;
}

bool is_rel(double expected, double got, double rel, const char *fmt, ...)
{
    va_list ap;
    bool pass = isfinite(got) && fabs(expected - got) <= rel * fabs(expected);
    va_start(ap, fmt);
    is_num(pass, expected, got, fmt, ap);
    va_end(ap);
    return pass;
}

bool is_string(const char *expected, const char *got, const char *fmt, ...)
{
    va_list ap;
    bool pass;
    const char *f = tap_file;
    int l = tap_line;
    if (!expected || !got)
        pass = expected == got;
    else
        pass = strcmp(expected, got) == 0;
    va_start(ap, fmt);
    tap_file = NULL;
    tap_result(pass, fmt, ap);
    va_end(ap);
    if (!pass) {
        if (f)
            fprintf(stderr, "#   at %s line %d\n", f, l);
        fprintf(stderr, "#   wanted: %s\n#     seen: %s\n", expected ? expected : "(null)",
                got ? got : "(null)");
    }
    return pass;
}

void skip(const char *fmt, ...)
{
    va_list ap;
    tap_run++;
    printf("ok %d # skip ", tap_run);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

void skip_block(int n, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    for (int i = 0; i < n; i++)
        skip("%s", why);
}

void diag(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fprintf(stderr, "# ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
}

void bail(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    printf("Bail out! ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    _Exit(255);
}

static char *join(const char *a, const char *mid, const char *b)
{
    size_t n = strlen(a) + strlen(mid) + strlen(b) + 2;
    char *p = malloc(n);
    if (!p)
        bail("out of memory");
    snprintf(p, n, "%s%s/%s", a, mid, b);
    return p;
}

char *test_src_path(const char *rel)
{
    const char *s = getenv("TB_SRCDIR");
    return join(s && *s ? s : ".", "", rel);
}

char *test_tmp_path(const char *rel)
{
    const char *b = getenv("TB_BUILDDIR");
    char *dir = join(b && *b ? b : "build", "", "tests/tmp");
    char *p;
    mkdir(dir, 0777);
    p = join(dir, "", rel);
    free(dir);
    return p;
}
