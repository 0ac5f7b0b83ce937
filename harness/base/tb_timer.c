/* harness/base/tb_timer.c: see tb_timer.h. */
#include "tb_timer.h"

#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#define TB_TIMER_MIN_TICKS_STR "20"
_Static_assert(TB_TIMER_MIN_TICKS == 20, "keep TB_TIMER_MIN_TICKS_STR in step");

uint64_t tb_timer_now_ns(void)
{
    struct timespec ts;
    /* CLOCK_MONOTONIC cannot fail on Linux with a valid pointer; a failure would leave
     * ts zeroed, which the tick check would then expose. */
    ts.tv_sec = 0;
    ts.tv_nsec = 0;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

double tb_timer_seconds(uint64_t start_ns, uint64_t end_ns)
{
    return end_ns >= start_ns ? (double)(end_ns - start_ns) * 1e-9 : 0.0;
}

uint64_t tb_timer_tick_ns(void)
{
    enum { TRIALS = 50 };
    uint64_t best = UINT64_MAX;

    for (int i = 0; i < TRIALS; i++) {
        uint64_t t0 = tb_timer_now_ns(), t1;
        /* spin until the reading moves: the step is at least one tick */
        do {
            t1 = tb_timer_now_ns();
        } while (t1 == t0);
        if (t1 - t0 < best)
            best = t1 - t0;
    }
    return best ? best : 1;
}

const char *tb_timer_check(uint64_t elapsed_ns, uint64_t tick_ns, char *buf, size_t len)
{
    if (tick_ns == 0)
        tick_ns = 1;
    if (elapsed_ns >= (uint64_t)TB_TIMER_MIN_TICKS * tick_ns)
        return NULL;
    if (!buf || !len)
        return "timed region is under " TB_TIMER_MIN_TICKS_STR " timer ticks";
    snprintf(buf, len, "timed region %" PRIu64 " ns is under %d timer ticks of %" PRIu64 " ns",
             elapsed_ns, TB_TIMER_MIN_TICKS, tick_ns);
    return buf;
}
