/* harness/base/tb_util.c: see tb_util.h. */
#include "tb_util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void tb_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "trnbench: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

const char *tb_status_to_string(enum tb_status s)
{
    return s == TB_OK ? "ok" : s == TB_EINPUT ? "bad input" : "failed";
}

int tb_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!err || !errlen)
        return -1;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void tb_lines_vadd(char *buf, size_t len, const char *fmt, va_list ap)
{
    size_t used = strlen(buf);
    if (used + 2 >= len)
        return;
    vsnprintf(buf + used, len - used - 1, fmt, ap);
    used = strlen(buf);
    buf[used] = '\n';
    buf[used + 1] = '\0';
}

int tb_parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tb_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v;
    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int tb_parse_bool(const char *s, bool *out)
{
    if (!s)
        return -1;
    if (!strcasecmp(s, "true") || !strcasecmp(s, "yes") || !strcmp(s, "1"))
        *out = true;
    else if (!strcasecmp(s, "false") || !strcasecmp(s, "no") || !strcmp(s, "0"))
        *out = false;
    else
        return -1;
    return 0;
}

void *tb_alloc_array(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return malloc(n * size > 0 ? n * size : 1);
}

char *tb_strdup(const char *s)
{
    char *p;
    size_t n;
    if (!s)
        return NULL;
    n = strlen(s) + 1;
    p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

/* ---- atomic replacement ---- */

/* The temporary of path: path.tmp.PID, beside it (same file system: rename is atomic). */
static int tmp_name(char *tmp, size_t len, const char *path, char *err, size_t errlen)
{
    if ((size_t)snprintf(tmp, len, "%s.tmp.%ld", path, (long)getpid()) >= len)
        return tb_err(err, errlen, "path too long: '%s'", path);
    return 0;
}

/* Write data to tmp and sync it. Returns 0, or -1 with a message naming path (the file
 * it stands for) and tmp. */
static int write_tmp(const char *tmp, const char *path, const void *data, size_t len, char *err,
                     size_t errlen)
{
    const char *p = data;
    size_t left = len;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return tb_err(err, errlen, "cannot create '%s': %s", tmp, strerror(errno));
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            tb_err(err, errlen, "cannot write '%s' (as '%s'): %s", path, tmp, strerror(errno));
            close(fd);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        tb_err(err, errlen, "cannot write '%s' (sync of '%s'): %s", path, tmp, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) != 0)
        return tb_err(err, errlen, "cannot write '%s' (close of '%s'): %s", path, tmp,
                      strerror(errno));
    return 0;
}

int tb_write_files_atomic(const struct tb_file_out *f, size_t n, char *err, size_t errlen)
{
    char(*tmp)[PATH_MAX] = tb_alloc_array(n, sizeof *tmp);
    sigset_t stop, old;
    size_t made = 0, renamed = 0;
    int rc = -1;

    if (!tmp)
        return tb_err(err, errlen, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (tmp_name(tmp[i], sizeof tmp[i], f[i].path, err, errlen) != 0) {
            free(tmp);
            return -1;
        }
        tb_tmp_sweep(f[i].path, NULL, 0);
    }
    /* Ctrl-C or a TERM waits until every temporary is renamed or removed: then it
     * stops the program as it would have, and leaves no temporary behind */
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    for (; made < n; made++)
        if (write_tmp(tmp[made], f[made].path, f[made].data, f[made].len, err, errlen) != 0) {
            size_t u = err && errlen ? strlen(err) : 0;
            unlink(tmp[made]);
            if (u + 1 < errlen && n > 1)
                snprintf(err + u, errlen - u, "; none of the %zu files replaced", n);
            else if (u + 1 < errlen)
                snprintf(err + u, errlen - u, "; '%s' left as it was", f[made].path);
            goto out;
        }
    /* every file complete: only now is any replaced */
    for (; renamed < n; renamed++)
        if (rename(tmp[renamed], f[renamed].path) != 0) {
            tb_err(err, errlen, "cannot rename '%s' to '%s': %s", tmp[renamed], f[renamed].path,
                   strerror(errno));
            goto out;
        }
    rc = 0;
out:
    for (size_t i = renamed; i < made; i++)
        unlink(tmp[i]);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(tmp);
    return rc;
}

int tb_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    const struct tb_file_out f = {path, data, len};
    return tb_write_files_atomic(&f, 1, err, errlen);
}

/* Whether name is base.tmp.PID; *pid set. */
static bool is_tmp_of(const char *name, const char *base, size_t blen, long *pid)
{
    const char *d;
    if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp.", 5) != 0)
        return false;
    d = name + blen + 5;
    if (!*d || strspn(d, "0123456789") != strlen(d) || strlen(d) > 9)
        return false;
    *pid = strtol(d, NULL, 10);
    return *pid > 0;
}

int tb_tmp_sweep(const char *path, char *removed, size_t rlen)
{
    char dirname[PATH_MAX], p[PATH_MAX + 256];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    DIR *dir;
    struct dirent *e;
    int count = 0;

    if (removed && rlen)
        removed[0] = '\0';
    if (!slash)
        snprintf(dirname, sizeof dirname, ".");
    else if ((size_t)snprintf(dirname, sizeof dirname, "%.*s", (int)(slash - path + 1), path) >=
             sizeof dirname)
        return 0;
    dir = opendir(dirname);
    while (dir && (e = readdir(dir))) {
        long pid;
        if (!is_tmp_of(e->d_name, base, blen, &pid) || pid == (long)getpid())
            continue;
        /* a process of that pid still runs (or is another user's): its file, leave it */
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(p, sizeof p, "%s%s%s", dirname, slash ? "" : "/", e->d_name);
        if (unlink(p) != 0)
            continue;
        if (removed && rlen) {
            size_t u = strlen(removed);
            snprintf(removed + u, rlen - u, "%s'%s'", u ? ", " : "", p);
        }
        count++;
    }
    if (dir)
        closedir(dir);
    return count;
}

