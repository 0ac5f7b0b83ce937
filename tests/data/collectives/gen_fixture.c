/*
 * tests/data/collectives/gen_fixture.c: the program that measured results.csv in this
 * folder (README.md there: the command, the machine, the date). Not part of trnbench and
 * not built by the makefile: it exists so that the fixture's numbers have a source. It
 * times the five collectives with nccl-tests' conventions (time: the mean over the timed
 * iterations of the max over ranks; algbw = bytes / time; busbw = algbw x the op's
 * factor; bytes: the whole buffer as nccl-tests counts it) and prints results.csv rows
 * (the 42 columns of docs/results.md "results.csv" then nodes, ranks_per_node, link, bytes) on
 * rank 0's stdout.
 *
 *   mpicc -O2 -o build/gen_fixture tests/data/collectives/gen_fixture.c
 *   mpirun -np 2 --mca btl self,vader build/gen_fixture shm HOST DEVICE COMMIT
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { AR, AG, RS, A2A, SR, NOPS };
static const char *const OPS[NOPS] = {"all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                      "sendrecv"};
#define REPS 5

static double factor(int op, int n)
{
    return op == AR ? 2.0 * (n - 1) / n : op == SR ? 1.0 : (double)(n - 1) / n;
}

/* One collective of `bytes` (nccl-tests' size) over n ranks. */
static void run_op(int op, int inplace, size_t bytes, float *s, float *r, int rank, int n)
{
    int cnt = (int)(bytes / sizeof(float)); /* whole buffer, floats */
    int per = cnt / n;
    switch (op) {
    case AR:
        MPI_Allreduce(inplace ? MPI_IN_PLACE : s, inplace ? s : r, cnt, MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        break;
    case AG:
        MPI_Allgather(inplace ? MPI_IN_PLACE : s, per, MPI_FLOAT, r, per, MPI_FLOAT,
                      MPI_COMM_WORLD);
        break;
    case RS:
        MPI_Reduce_scatter_block(inplace ? MPI_IN_PLACE : s, inplace ? s : r, per, MPI_FLOAT,
                                 MPI_SUM, MPI_COMM_WORLD);
        break;
    case A2A:
        MPI_Alltoall(inplace ? MPI_IN_PLACE : s, per, MPI_FLOAT, inplace ? s : r, per, MPI_FLOAT,
                     MPI_COMM_WORLD);
        break;
    default:
        if (inplace)
            MPI_Sendrecv_replace(s, cnt, MPI_FLOAT, (rank + 1) % n, 0, (rank + n - 1) % n, 0,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Sendrecv(s, cnt, MPI_FLOAT, (rank + 1) % n, 0, r, cnt, MPI_FLOAT,
                         (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int rank, n;
    size_t maxb = (size_t)32 << 20;
    float *s, *r;
    char ts[32];
    time_t now;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (argc != 5) {
        if (!rank)
            fprintf(stderr, "usage: gen_fixture LINK HOST DEVICE COMMIT\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    s = malloc(maxb);
    r = malloc(maxb);
    if (!s || !r)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int op = 0; op < NOPS; op++)
        for (int inplace = 0; inplace < 2; inplace++)
            for (size_t bytes = 8; bytes <= maxb; bytes *= 4) {
                size_t cnt = bytes / sizeof(float);
                int iters = bytes >= ((size_t)1 << 20) ? 10 : bytes >= 65536 ? 50 : 200;
                double t[REPS], mean = 0, sd = 0;
                int bad = 0;
                /* the check: all-reduce of (rank + 1) everywhere sums to n (n + 1) / 2 */
                for (size_t i = 0; i < cnt; i++)
                    s[i] = (float)(rank + 1);
                run_op(op, inplace, bytes, s, r, rank, n);
                if (op == AR) {
                    const float *o = inplace ? s : r;
                    for (size_t i = 0; i < cnt; i++)
                        bad |= o[i] != (float)(n * (n + 1) / 2);
                }
                MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                if (bad) {
                    if (!rank)
                        fprintf(stderr, "all-reduce check failed at %zu bytes\n", bytes);
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                for (int k = 0; k < REPS; k++) {
                    double t0, dt;
                    MPI_Barrier(MPI_COMM_WORLD);
                    t0 = MPI_Wtime();
                    for (int i = 0; i < iters; i++)
                        run_op(op, inplace, bytes, s, r, rank, n);
                    dt = (MPI_Wtime() - t0) / iters;
                    MPI_Allreduce(&dt, &t[k], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                }
                if (rank)
                    continue;
                for (int k = 0; k < REPS; k++)
                    mean += t[k] / REPS;
                for (int k = 0; k < REPS; k++)
                    sd += (t[k] - mean) * (t[k] - mean) / (REPS - 1);
                sd = sqrt(sd);
                qsort(t, REPS, sizeof t[0], cmp);
                now = time(NULL);
                strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
                for (int m = 0; m < 3; m++) {
                    /* value: the median rep; min/max/mean/stddev over the reps, in the
                     * metric's unit (a bandwidth's min is the slowest rep's) */
                    double f = m == 2 ? 1e6 : (double)bytes / 1e9 * (m == 0 ? factor(op, n) : 1);
                    double v = m == 2 ? t[REPS / 2] * f : f / t[REPS / 2];
                    double lo = m == 2 ? t[0] * f : f / t[REPS - 1];
                    double hi = m == 2 ? t[REPS - 1] * f : f / t[0];
                    double mu = m == 2 ? mean * f : f / mean;
                    double sdv = m == 2 ? sd * f : f / mean * sd / mean; /* first order */
                    static const char *const met[] = {"busbw_gbyte_per_s", "algbw_gbyte_per_s",
                                                      "latency_us"};
                    const char *pl = inplace ? "inplace" : "outofplace";
                    printf("collective/%s/%zuB/%s/%s/n%d,measured,host,1,\"%s\",mpi,"
                           "collective/%s,,collective,fp32,,,,,,%s,%.6g,%s,%d,%d,%.6g,%.6g,%.6g,"
                           "%.4g,,%s,%s,mpicc,-O2,,unavailable: not asked,"
                           "tests/data/collectives/gen_fixture.c under Open MPI,"
                           "all-reduce sums checked,,collective/%s,%zuB/%s,\"%s\",,,,,,"
                           "1,%d,%s,%zu\n",
                           OPS[op], bytes, pl, argv[1], n, argv[2], OPS[op], met[m], v,
                           m == 2 ? "us" : "GB/s", REPS, 1, lo, hi, mu, sdv, ts, argv[4], OPS[op],
                           bytes, pl, argv[3], n, argv[1], bytes);
                }
                fflush(stdout);
            }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
