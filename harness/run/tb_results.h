/*
 * harness/run/tb_results.h: results.csv, the long-format table every executor writes and
 * every report reads (DESIGN.md section 3): one row per metric, with its provenance.
 *
 * Columns, in order (TB_RESULTS_COLUMNS):
 *   run_id      stable id of the run (model, layers, phase, shape, precision): resume key
 *   provenance  measured | modeled | published
 *   target      "host" or the EC2 instance type it ran on / was modeled for
 *   instances   how many of them the row's throughput is for (1 for measured rows)
 *   host        what ran it: CPU model and cores (measured), or empty
 *   executor    cpu | cuda | neuron | model | reference
 *   model       canonical model name; a shortened model carries "@L<n>"
 *   layers      layers actually run
 *   phase       prefill | decode | train | serve | denoise
 *   precision   fp32 | bf16 | fp16 | fp8 | int8, or a vendor format (TB_MODEL_PRECISIONS)
 *   batch, seq_in, seq_out  the shape (seq_in: prompt or training length; seq_out:
 *               generated tokens; empty when not applicable)
 *   steps, resolution       diffusion: denoising steps and square image size in pixels
 *   metric, value, unit     e.g. ttft_ms, 12.5, ms (value is the median for measured rows)
 *   n           repetitions timed (after warmup)
 *   warmup      untimed repetitions before them
 *   min, max, mean, stddev  spread of the repetitions in the metric's unit
 *   flops       model FLOPs of one repetition (tb_flops.h)
 *   timestamp   UTC, ISO 8601, when the run finished
 *   commit      trnbench build commit; compiler; cflags
 *   blas        BLAS library, version and threads
 *   counters    PAPI counter values "EVENT=value;..." or "unavailable: <reason>"
 *   source      where the number comes from (trnbench for measured rows; a citation for
 *               published rows; the model version for modeled rows)
 *   notes       anything a reader needs (validation result, timer warnings)
 *   chips_used  chips (GPUs, Trainium chips) the row's throughput used, when a run used
 *               part of its instances: a GPU run on one of a p5.48xlarge's 8 H100s
 *               writes 1, and the report charges it 1/8 of the instance-hour; empty:
 *               all chips of its `instances` (CPU rows, files of older versions)
 *   workload    what ran, without the load and the executor: model[@Ln]/phase/in<T>
 *               [/out<n>]/precision, or model/denoise/r<px>/s<steps>/precision (a GPU
 *               run's prefixed "cuda:", a modeled twin's ending "/chips1")
 *   config      the workload at its load: the same with /b<batch> after the phase; the
 *               report groups, ranks and pairs rows by these two, never by run_id
 *   device      what ran the row: "AMD EPYC 9R14 (host CPU)", "NVIDIA H100 80GB HBM3
 *               x1", or for a modeled row the chips it modeled ("H100 SXM5 x1 (model)")
 *   concurrency a serving run's load (phase serve, executor endpoint): requests kept in
 *               flight (closed loop), or the cap on them under open-loop arrivals; empty
 *               when uncapped or not a serving run
 *   request_rate a serving run's open-loop arrival rate asked, requests/s ("inf": all at
 *               once); empty for a closed loop. The load achieved is recorded beside it,
 *               as the rows achieved_concurrency and achieved_request_rate
 *   p90, p99    a serving run's per-request latencies (ttft_ms, tpot_ms, itl_ms,
 *               e2e_latency_ms): the 90th and 99th percentiles (value is the p50, n the
 *               requests, or the chunk gaps for itl_ms)
 *   accelerators_unused  on the host CPU's rows of a machine with accelerators: those
 *               no executor of the run used, and why ("16 Trainium2 devices (128
 *               NeuronCores): no Neuron SDK found ..."). Such rows are the host's, not
 *               the instance's accelerator throughput: the report never ranks them
 *               against other targets
 *   nodes, ranks, rank, node, slurm_job  a run of a Slurm job (`trnbench run --slurm`,
 *               tb_slurm.h): the job's node count (SLURM_NNODES) and tasks (SLURM_NTASKS),
 *               the task that measured the row (SLURM_PROCID), its node (SLURMD_NODENAME)
 *               and the job id (SLURM_JOB_ID); on a collective's row (`trnbench
 *               collectives`, harness/dist/) nodes is its hosts; empty for a one-process run
 *   ranks_per_node  a collective's processes (ranks) on each host
 *   link        what a collective's traffic crossed: loopback, shm, tcp, efa, nvlink,
 *               neuronlink (detected or stated; the row's notes say which)
 *   bytes       a collective's message size in bytes (nccl-tests' size)
 *   engine      which engine produced a measured figure, when it is one of trnbench's own:
 *               "host-cpu" (the CPU engines in workloads/, run by the cpu executor or
 *               behind `trnbench serve` on the host CPU: the host's throughput, never an
 *               instance's; the cost stage tells such rows by this field) or
 *               "trnbench-cuda" (the CUDA engine); empty for a server's or a vendor
 *               stack's own engine and for modeled or published rows
 *
 * Files written by older versions (this header less some of the columns added since
 * the first: instances, steps, resolution, chips_used, workload, config, device,
 * concurrency, request_rate, p90, p99, accelerators_unused, nodes, ranks, rank, node,
 * slurm_job, ranks_per_node, link, bytes, engine) still
 * read: an append rewrites them with this header, their rows' new fields empty; the
 * reader derives workload and config of such rows from run_id (tb_results_config), the
 * one place a run id is taken apart.
 *
 * Results are written here (tb_results_append) and read back here (tb_results_load):
 * the reader checks every row (provenance, the required fields, numbers and counts) and
 * returns typed rows, so the stages after it (cost, report) never parse a number.
 */