int tb_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return tb_err(err, errlen, "cannot open '%s': %s", path, strerror(errno));
    for (;;) {
        size_t r;
        if (cap - n < 4096) {
            size_t ncap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return tb_err(err, errlen, "out of memory reading '%s'", path);
            }
            buf = nb;
            cap = ncap;
        }
        r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f)) {
        free(buf);
        fclose(f);
        return tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    }
    fclose(f);
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = n;
    return 0;
}

int tb_mkdir_p(const char *path, char *err, size_t errlen)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return tb_err(err, errlen, "bad folder name '%s'", path);
    memcpy(buf, path, n + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return tb_err(err, errlen, "cannot create '%s': %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        return tb_err(err, errlen, "cannot create '%s': %s", buf, strerror(errno));
    return 0;
}

bool tb_file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool has_catalogue(const char *dir)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/workloads", dir);
    return tb_file_exists(p);
}

int tb_self_exe(char *buf, size_t len, char *err, size_t errlen)
{
    ssize_t n = len > 1 ? readlink("/proc/self/exe", buf, len - 1) : -1;
    if (n <= 0 || (size_t)n >= len - 1) {
        if (len)
            buf[0] = '\0';
        return tb_err(err, errlen, "cannot find this program (/proc/self/exe): %s",
                      n < 0 ? strerror(errno) : "path too long");
    }
    buf[n] = '\0';
    return 0;
}

const char *tb_datadir(void)
{
    static char dir[PATH_MAX];
    const char *env = getenv("TRNBENCH_DATADIR");

    if (env && *env)
        return env;
    if (dir[0])
        return dir;
    /* build/bin/trnbench -> the source tree two levels up */
    if (tb_self_exe(dir, sizeof dir, NULL, 0) == 0) {
        for (int up = 0; up < 3; up++) {
            char *slash = strrchr(dir, '/');
            if (!slash)
                break;
            *slash = '\0';
            if (up >= 1 && has_catalogue(dir))
                return dir;
        }
    }
    snprintf(dir, sizeof dir, "%s", tb_version_installed_datadir());
    if (!has_catalogue(dir) && has_catalogue("."))
        snprintf(dir, sizeof dir, ".");
    return dir;
}

void tb_utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

char *tb_trim(char *s)
{
    char *e;
    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

FILE *tb_text_open(const char *path, long max, char *err, size_t errlen)
{
    struct stat st;
    FILE *f;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer before we can refuse it */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        tb_err(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0) {
        tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        tb_err(err, errlen, "'%s' is not a regular file", path);
        close(fd);
        errno = EINVAL; /* callers that look at errno see no ENOENT */
        return NULL;
    }
    if (st.st_size > max) {
        tb_err(err, errlen, "'%s' holds %lld bytes, more than such a file may (%ld)", path,
               (long long)st.st_size, max);
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    if (fcntl(fd, F_SETFL, 0) != 0 || !(f = fdopen(fd, "r"))) {
        tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    return f;
}

size_t tb_text_strip_bom(char *buf, size_t n)
{
    if (n >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3)) {
        memmove(buf, buf + 3, n - 3);
        n -= 3;
        buf[n] = '\0';
    }
    return n;
}

long tb_text_line(const char *path, long line, char *buf, size_t n, char *err, size_t errlen)
{
    const char *nul, *eq = NULL, *k0, *k1;
    if (line == 1)
        n = tb_text_strip_bom(buf, n);
    nul = memchr(buf, '\0', n);
    if (!nul)
        return (long)n;
    /* the field: the key of the last '=' before the NUL, else the line's first word */
    for (const char *p = buf; p < nul; p++)
        if (*p == '=')
            eq = p;
    if (eq) {
        k1 = eq;
        while (k1 > buf && isspace((unsigned char)k1[-1]))
            k1--;
        k0 = k1;
        while (k0 > buf && !isspace((unsigned char)k0[-1]))
            k0--;
    } else {
        k0 = buf;
        while (k0 < nul && isspace((unsigned char)*k0))
            k0++;
        k1 = k0;
        while (k1 < nul && !isspace((unsigned char)*k1) && *k1 != '=')
            k1++;
    }
    return tb_err(err, errlen, "%s: line %ld: field '%.*s': a NUL byte (byte %zu of the line)",
                  path, line, (int)(k1 - k0 > 64 ? 64 : k1 - k0), k0, (size_t)(nul - buf) + 1);
}

int tb_kv_next(FILE *f, const char *path, char **buf, size_t *cap, long *line, char **key,
               char **val, char *err, size_t errlen)
{
    ssize_t n;
    while ((n = getline(buf, cap, f)) > 0) {
        char *s, *eq, *hash;
        ++*line;
        if (tb_text_line(path, *line, *buf, (size_t)n, err, errlen) < 0)
            return -1;
        hash = strchr(*buf, '#');
        if (hash)
            *hash = '\0';
        s = tb_trim(*buf);
        if (!*s)
            continue;
        eq = strchr(s, '=');
        if (!eq)
            return tb_err(err, errlen, "%s: line %ld: expected 'key = value', got '%s'", path,
                          *line, s);
        *eq = '\0';
        *key = tb_trim(s);
        *val = tb_trim(eq + 1);
        return 1;
    }
    if (ferror(f))
        return tb_err(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    return 0;
}
