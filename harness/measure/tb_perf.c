/* harness/measure/tb_perf.c: see tb_perf.h. */
#include "tb_perf.h"

#include "tb_counters.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TB_PERF_MAX_REPS    10000
#define TB_PERF_MAX_THREADS 1024

/* Deterministic uniform numbers in [-1, 1) (64-bit LCG, Knuth's MMIX constants). */
static float lcg_uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*s >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
}

/* Fill r->rate and r->time_s from per-repetition seconds; note a too-short region. */
static int summarise(struct tb_perf_result *r, const double *secs, int reps, char *err,
                     size_t errlen)
{
    double *rates = tb_alloc_array((size_t)reps, sizeof *rates);
    uint64_t tick = tb_timer_tick_ns();
    int rc = -1;

    if (!rates)
        return tb_err(err, errlen, "out of memory");
    for (int i = 0; i < reps; i++) {
        rates[i] = secs[i] > 0 ? r->work / secs[i] : 0.0;
        if (!r->note[0])
            tb_timer_check((uint64_t)(secs[i] * 1e9), tick, r->note, sizeof r->note);
    }
    if (tb_stats_compute(&r->time_s, secs, (size_t)reps, err, errlen) != 0 ||
        tb_stats_compute(&r->rate, rates, (size_t)reps, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(rates);
    return rc;
}

/* Counts of the region since tb_counters_start, or why there are none (a start that
 * failed leaves its reason for stop to report). */
static void counters_stop_into(struct tb_perf_result *r)
{
    struct tb_counter_values v;
    tb_counters_stop(&v);
    tb_counters_format(&v, r->counters, sizeof r->counters);
}

/* ---- sgemm ---- */

int tb_perf_sgemm(int n, int reps, struct tb_perf_result *r, char *err, size_t errlen)
{
    float *a = NULL, *b = NULL, *c = NULL;
    double *secs = NULL;
    size_t nn;
    uint64_t seed = 42;
    int rc = -1;

    memset(r, 0, sizeof *r);
    if (n < 1 || n > 65536 || reps < 1 || reps > TB_PERF_MAX_REPS)
        return tb_err(err, errlen, "sgemm: n %d or reps %d out of range", n, reps);
    nn = (size_t)n * (size_t)n;
    a = tb_alloc_array(nn, sizeof *a);
    b = tb_alloc_array(nn, sizeof *b);
    c = tb_alloc_array(nn, sizeof *c);
    secs = tb_alloc_array((size_t)reps, sizeof *secs);
    if (!a || !b || !c || !secs) {
        tb_err(err, errlen, "sgemm: out of memory for three %dx%d matrices", n, n);
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        a[i] = lcg_uniform(&seed);
        b[i] = lcg_uniform(&seed);
    }
    r->work = 2.0 * (double)n * (double)n * (double)n;

    /* warm-up: OpenBLAS threads wake, pages fault in */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
    tb_counters_start();
    for (int k = 0; k < reps; k++) {
        uint64_t t0 = tb_timer_now_ns();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c,
                    n);
        secs[k] = tb_timer_seconds(t0, tb_timer_now_ns());
    }
    counters_stop_into(r);

    /* validate sampled entries: fp32 accumulation over n terms stays far inside 1e-4 of
     * the sum of the terms' magnitudes */
    r->valid = true;
    for (int s = 0; s < 64 && r->valid; s++) {
        int i = (int)(((uint64_t)s * 2654435761u) % (uint64_t)n);
        int j = (int)(((uint64_t)s * 40503u + 17u) % (uint64_t)n);
        double ref = 0.0, mag = 0.0, got = c[(size_t)i * (size_t)n + (size_t)j];
        for (int k = 0; k < n; k++) {
            double t = (double)a[(size_t)i * (size_t)n + (size_t)k] *
                       (double)b[(size_t)k * (size_t)n + (size_t)j];
            ref += t;
            mag += fabs(t);
        }
        if (!(fabs(got - ref) <= 1e-4 * mag + 1e-6)) {
            r->valid = false;
            snprintf(r->note, sizeof r->note, "validation failed: C[%d][%d] = %.7g, reference %.7g",
                     i, j, got, ref);
        }
    }
    if (summarise(r, secs, reps, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    free(a);
    free(b);
    free(c);
    free(secs);
    return rc;
}

/* ---- STREAM triad ---- */

#define TRIAD_SCALAR 3.0

struct triad_shared {
    double *a, *b, *c;
    size_t n;
    int nthreads;
    int total;               /* warm-up + timed repetitions */
    pthread_barrier_t start; /* all threads ready for a repetition */
    pthread_barrier_t done;  /* all threads finished it */
    /* gate: workers wait here until every thread exists (go = 1) or one could not be
     * created (go = -1, they return), so no thread ever waits at a barrier that cannot
     * fill */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int go;
};

struct triad_worker {
    struct triad_shared *sh;
    int id;
};

static void triad_range(const struct triad_shared *sh, int id, size_t *lo, size_t *hi)
{
    *lo = sh->n * (size_t)id / (size_t)sh->nthreads;
    *hi = sh->n * (size_t)(id + 1) / (size_t)sh->nthreads;
}

/* Exact in binary floating point, so validation can compare for equality. */
static double triad_b(size_t i)
{
    return 1.0 + (double)(i % 7);
}
static double triad_c(size_t i)
{
    return 0.5 * (double)(i % 5);
}

static void triad_first_touch(struct triad_shared *sh, int id)
{
    size_t lo, hi;
    triad_range(sh, id, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        sh->a[i] = 0.0;
        sh->b[i] = triad_b(i);
        sh->c[i] = triad_c(i);
    }
}

static void triad_kernel(struct triad_shared *sh, int id)
{
    size_t lo, hi;
    double *restrict a = sh->a;
    const double *restrict b = sh->b;
    const double *restrict c = sh->c;

    triad_range(sh, id, &lo, &hi);
    for (size_t i = lo; i < hi; i++)
        a[i] = b[i] + TRIAD_SCALAR * c[i];
}

static void *triad_thread(void *arg)
{
    struct triad_worker *w = arg;
    int go;

    pthread_mutex_lock(&w->sh->mu);
    while (w->sh->go == 0)
        pthread_cond_wait(&w->sh->cv, &w->sh->mu);
    go = w->sh->go;
    pthread_mutex_unlock(&w->sh->mu);
    if (go < 0)
        return NULL;
    triad_first_touch(w->sh, w->id);
    for (int k = 0; k < w->sh->total; k++) {
        pthread_barrier_wait(&w->sh->start);
        triad_kernel(w->sh, w->id);
        pthread_barrier_wait(&w->sh->done);
    }
    return NULL;
}

int tb_perf_triad(size_t n, int nthreads, int reps, struct tb_perf_result *r, char *err,
                  size_t errlen)
{
    struct triad_shared sh;
    struct triad_worker *workers = NULL;
    pthread_t *tids = NULL;
    double *secs = NULL;
    int nstarted = 0, rc = -1;
    bool barriers = false, gate = false;

    memset(r, 0, sizeof *r);
    memset(&sh, 0, sizeof sh);
    if (n < 1 || nthreads < 1 || nthreads > TB_PERF_MAX_THREADS || (size_t)nthreads > n ||
        reps < 1 || reps > TB_PERF_MAX_REPS)
        return tb_err(err, errlen, "triad: n %zu, threads %d or reps %d out of range", n, nthreads,
                      reps);
    sh.n = n;
    sh.nthreads = nthreads;
    sh.total = 1 + reps;
    sh.a = tb_alloc_array(n, sizeof *sh.a);
    sh.b = tb_alloc_array(n, sizeof *sh.b);
    sh.c = tb_alloc_array(n, sizeof *sh.c);
    secs = tb_alloc_array((size_t)reps, sizeof *secs);
    workers = tb_alloc_array((size_t)nthreads, sizeof *workers);
    tids = tb_alloc_array((size_t)nthreads, sizeof *tids);
    if (!sh.a || !sh.b || !sh.c || !secs || !workers || !tids) {
        tb_err(err, errlen, "triad: out of memory for three arrays of %zu doubles", n);
        goto out;
    }
    if (pthread_barrier_init(&sh.start, NULL, (unsigned)nthreads) != 0) {
        tb_err(err, errlen, "triad: cannot create a barrier for %d threads", nthreads);
        goto out;
    }
    if (pthread_barrier_init(&sh.done, NULL, (unsigned)nthreads) != 0) {
        pthread_barrier_destroy(&sh.start);
        tb_err(err, errlen, "triad: cannot create a barrier for %d threads", nthreads);
        goto out;
    }
    barriers = true;
    if (pthread_mutex_init(&sh.mu, NULL) != 0) {
        tb_err(err, errlen, "triad: cannot create a mutex");
        goto out;
    }
    if (pthread_cond_init(&sh.cv, NULL) != 0) {
        pthread_mutex_destroy(&sh.mu);
        tb_err(err, errlen, "triad: cannot create a condition variable");
        goto out;
    }
    gate = true;
    r->work = 3.0 * sizeof(double) * (double)n;

    for (int t = 1; t < nthreads; t++) {
        workers[t].sh = &sh;
        workers[t].id = t;
        if (pthread_create(&tids[t], NULL, triad_thread, &workers[t]) != 0) {
            tb_err(err, errlen, "triad: cannot start thread %d of %d", t + 1, nthreads);
            break;
        }
        nstarted++;
    }
    pthread_mutex_lock(&sh.mu);
    sh.go = nstarted == nthreads - 1 ? 1 : -1;
    pthread_cond_broadcast(&sh.cv);
    pthread_mutex_unlock(&sh.mu);
    if (sh.go < 0)
        goto out; /* the started threads return at the gate and are joined below */

    triad_first_touch(&sh, 0);
    for (int k = 0; k < sh.total; k++) {
        uint64_t t0;
        if (k == 1)
            tb_counters_start();
        pthread_barrier_wait(&sh.start);
        t0 = tb_timer_now_ns();
        triad_kernel(&sh, 0);
        pthread_barrier_wait(&sh.done);
        if (k > 0) /* repetition 0 is the warm-up */
            secs[k - 1] = tb_timer_seconds(t0, tb_timer_now_ns());
    }
    counters_stop_into(r);
    for (int t = 1; t <= nstarted; t++)
        pthread_join(tids[t], NULL);
    nstarted = 0;

    r->valid = true;
    for (size_t i = 0; i < n; i++) {
        double want = triad_b(i) + TRIAD_SCALAR * triad_c(i);
        if (sh.a[i] != want) {
            r->valid = false;
            snprintf(r->note, sizeof r->note, "validation failed: a[%zu] = %.17g, expected %.17g",
                     i, sh.a[i], want);
            break;
        }
    }
    if (summarise(r, secs, reps, err, errlen) != 0)
        goto out;
    rc = 0;
out:
    for (int t = 1; t <= nstarted; t++)
        pthread_join(tids[t], NULL);
    if (gate) {
        pthread_cond_destroy(&sh.cv);
        pthread_mutex_destroy(&sh.mu);
    }
    if (barriers) {
        pthread_barrier_destroy(&sh.start);
        pthread_barrier_destroy(&sh.done);
    }
    free(sh.a);
    free(sh.b);
    free(sh.c);
    free(secs);
    free(workers);
    free(tids);
    return rc;
}

int tb_perf_host_triad(struct tb_perf_result *r, char *err, size_t errlen)
{
    if (tb_perf_triad((size_t)4 << 20, 1, 5, r, err, errlen) != 0)
        return -1;
    if (!r->valid)
        return tb_err(err, errlen, "the host's triad failed its check: %s", r->note);
    return 0;
}
