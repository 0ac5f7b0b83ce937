/* tests/fuzz/common/fz.c: the harnesses' shared helpers (fz.h). */
#define _XOPEN_SOURCE 700
#include "fz.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[PATH_MAX];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void rm_dir(void)
{
    if (dir[0])
        nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void fz_die(const char *what, const char *why)
{
    fprintf(stderr, "fuzz harness setup: %s: %s\n", what, why);
    abort();
}

int fz_note(int rc, const char *err)
{
    static int debug = -1;
    if (debug < 0)
        debug = getenv("FZ_DEBUG") != NULL;
    if (debug && rc != 0)
        fprintf(stderr, "fuzz: rc %d: %s\n", rc, err);
    return rc;
}

const char *fz_dir(void)
{
    if (!dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/trnbench-fuzz.XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir))
            fz_die(dir, strerror(errno));
        atexit(rm_dir);
    }
    return dir;
}

const char *fz_write(const char *rel, const uint8_t *data, size_t size)
{
    static char paths[8][PATH_MAX];
    static int next;
    char *path = paths[next++ % 8], err[512];
    const char *slash = strrchr(rel, '/');
    int fd;

    snprintf(path, PATH_MAX, "%s/%s", fz_dir(), rel);
    if (slash) {
        char sub[PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%.*s", fz_dir(), (int)(slash - rel), rel);
        if (tb_mkdir_p(sub, err, sizeof err) != 0)
            fz_die(sub, err);
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fz_die(path, strerror(errno));
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, data + done, size - done);
        if (w < 0)
            fz_die(path, strerror(errno));
        done += (size_t)w;
    }
    close(fd);
    return path;
}

void fz_remove(const char *rel)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", fz_dir(), rel);
    unlink(path);
}

char *fz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        fz_die("malloc", "out of memory");
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    return s;
}

int fz_split(const uint8_t *data, size_t size, const uint8_t **starts, size_t *lens, int max)
{
    const size_t seplen = strlen(FZ_SEP);
    int n = 0;
    size_t at = 0;

    while (n < max - 1) {
        const uint8_t *hit = NULL;
        for (size_t i = at; i + seplen <= size; i++)
            if (!memcmp(data + i, FZ_SEP, seplen)) {
                hit = data + i;
                break;
            }
        if (!hit)
            break;
        starts[n] = data + at;
        lens[n++] = (size_t)(hit - (data + at));
        at = (size_t)(hit - data) + seplen;
    }
    starts[n] = data + at;
    lens[n++] = size - at;
    return n;
}

const struct tb_pricing *fz_pricing(void)
{
    static struct tb_pricing p;
    static int loaded;
    char err[1024];
    if (!loaded) {
        if (tb_pricing_load(&p, NULL, err, sizeof err) != 0)
            fz_die("the shipped price tables", err);
        loaded = 1;
    }
    return &p;
}

struct tb_model *fz_model(void)
{
    static struct tb_model m;
    static int loaded;
    char err[1024];
    if (!loaded) {
        if (tb_model_load(&m, fz_pricing(), NULL, err, sizeof err) != 0)
            fz_die("the shipped performance model", err);
        loaded = 1;
    }
    return &m;
}
