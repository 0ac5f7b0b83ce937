/*
 * harness/measure/tb_perf.h: the two reference kernels `trnbench perf` measures the engine
 * against: the machine's practical compute peak (cblas_sgemm) and its practical memory
 * bandwidth (the STREAM triad a[i] = b[i] + s * c[i]).
 *
 * Method (STREAM, llama-bench): one untimed warm-up repetition, then reps timed ones;
 * each repetition's rate is work / time, summarised by tb_stats (the median is the
 * figure); the output is validated after the run and a failed validation marks the
 * result invalid. Counters (tb_counters.h) wrap the timed repetitions when available.
 *
 * Byte counting: the triad counts 3 arrays x 8 bytes per element and repetition, as
 * STREAM does: the write-allocate read of a[] that a cache without streaming stores
 * also performs (4 x 8 bytes of real traffic) is not counted.
 *
 * The functions allocate their own buffers and free them before returning. Not
 * thread-safe with each other (they share the process-wide counters).
 */
#ifndef TB_PERF_H
#define TB_PERF_H

#include "tb_stats.h"

#include <stdbool.h>
#include <stddef.h>

struct tb_perf_result {
    struct tb_stats rate;   /* per repetition: FLOP/s (sgemm) or bytes/s (triad) */
    struct tb_stats time_s; /* per repetition: seconds */
    double work;            /* FLOPs or bytes of one repetition */
    bool valid;             /* the output passed validation */
    char note[256];         /* validation failure or timer warning; "" when none */
    char counters[512];     /* tb_counters_format of the timed repetitions */
};

/* C = A B for n x n fp32 matrices through cblas_sgemm (2 n^3 FLOPs per repetition);
 * validates 64 sampled entries of C against double-precision dot products. Returns 0
 * when it ran (see r->valid), -1 with a message when n or reps is out of range or
 * memory cannot be had. */
int tb_perf_sgemm(int n, int reps, struct tb_perf_result *r, char *err, size_t errlen);

/* The triad over three arrays of n doubles split into nthreads contiguous ranges, one
 * pthread each (the calling thread takes the first); each thread first touches its
 * own range. 24 n bytes per repetition. Validates every element of a[] after the run.
 * Returns like tb_perf_sgemm. */
int tb_perf_triad(size_t n, int nthreads, int reps, struct tb_perf_result *r, char *err,
                  size_t errlen);

/* The host's memory bandwidth as the model of a host's collectives takes it (shm,
 * loopback, tcp: tb_collective.h): the triad on one thread over 3 x 32 MiB, 5
 * repetitions, what one rank's copy reaches (r->rate: bytes/s). 0, or -1 with a message,
 * also when it failed its check. */
int tb_perf_host_triad(struct tb_perf_result *r, char *err, size_t errlen);

#endif
