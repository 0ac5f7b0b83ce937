/*
 * harness/base/tb_lock.h: an advisory lock on a file (flock(2), exclusive), so that one
 * process at a time writes a folder's shared files (a results folder's results.csv:
 * tb_results_lock). The kernel drops the lock when its holder exits, however it dies
 * (kill -9 included), so a lock is never stale; the file itself stays (removing a lock
 * file races with the next taker) and says who holds it: "pid 1234: trnbench run, since
 * 2026-11-22T18:42:00Z". The descriptor is close-on-exec: children (a server, torchrun)
 * never hold it.
 *
 * Ownership: a struct tb_lock owns its descriptor; release with tb_lock_release.
 */
#ifndef TB_LOCK_H
#define TB_LOCK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct tb_lock {
    int fd;              /* owned when open: the lock file */
    bool open;           /* fd is open */
    bool held;           /* this process holds the lock */
    char path[PATH_MAX]; /* the lock file */
    char holder[256];    /* after tb_lock_try returned 1: what the holder wrote ("" unknown) */
    char warning[512];   /* a file system without locks: held is true, and this says why the
                            lock is not enforced ("" when it is) */
};

/* Open (create) the lock file path and take its lock without waiting. Returns 0 (held;
 * who, e.g. "trnbench run", written into the file), 1 when another process holds it
 * (l->holder says which), or -1 with a message (l released). */
int tb_lock_try(struct tb_lock *l, const char *path, const char *who, char *err, size_t errlen);
/* After tb_lock_try returned 1: wait until the lock is free and take it. Returns 0, or
 * -1 with a message (l released). */
int tb_lock_wait(struct tb_lock *l, const char *who, char *err, size_t errlen);
/* Drop the lock (if held) and close the file; l is left empty. Safe on a zeroed or
 * released l. */
void tb_lock_release(struct tb_lock *l);

#endif
