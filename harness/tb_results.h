/*
 * harness/tb_results.h: results.csv, the long-format table every executor writes and
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
 *   precision   fp32 | bf16 | fp16 | fp8 | int8
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
 */
#ifndef TB_RESULTS_H
#define TB_RESULTS_H

#include <stddef.h>

#define TB_RESULTS_NCOLS 33
extern const char *const TB_RESULTS_COLUMNS[TB_RESULTS_NCOLS];

enum tb_results_col {
    TB_COL_RUN_ID, TB_COL_PROVENANCE, TB_COL_TARGET, TB_COL_INSTANCES, TB_COL_HOST, TB_COL_EXECUTOR, TB_COL_MODEL,
    TB_COL_LAYERS, TB_COL_PHASE, TB_COL_PRECISION, TB_COL_BATCH, TB_COL_SEQ_IN, TB_COL_SEQ_OUT, TB_COL_STEPS, TB_COL_RESOLUTION,
    TB_COL_METRIC, TB_COL_VALUE, TB_COL_UNIT, TB_COL_N, TB_COL_WARMUP, TB_COL_MIN, TB_COL_MAX,
    TB_COL_MEAN, TB_COL_STDDEV, TB_COL_FLOPS, TB_COL_TIMESTAMP, TB_COL_COMMIT, TB_COL_COMPILER,
    TB_COL_CFLAGS, TB_COL_BLAS, TB_COL_COUNTERS, TB_COL_SOURCE, TB_COL_NOTES
};

/* One row: every field a string as it will appear in the file (NULL = empty). */
struct tb_result_row {
    const char *col[TB_RESULTS_NCOLS];
};

/* Append rows to path atomically: the file is read (if it exists; its header must be
 * TB_RESULTS_COLUMNS), the new rows added, and the whole written to a temporary file
 * that replaces it by rename, so a reader or an interrupted run never sees half a row.
 * Returns 0 or -1 with a message. */
int tb_results_append(const char *path, const struct tb_result_row *rows, size_t n, char *err,
                      size_t errlen);

/* Whether results at path already hold a row with this run_id (0 no, 1 yes, -1 error;
 * a missing file is "no"). */
int tb_results_has_run(const char *path, const char *run_id, char *err, size_t errlen);

#endif