#ifndef TB_RESULTS_H
#define TB_RESULTS_H

#include "tb_csv.h"
#include "tb_lock.h"

#include <stdbool.h>
#include <stddef.h>

#define TB_RESULTS_NCOLS 51
extern const char *const TB_RESULTS_COLUMNS[TB_RESULTS_NCOLS];

/* The columns in the file's order, several a line. */
/* clang-format off */
enum tb_results_col {
    TB_COL_RUN_ID, TB_COL_PROVENANCE, TB_COL_TARGET, TB_COL_INSTANCES, TB_COL_HOST,
    TB_COL_EXECUTOR, TB_COL_MODEL, TB_COL_LAYERS, TB_COL_PHASE, TB_COL_PRECISION, TB_COL_BATCH,
    TB_COL_SEQ_IN, TB_COL_SEQ_OUT, TB_COL_STEPS, TB_COL_RESOLUTION, TB_COL_METRIC, TB_COL_VALUE,
    TB_COL_UNIT, TB_COL_N, TB_COL_WARMUP, TB_COL_MIN, TB_COL_MAX, TB_COL_MEAN, TB_COL_STDDEV,
    TB_COL_FLOPS, TB_COL_TIMESTAMP, TB_COL_COMMIT, TB_COL_COMPILER, TB_COL_CFLAGS, TB_COL_BLAS,
    TB_COL_COUNTERS, TB_COL_SOURCE, TB_COL_NOTES,
    TB_COL_CHIPS_USED,
    TB_COL_WORKLOAD, TB_COL_CONFIG, TB_COL_DEVICE,
    TB_COL_CONCURRENCY, TB_COL_REQUEST_RATE, TB_COL_P90, TB_COL_P99, TB_COL_ACCEL_UNUSED,
    TB_COL_NODES, TB_COL_RANKS, TB_COL_RANK, TB_COL_NODE, TB_COL_SLURM_JOB,
    TB_COL_RANKS_PER_NODE, TB_COL_LINK, TB_COL_BYTES,
    TB_COL_ENGINE /* last: scripts that index the older columns by position keep working */
};
/* clang-format on */

/* One row: every field a string as it will appear in the file (NULL = empty). */
struct tb_result_row {
    const char *col[TB_RESULTS_NCOLS];
};

/* Append rows to path atomically: the file is read (if it exists; its header must be
 * TB_RESULTS_COLUMNS or an older version's), the new rows added, and the whole written
 * with TB_RESULTS_COLUMNS to a temporary file that replaces it by rename, so a reader
 * or an interrupted run never sees half a row. Returns 0 or -1 with a message. */
int tb_results_append(const char *path, const struct tb_result_row *rows, size_t n, char *err,
                      size_t errlen);

/* Take the lock of the results folder dir (dir/.results.lock, tb_lock.h) for who
 * ("trnbench run"). Every command that appends to dir/results.csv holds it from before
 * it looks at what is there until its last row is appended (tb_results_append reads,
 * adds and renames: two writers at once would lose rows, and two runs would both
 * measure and append the same run), so a second run on one folder waits, then skips
 * what the first recorded. When another process holds it: wait (said on stderr, who
 * holds it), or, wait false, return 1 with err naming the folder and the holder. Once
 * held, the temporaries of results.csv that a killed writer left are removed (said).
 * A file system without locks: said on stderr, returns 0 unlocked. Returns 0, 1, or
 * -1 with a message; release with tb_lock_release. */
int tb_results_lock(struct tb_lock *l, const char *dir, const char *who, bool wait, char *err,
                    size_t errlen);

/* The same for one results file (a Slurm task's rank file, tb_slurm.h): the lock file
 * lock, the temporaries of results swept; messages name name ("'name' is in use by
 * another writer of <of> (...)"). */
int tb_results_lock_file(struct tb_lock *l, const char *lock, const char *results, const char *name,
                         const char *of, const char *who, bool wait, char *err, size_t errlen);

