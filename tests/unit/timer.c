/* tests/unit/timer.c: the monotonic clock moves forward at the right rate, its tick is
 * plausible, and the too-short check draws the line at 20 ticks. */
#include "tb_timer.h"

#include "tests/tap/basic.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(void)
{
    char buf[128];
    uint64_t prev, tick, t0, t1, backwards = 0;
    struct timespec ts = {0, 20 * 1000 * 1000}; /* 20 ms */
    const char *w;

    plan_lazy();

    /* monotonic: 100000 successive readings never go back */
    prev = tb_timer_now_ns();
    OK(prev > 0, "a reading is nonzero: %llu ns", (unsigned long long)prev);
    for (int i = 0; i < 100000; i++) {
        uint64_t now = tb_timer_now_ns();
        if (now < prev)
            backwards++;
        prev = now;
    }
    IS_INT(0, (long long)backwards, "100000 readings never go backwards");

    /* the rate: a 20 ms sleep reads as 20 ms to 1 s (sleep only ever overshoots) */
    t0 = tb_timer_now_ns();
    nanosleep(&ts, NULL);
    t1 = tb_timer_now_ns();
    OK(t1 - t0 >= 20000000u && t1 - t0 < 1000000000u, "20 ms sleep reads %.3f ms",
       (double)(t1 - t0) / 1e6);
    IS_DOUBLE(0.0205, tb_timer_seconds(1000, 20501000), 1e-12, "20.5 ms in seconds");
    IS_DOUBLE(0.0, tb_timer_seconds(5, 4), 0.0, "end before start gives 0, not a wrap");

    /* the tick: at least 1 ns and under 1 ms on any machine we would benchmark */
    tick = tb_timer_tick_ns();
    OK(tick >= 1 && tick < 1000000, "timer tick %llu ns", (unsigned long long)tick);
    printf("# timer tick on this machine: %llu ns\n", (unsigned long long)tick);

    /* the 20-tick line, with a 10 ns tick */
    IS_STRING("timed region 190 ns is under 20 timer ticks of 10 ns",
              tb_timer_check(190, 10, buf, sizeof buf), "19 ticks warns with the figures");
    OK(tb_timer_check(200, 10, buf, sizeof buf) == NULL, "20 ticks is long enough");
    OK(tb_timer_check(5000000, 10, buf, sizeof buf) == NULL, "5 ms is long enough");
    w = tb_timer_check(0, 1, buf, sizeof buf);
    OK(w == buf && strstr(buf, "0 ns") != NULL, "an empty region warns: %s", w ? w : "(null)");
    w = tb_timer_check(10, 0, buf, sizeof buf);
    OK(w != NULL, "tick 0 is treated as 1 ns: 10 ns still warns");
    w = tb_timer_check(19, 1, NULL, 0);
    IS_STRING("timed region is under 20 timer ticks", w, "no buffer: a constant warning");
    w = tb_timer_check(100, 10, buf, 16);
    IS_INT(15, (long long)strlen(w), "a small buffer truncates: '%s'", w);
    return 0;
}
