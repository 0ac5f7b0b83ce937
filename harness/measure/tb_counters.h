/*
 * harness/measure/tb_counters.h: hardware performance counters through PAPI's low-level API,
 * optional at build time and at run time.
 *
 * Built with TB_HAVE_PAPI (the makefile defines it when pkg-config finds papi), init
 * calls PAPI_library_init, looks for the perf_event component and, when it is enabled,
 * builds one event set adding preset events one at a time (cycles, instructions,
 * single- or any-precision FLOPs, last-level misses) and dropping those that fail.
 * Whatever goes wrong, the module degrades: the status says "unavailable: <why>" (for
 * a disabled component, exactly "unavailable: perf_event disabled: <PAPI's
 * disabled_reason>"; without PAPI, "unavailable: built without PAPI") and start/stop
 * return values with the reason instead of counts. Nothing here fails a run.
 *
 * Scope: the counts are for the calling thread only (perf_event without inherit);
 * OpenBLAS worker threads are not included, and the status string says so.
 *
 * State: one process-wide PAPI initialisation and event set, owned by this module
 * (the only global state the style allows). tb_counters_init is thread-safe and
 * idempotent; start and stop must come from the thread that ran the first init, one
 * region at a time.
 */
#ifndef TB_COUNTERS_H
#define TB_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>

#define TB_COUNTERS_MAX 6

/* The counts of one start/stop region, or why there are none. */
struct tb_counter_values {
    int n;                             /* events counted; 0 when unavailable */
    char names[TB_COUNTERS_MAX][32];   /* PAPI preset names, e.g. "PAPI_TOT_CYC" */
    long long values[TB_COUNTERS_MAX]; /* counts in the region */
    char reason[1100];                 /* when n == 0: "unavailable: ..." */
};

/* Initialise PAPI once per process (later calls return at once). Always returns 0:
 * whether counters work is told by tb_counters_available() and tb_counters_status(). */
int tb_counters_init(void);

/* Whether start/stop will count (runs init if needed). */
bool tb_counters_available(void);

/* "ok: PAPI 7.0.0.0, events: PAPI_TOT_CYC,PAPI_TOT_INS (calling thread)" or
 * "unavailable: <reason>". Runs init if needed. Never NULL, never empty; the string
 * belongs to the module and lives until exit. */
const char *tb_counters_status(void);

/* Start counting the region that follows. Returns 0 when counting, -1 when counters
 * are unavailable or a region is already running (stop then reports why). */
int tb_counters_start(void);

/* Stop the region and fill *v: n > 0 with the counts (returns 0), or n == 0 with the
 * reason (returns -1). Always fills v. */
int tb_counters_stop(struct tb_counter_values *v);

/* "PAPI_TOT_CYC=123;PAPI_TOT_INS=456" for counted values, else v->reason. Returns 0,
 * or -1 when buf is too small (it then holds the whole entries that fitted, or the
 * reason truncated; always terminated). */
int tb_counters_format(const struct tb_counter_values *v, char *buf, size_t len);

#endif
