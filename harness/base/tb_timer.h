/*
 * harness/base/tb_timer.h: the benchmark clock. Readings are nanoseconds from
 * CLOCK_MONOTONIC (never wall time, which NTP may step). The granularity check follows
 * STREAM's checktick idea: the smallest nonzero difference two successive readings can
 * show is the clock's tick, and a timed region shorter than about 20 ticks is too short
 * to trust.
 *
 * No state: every function is thread-safe. Callers that need the tick repeatedly
 * measure it once and keep it.
 */
#ifndef TB_TIMER_H
#define TB_TIMER_H

#include <stddef.h>
#include <stdint.h>

/* A region shorter than this many ticks gets a warning from tb_timer_check. */
#define TB_TIMER_MIN_TICKS 20

/* Nanoseconds on CLOCK_MONOTONIC since an arbitrary start; only differences mean
 * anything. */
uint64_t tb_timer_now_ns(void);

/* Seconds between two readings (end >= start). */
double tb_timer_seconds(uint64_t start_ns, uint64_t end_ns);

/* The clock's observable granularity in ns: the smallest nonzero difference between
 * two successive readings over a few dozen trials (each trial spins until the reading
 * changes). At least 1. Takes microseconds. */
uint64_t tb_timer_tick_ns(void);

/* Whether a region of elapsed_ns is long enough for a clock of tick_ns granularity.
 * Returns NULL when it spans at least TB_TIMER_MIN_TICKS ticks; otherwise writes a
 * warning such as "timed region 180 ns is under 20 timer ticks of 10 ns" into buf
 * (truncated to len) and returns buf; with no buf, a constant warning without the
 * figures. */
const char *tb_timer_check(uint64_t elapsed_ns, uint64_t tick_ns, char *buf, size_t len);

#endif