/* Whether results at path already hold a row with this run_id (0 no, 1 yes, -1 error;
 * a missing file is "no"). */
int tb_results_has_run(const char *path, const char *run_id, char *err, size_t errlen);

/* ---- reading results back: typed rows ---- */

/* Where a row's number comes from (the provenance column). */
enum tb_provenance {
    TB_PROV_MEASURED,
    TB_PROV_MODELED,
    TB_PROV_PUBLISHED,
};
#define TB_NPROV 3

/* "measured", "modeled", "published". */
const char *tb_provenance_to_string(enum tb_provenance p);

/* One checked row of a results file. The numbers are parsed; every other field is read
 * by its column's name (tb_result_field), so files of any version read alike. */
struct tb_result {
    const struct tb_csv_table *t; /* borrowed: the file the row is in (a struct tb_results's) */
    size_t r;                     /* row in t */
    enum tb_provenance prov;
    double value, min, max; /* NAN when empty (value never is) */
    double p90, p99;        /* a serving row's percentiles; NAN when empty */
    long n, warmup;         /* -1 when empty */
    long instances;         /* instances the throughput is for (empty: 1) */
    long chips_used;        /* chips it used (results.csv chips_used); 0: all of them */
    char workload[192];     /* results.csv workload, or derived from run_id (older files) */
    char config[192];       /* results.csv config, or derived likewise */
};

/* workload and config of a row from its run_id, target and model, as the writer fills
 * those columns: the executor's "model:<target>/" prefix, a trailing "@<target>" and
 * "/x<instances>" taken off (config), and then "/b<batch>" (workload). */
void tb_results_config(const char *run_id, const char *target, const char *model, char *config,
                       size_t clen, char *workload, size_t wlen);

/* One or more results files read together. */
struct tb_results {
    struct tb_csv_table *tables; /* owned: ntables, in the order given */
    size_t ntables;
    struct tb_result *rows; /* owned: nrows; measured, then modeled, then published rows,
                               each in file order (so they never interleave) */
    size_t nrows;
    size_t nprov[TB_NPROV]; /* rows of each provenance */
    char notes[1024];       /* what reading changed, one line each: a predict output's
                               rows read as modeled and those skipped, and why ("" none) */
};

/* Read and check the npaths files. A file `trnbench predict` wrote (a scenario table
 * with predicted and model_version; tb_results_is_predict) is read as the modeled rows
 * it stands for (tb_results_from_predict), and res->notes says so. Every row must have a known
 * provenance; target, model, phase, metric and value filled; numbers where numbers go; a positive
 * value for a throughput (tb_result_is_rate); instances and chips_used at least 1 when given.
 * Returns 0, or -1 with the first bad line named ("out/results.csv: line 7: field
 * 'value': not a number: 'abc'") and res left empty. Release with
 * tb_results_release. */
int tb_results_load(struct tb_results *res, const char *const *paths, size_t npaths, char *err,
                    size_t errlen);
/* Free what res owns (rows point into it: they go too); res is left empty. */
void tb_results_release(struct tb_results *res);

/* ---- predict's output as results (tb_results_predict.c) ---- */

/* Whether t is a table `trnbench predict` wrote: the columns predicted and
 * model_version, and no provenance. */
bool tb_results_is_predict(const struct tb_csv_table *t);
/* Replace t, a predict output, by the results rows it stands for: each predicted row
 * one row of provenance modeled, executor model, source its model_version, its shape
 * and target as given, chips_used its chips, notes its id, bound and assumptions; run
 * id the one a suite's predict line of the same fields gets (tb_model_run_id, plus
 * "/chips<N>" when it names chips). The rows keep t's path and their lines. Rows with
 * why set, or of a metric results.csv does not record for the phase (usd_to_train),
 * are skipped; a line in notes (may be NULL) says how many, why, and how many were
 * read. Returns 0, or -1 with a message (t unchanged): no row predicted, out of
 * memory. */
int tb_results_from_predict(struct tb_csv_table *t, char *notes, size_t noteslen, char *err,
                            size_t errlen);

/* A field of x by column name; "" when empty or when its file has no such column. */
const char *tb_result_field(const struct tb_result *x, const char *name);
/* The line of x's file the row starts on. */
long tb_result_line(const struct tb_result *x);
/* Fail with "FILE: line N: field 'NAME': WHAT: 'VALUE'" in err; returns -1. */
int tb_result_bad_field(const struct tb_result *x, const char *name, const char *what, char *err,
                        size_t errlen);

/* Whether metric is a throughput: a *_tokens_per_s metric or images_per_s (a row of one
 * must have a positive value). */
bool tb_result_is_rate(const char *metric);
/* Whether metric is a token throughput: a *_tokens_per_s metric. */
bool tb_result_is_token_rate(const char *metric);

#endif
