/*
 * tests/unit/progress.c: the progress lines of a long run (harness/measure/tb_progress.h).
 * The text at made-up times (setting up, warm-up, timed repetitions, the estimate of the
 * rest from the mean repetition with the cold first left out, an overdue last one), the
 * durations' spelling, and the ticker itself: a struct with every_s 0 starts no thread,
 * and a running one prints a line per interval (into a file here, stderr by default).
 */
#include "tb_progress.h"
#include "tb_timer.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define S 1000000000ull /* ns a second */

static void test_duration(void)
{
    char b[32];
    IS_STRING("0.0 s", tb_progress_duration(-1, b, sizeof b), "negative: 0.0 s");
    IS_STRING("4.2 s", tb_progress_duration(4.2, b, sizeof b), "under 10 s: a decimal");
    IS_STRING("41 s", tb_progress_duration(41.4, b, sizeof b), "under 100 s: whole seconds");
    IS_STRING("2 min 07 s", tb_progress_duration(127, b, sizeof b), "127 s: 2 min 07 s");
    IS_STRING("1 h 05 min", tb_progress_duration(3900, b, sizeof b), "3900 s: 1 h 05 min");
}

static void test_format(void)
{
    struct tb_progress pg;
    char b[512];

    memset(&pg, 0, sizeof pg);
    snprintf(pg.label, sizeof pg.label, "[3/19] cpu:x/train");
    pg.warmup = 2;
    pg.reps = 5;
    pg.t0_ns = 100 * S;
    pg.done = -1;
    IS_STRING("[3/19] cpu:x/train: setting up, 12 s elapsed",
              tb_progress_format(&pg, 112 * S, b, sizeof b),
              "before the loop: setting up, no estimate");
    /* setup took 10 s; the first warm-up 20 s (cold), the next ones 10 s each */
    pg.loop_t0_ns = 110 * S;
    pg.done = 0;
    pg.last_end_ns = pg.loop_t0_ns;
    IS_STRING("[3/19] cpu:x/train: warm-up 1/2, 15 s elapsed",
              tb_progress_format(&pg, 115 * S, b, sizeof b),
              "the first iteration: no estimate yet");
    pg.done = 1;
    pg.first_end_ns = pg.last_end_ns = 130 * S;
    IS_STRING("[3/19] cpu:x/train: warm-up 2/2, 35 s elapsed, about 1 min 55 s left",
              tb_progress_format(&pg, 135 * S, b, sizeof b),
              "one done (20 s): 6 left at 20 s, less the 5 s of the current one");
    pg.done = 3;
    pg.last_end_ns = 150 * S;
    IS_STRING("[3/19] cpu:x/train: timed rep 2/5, 52 s elapsed, about 38 s left",
              tb_progress_format(&pg, 152 * S, b, sizeof b),
              "three done: the mean of the two after the first (10 s) times 4, less 2 s");
    pg.done = 6;
    pg.last_end_ns = 180 * S;
    IS_STRING("[3/19] cpu:x/train: timed rep 5/5, 1 min 55 s elapsed, the last (the others took "
              "10 s each)",
              tb_progress_format(&pg, 215 * S, b, sizeof b),
              "the last one overdue: no negative estimate");
    pg.done = 4;
    pg.last_end_ns = 160 * S;
    IS_STRING("[3/19] cpu:x/train: timed rep 3/5, 90 s elapsed, about 20 s left",
              tb_progress_format(&pg, 190 * S, b, sizeof b),
              "an overdue one in the middle: at least the ones after it");
    pg.done = 7;
    pg.suite_t0_ns = 40 * S;
    IS_STRING("[3/19] cpu:x/train: finishing, 1 min 40 s elapsed; suite 2 min 40 s in",
              tb_progress_format(&pg, 200 * S, b, sizeof b),
              "after the loop: finishing, and the suite's time when given");
    pg.warmup = 0;
    pg.reps = 1;
    pg.done = 0;
    pg.suite_t0_ns = 0;
    IS_STRING("[3/19] cpu:x/train: rep 1/1, 90 s elapsed",
              tb_progress_format(&pg, 190 * S, b, sizeof b), "no warm-up: 'rep', not 'timed rep'");
}

static void test_ticker(void)
{
    struct tb_progress pg;
    struct timespec ts = {0, 350 * 1000 * 1000};
    char line[512] = "";
    int n = 0;
    FILE *f = tmpfile();

    memset(&pg, 0, sizeof pg);
    pg.out = f;
    pg.who = "progress.t";
    snprintf(pg.label, sizeof pg.label, "[1/1] ticker");
    IS_INT(0, tb_progress_start(&pg, 1, 2), "every_s 0: starts (nothing)");
    OK(!pg.running, "and no thread");
    tb_progress_step(&pg, 0);
    tb_progress_stop(&pg);
    IS_INT(0, pg.lines, "no lines");

    pg.every_s = 0.1;
    IS_INT(0, tb_progress_start(&pg, 1, 2), "every_s 0.1: a ticker");
    OK(pg.running, "its thread runs");
    tb_progress_step(&pg, 0);
    nanosleep(&ts, NULL);
    tb_progress_step(&pg, 1);
    nanosleep(&ts, NULL);
    tb_progress_stop(&pg);
    OK(!pg.running, "stopped and joined");
    OK(pg.lines >= 3 && pg.lines <= 8, "0.7 s at 0.1 s: about 7 lines (%d)", pg.lines);
    rewind(f);
    while (fgets(line, sizeof line, f))
        n += !strncmp(line, "progress.t: [1/1] ticker: ", 26);
    IS_INT(pg.lines, n, "each one 'WHO: LABEL: ...' on its own line");
    fclose(f);
}

int main(void)
{
    plan(21);
    test_duration();
    test_format();
    test_ticker();
    return 0;
}
