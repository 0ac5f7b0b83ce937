/*
 * tests/shim/faultshim.c: an LD_PRELOAD library for the fault tests (tests/cli/faults.t),
 * built to build/tests/faultshim.so. It wraps write() and rename() and, on the K-th call
 * that touches a file whose path holds a given string, does what a hostile world does:
 * kill -9, a SIGTERM or SIGINT, or a full disk. The program under test is the real one,
 * unchanged; only these calls are wrapped. It also counts the program's opens of such a
 * file (open, open64, fopen, fopen64: kind "open", counted only, never failed), so a
 * test can say how often a command reads a table.
 *
 * Environment:
 *   TB_FAULT_MATCH  the string (a file name: "results.csv"); unset: the shim does nothing
 *   TB_FAULT_CALLS  which calls count: "write", "rename" or "write,rename" (default), or
 *                   "open" (alone: the opens are only counted)
 *   TB_FAULT_AT     K, the counted call to act on (1 = the first); 0 or unset: count only
 *   TB_FAULT_DO     kill (SIGKILL before the call), term or int (the signal raised, then
 *                   the call made), enospc (this write and every later counted one fail
 *                   with ENOSPC, as on a disk that is full; a rename is made)
 *   TB_FAULT_LOG    a file: at exit, the number of counted calls is written to it (to
 *                   draw K from)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long calls; /* counted calls so far */
static int full;   /* enospc reached: every later counted write fails */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Whether a call of kind ("write" or "rename") on path counts. */
static int counts(const char *kind, const char *path)
{
    const char *match = env("TB_FAULT_MATCH"), *which = env("TB_FAULT_CALLS");
    if (!match || !path || !strstr(path, match))
        return 0;
    return !which || strstr(which, kind) != NULL;
}

/* Count the call; act when it is the K-th. Returns 1 when the call must fail with
 * ENOSPC. */
static int fault(const char *kind)
{
    const char *at = env("TB_FAULT_AT"), *what = env("TB_FAULT_DO");
    long k = at ? strtol(at, NULL, 10) : 0;
    calls++;
    if (full)
        return !strcmp(kind, "write");
    if (k <= 0 || calls != k || !what)
        return 0;
    if (!strcmp(what, "kill"))
        raise(SIGKILL);
    else if (!strcmp(what, "term"))
        raise(SIGTERM);
    else if (!strcmp(what, "int"))
        raise(SIGINT);
    else if (!strcmp(what, "enospc")) {
        full = 1;
        return !strcmp(kind, "write");
    }
    return 0;
}

ssize_t write(int fd, const void *buf, size_t n)
{
    static ssize_t (*real)(int, const void *, size_t);
    char link[64], path[4096];
    ssize_t len;
    if (!real)
        real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    len = env("TB_FAULT_MATCH") ? readlink(link, path, sizeof path - 1) : -1;
    if (len > 0) {
        path[len] = '\0';
        if (counts("write", path) && fault("write")) {
            errno = ENOSPC;
            return -1;
        }
    }
    return real(fd, buf, n);
}

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (!real)
        real = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    if (counts("rename", from) || counts("rename", to))
        fault("rename");
    return real(from, to);
}

/* An open of a matching file: counted when TB_FAULT_CALLS names "open". */
static void count_open(const char *path)
{
    const char *which = env("TB_FAULT_CALLS");
    if (which && strstr(which, "open") && counts("open", path))
        calls++;
}

/* The real open-like call `name` (looked up once into *real), the open counted. */
static int open_via(int (**real)(const char *, int, ...), const char *name, const char *path,
                    int flags, mode_t mode)
{
    if (!*real)
        *real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);
    count_open(path);
    return (*real)(path, flags, mode);
}

static FILE *fopen_via(FILE *(**real)(const char *, const char *), const char *name,
                       const char *path, const char *how)
{
    if (!*real)
        *real = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, name);
    count_open(path);
    return (*real)(path, how);
}

/* open's mode argument, there only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                                                                     \
    do {                                                                                           \
        if ((flags) & (O_CREAT | O_TMPFILE)) {                                                     \
            va_list ap;                                                                            \
            va_start(ap, flags);                                                                   \
            (mode) = (mode_t)va_arg(ap, int);                                                      \
            va_end(ap);                                                                            \
        }                                                                                          \
    } while (0)

int open(const char *path, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return open_via(&real, "open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    static int (*real)(const char *, int, ...);
    mode_t mode = 0;
    OPEN_MODE(flags, mode);
    return open_via(&real, "open64", path, flags, mode);
}

FILE *fopen(const char *path, const char *how)
{
    static FILE *(*real)(const char *, const char *);
    return fopen_via(&real, "fopen", path, how);
}

FILE *fopen64(const char *path, const char *how)
{
    static FILE *(*real)(const char *, const char *);
    return fopen_via(&real, "fopen64", path, how);
}

__attribute__((destructor)) static void log_calls(void)
{
    const char *log = env("TB_FAULT_LOG");
    FILE *f = log ? fopen(log, "w") : NULL;
    if (f) {
        fprintf(f, "%ld\n", calls);
        fclose(f);
    }
}
