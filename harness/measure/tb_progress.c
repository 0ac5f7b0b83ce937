/* harness/measure/tb_progress.c: the progress ticker of a long run (see tb_progress.h). */
#include "tb_progress.h"

#include "tb_timer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

const char *tb_progress_duration(double secs, char *buf, size_t len)
{
    long s = secs > 0 ? lround(secs) : 0;
    if (secs < 9.95)
        snprintf(buf, len, "%.1f s", secs > 0 ? secs : 0.0);
    else if (s < 100)
        snprintf(buf, len, "%ld s", s);
    else if (s < 3600)
        snprintf(buf, len, "%ld min %02ld s", s / 60, s % 60);
    else
        snprintf(buf, len, "%ld h %02ld min", s / 3600, s % 3600 / 60);
    return buf;
}

const char *tb_progress_format(const struct tb_progress *pg, uint64_t now_ns, char *buf, size_t len)
{
    const int total = pg->warmup + pg->reps;
    char el[32], left[32], suite[32];
    char state[64];
    size_t k;

    if (pg->done < 0)
        snprintf(state, sizeof state, "setting up");
    else if (pg->done >= total)
        snprintf(state, sizeof state, "finishing");
    else if (pg->done < pg->warmup)
        snprintf(state, sizeof state, "warm-up %d/%d", pg->done + 1, pg->warmup);
    else
        snprintf(state, sizeof state, "%srep %d/%d", pg->warmup ? "timed " : "",
                 pg->done - pg->warmup + 1, pg->reps);
    k = (size_t)snprintf(buf, len, "%s: %s, %s elapsed", pg->label, state,
                         tb_progress_duration(tb_timer_seconds(pg->t0_ns, now_ns), el, sizeof el));
    if (k < len && pg->done > 0 && pg->done < total) {
        /* the mean iteration, the first (cold) left out once there are others */
        double per = pg->done > 1
                         ? tb_timer_seconds(pg->first_end_ns, pg->last_end_ns) / (pg->done - 1)
                         : tb_timer_seconds(pg->loop_t0_ns, pg->first_end_ns);
        double rest = per * (total - pg->done) - tb_timer_seconds(pg->last_end_ns, now_ns);
        /* a current iteration longer than the mean still leaves the ones after it */
        if (rest < per * (total - pg->done - 1))
            rest = per * (total - pg->done - 1);
        if (rest > 0)
            k += (size_t)snprintf(buf + k, len - k, ", about %s left",
                                  tb_progress_duration(rest, left, sizeof left));
        else /* the last one, already longer than the others */
            k += (size_t)snprintf(buf + k, len - k, ", the last (the others took %s each)",
                                  tb_progress_duration(per, left, sizeof left));
    }
    if (k < len && pg->suite_t0_ns)
        snprintf(
            buf + k, len - k, "; suite %s in",
            tb_progress_duration(tb_timer_seconds(pg->suite_t0_ns, now_ns), suite, sizeof suite));
    return buf;
}

/* The ticker: wakes each every_s after the last line until stopped. */
static void *tick(void *arg)
{
    struct tb_progress *pg = arg;
    uint64_t next = pg->t0_ns + (uint64_t)(pg->every_s * 1e9);

    pthread_mutex_lock(&pg->mu);
    while (!pg->stop) {
        struct timespec ts = {.tv_sec = (time_t)(next / 1000000000u),
                              .tv_nsec = (long)(next % 1000000000u)};
        int rc = pthread_cond_timedwait(&pg->cv, &pg->mu, &ts);
        if (pg->stop)
            break;
        if (rc == ETIMEDOUT || tb_timer_now_ns() >= next) {
            char line[768];
            uint64_t now = tb_timer_now_ns();
            fprintf(pg->out ? pg->out : stderr, "%s: %s\n", pg->who ? pg->who : "trnbench",
                    tb_progress_format(pg, now, line, sizeof line));
            pg->lines++;
            next = now + (uint64_t)(pg->every_s * 1e9);
        }
    }
    pthread_mutex_unlock(&pg->mu);
    return NULL;
}

int tb_progress_start(struct tb_progress *pg, int warmup, int reps)
{
    pthread_condattr_t ca;

    pg->running = pg->stop = false;
    pg->warmup = warmup > 0 ? warmup : 0;
    pg->reps = reps > 0 ? reps : 0;
    pg->done = -1;
    pg->t0_ns = pg->loop_t0_ns = pg->first_end_ns = pg->last_end_ns = tb_timer_now_ns();
    pg->lines = 0;
    if (!(pg->every_s > 0))
        return 0;
    /* the waits run on the monotonic clock, the same as tb_timer_now_ns */
    if (pthread_condattr_init(&ca) != 0)
        return -1;
    if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&pg->cv, &ca) != 0) {
        pthread_condattr_destroy(&ca);
        return -1;
    }
    pthread_condattr_destroy(&ca);
    if (pthread_mutex_init(&pg->mu, NULL) != 0) {
        pthread_cond_destroy(&pg->cv);
        return -1;
    }
    if (pthread_create(&pg->thread, NULL, tick, pg) != 0) {
        pthread_mutex_destroy(&pg->mu);
        pthread_cond_destroy(&pg->cv);
        return -1;
    }
    pg->running = true;
    return 0;
}

void tb_progress_step(struct tb_progress *pg, int done)
{
    uint64_t now = tb_timer_now_ns();
    if (!pg)
        return;
    if (pg->running)
        pthread_mutex_lock(&pg->mu);
    if (done == 0)
        pg->loop_t0_ns = pg->last_end_ns = now; /* the loop begins: setup is behind */
    else if (done == 1)
        pg->first_end_ns = pg->last_end_ns = now;
    else
        pg->last_end_ns = now;
    pg->done = done;
    if (pg->running)
        pthread_mutex_unlock(&pg->mu);
}

void tb_progress_stop(struct tb_progress *pg)
{
    if (!pg || !pg->running)
        return;
    pthread_mutex_lock(&pg->mu);
    pg->stop = true;
    pthread_cond_signal(&pg->cv);
    pthread_mutex_unlock(&pg->mu);
    pthread_join(pg->thread, NULL);
    pthread_mutex_destroy(&pg->mu);
    pthread_cond_destroy(&pg->cv);
    pg->running = false;
}
