/*
 * harness/measure/tb_progress.h: progress lines during one long measurement. A run of
 * trnbench run can take minutes (a training run of 5 repetitions on 2 cores, a serving
 * level); without them the terminal says nothing for that long. tb_measure starts a
 * ticker thread beside the run when its workload carries a struct tb_progress: every
 * every_s seconds (the first after every_s, so a short run prints nothing) one line on
 * stderr with the repetition in progress, the time since the run started and, once a
 * repetition is done, an estimate of the rest:
 *
 *   trnbench run: [3/19] cpu:llama-small/train/b4/in256/fp32: timed rep 2/5,
 *       41 s elapsed, about 60 s left; suite 2 min 10 s in
 *
 * (one line). The estimate is the mean time of the repetitions done (the first left
 * out once there are others: it pays for cold caches) times those left, less the time
 * already spent in the current one (but never less than the ones after it). stdout is
 * never written.
 *
 * Ownership: the caller owns the struct (zero it, set the first fields, keep it alive
 * from tb_progress_start to tb_progress_stop); the ticker only reads label and who. A
 * struct serves one run at a time; tb_progress_step and tb_progress_stop are called from
 * the thread that called tb_progress_start.
 */
#ifndef TB_PROGRESS_H
#define TB_PROGRESS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

struct tb_progress {
    /* the caller's */
    const char *who;      /* borrowed: the line's prefix, "trnbench run" */
    FILE *out;            /* borrowed: where the lines go; NULL: stderr */
    char label[400];      /* "[3/19] cpu:llama-small/train/b4/in256/fp32" */
    double every_s;       /* a line this often; <= 0: none */
    uint64_t suite_t0_ns; /* when the suite started (tb_timer_now_ns); 0: not said */

    /* the ticker's, under mu */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool running;                       /* a ticker thread is up */
    bool stop;                          /* tb_progress_stop asks it to end */
    int warmup, reps;                   /* iterations of the loop: warm-up, then timed */
    int done;                           /* iterations finished; -1: still setting up */
    uint64_t t0_ns;                     /* the run's start (setup included) */
    uint64_t loop_t0_ns;                /* the loop's start, after setup */
    uint64_t first_end_ns, last_end_ns; /* the ends of the first and the latest iteration */
    int lines;                          /* lines printed */
};

/* Start the ticker for a run of warmup + reps iterations (still setting up). Returns 0,
 * or -1 when no thread could be started: the run goes on without progress lines. A
 * struct with every_s <= 0 starts nothing and returns 0. */
int tb_progress_start(struct tb_progress *pg, int warmup, int reps);

/* done iterations of the loop are finished (0 when the loop begins after setup). */
void tb_progress_step(struct tb_progress *pg, int done);

/* Stop and join the ticker; the struct may be started again. NULL or never started:
 * nothing. */
void tb_progress_stop(struct tb_progress *pg);

/* The text of a line (without who) into buf: pg's label and state at now_ns. Pure: the
 * tests call it with made-up times. Returns buf. */
const char *tb_progress_format(const struct tb_progress *pg, uint64_t now_ns, char *buf,
                               size_t len);

/* secs as "4.2 s" under 10 s, "41 s" under 100 s, "2 min 07 s" from there, "1 h 05 min"
 * from an hour, into buf. Returns buf. */
const char *tb_progress_duration(double secs, char *buf, size_t len);

#endif
