/* harness/base/tb_lock.c: see tb_lock.h. */
#include "tb_lock.h"

#include "tb_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Say who holds the lock, in place of what the previous holder said. */
static void note(struct tb_lock *l, const char *who)
{
    char line[256], now[32];
    int n;
    tb_utc_now(now, sizeof now);
    n = snprintf(line, sizeof line, "pid %ld: %s, since %s\n", (long)getpid(), who, now);
    if (n < 0 || (size_t)n >= sizeof line)
        n = (int)strlen(line);
    /* best effort: the note is for people, the lock is the flock */
    if (ftruncate(l->fd, 0) == 0 && pwrite(l->fd, line, (size_t)n, 0) < 0)
        l->holder[0] = '\0';
}

/* What the holder wrote, first line, into l->holder. */
static void read_holder(struct tb_lock *l)
{
    ssize_t n = pread(l->fd, l->holder, sizeof l->holder - 1, 0);
    char *nl;
    l->holder[n > 0 ? n : 0] = '\0';
    nl = strchr(l->holder, '\n');
    if (nl)
        *nl = '\0';
}

/* Errors of a file system that keeps no locks (some network ones). */
static bool no_locks_here(int e)
{
    return e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL;
}

int tb_lock_try(struct tb_lock *l, const char *path, const char *who, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if ((size_t)snprintf(l->path, sizeof l->path, "%s", path) >= sizeof l->path)
        return tb_err(err, errlen, "path too long: '%s'", path);
    l->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0)
        return tb_err(err, errlen, "cannot open the lock '%s': %s", path, strerror(errno));
    l->open = true;
    while (flock(l->fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EWOULDBLOCK) {
            read_holder(l);
            return 1;
        }
        if (no_locks_here(e)) {
            snprintf(l->warning, sizeof l->warning,
                     "cannot lock '%s' (%s): this file system keeps no locks; concurrent "
                     "writers are not kept apart",
                     path, strerror(e));
            l->held = true;
            return 0;
        }
        tb_err(err, errlen, "cannot lock '%s': %s", path, strerror(e));
        tb_lock_release(l);
        return -1;
    }
    l->held = true;
    note(l, who);
    return 0;
}

int tb_lock_wait(struct tb_lock *l, const char *who, char *err, size_t errlen)
{
    TB_ASSERT(l->open && !l->held);
    while (flock(l->fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        tb_err(err, errlen, "cannot lock '%s': %s", l->path, strerror(errno));
        tb_lock_release(l);
        return -1;
    }
    l->held = true;
    note(l, who);
    return 0;
}

void tb_lock_release(struct tb_lock *l)
{
    if (l->open) {
        /* the note goes first, so the file never names a holder that has gone */
        if (l->held && !l->warning[0] && ftruncate(l->fd, 0) != 0)
            l->held = false;
        close(l->fd); /* drops the flock */
    }
    memset(l, 0, sizeof *l);
}
