/*
 * harness/dist/tb_nccom.h: Neuron's collectives through `nccom-test`, the Neuron SDK's
 * collective benchmark (aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst, "NCCOM-TEST
 * User Guide"), run as a child process with an argv (never a shell) and its results
 * parsed into a tb_coll_result (tb_coll.h).
 *
 * Its command line as trnbench uses it: `nccom-test -r RANKS -N NODES -b MIN -e MAX -f
 * FACTOR -n ITERS -w WARMUP -d fp32 [-c] [--non-interactive] [--report-to-json-file
 * PATH] OP` (the last two when its --help names them), OP one of
 * allr, allg, redsct, sendrecv and alltoall (the guide's list at Neuron 2.32, commit
 * a3247f5b; all-to-all since the tools of Neuron 2.15).
 *
 * ---- the table on stdout ----
 *
 * A header line, one line per size, then `Avg bus bandwidth: XGB/s`; a failed size
 * prints `SIZE Failure running neuron-bench - log file PATH` and the run ends `N errors
 * found - test failed`. The header has changed over the releases, so its columns are
 * found by name, each row having as many fields as the header:
 *
 *   size(B) count(elems) type     always
 *   time(us)                      the guide's examples written before 2.24 (some are
 *                                 still printed so): the P50 of the operations' times by
 *                                 the guide up to 2.27, "the average" from 2.28
 *                                 (aws-neuron-sdk 86a92868): which one a table holds is
 *                                 not knowable from it, and is recorded as unlabelled
 *   time:<stat>(us)               the examples from 2.24 (90a7fe4b) on, one per
 *                                 statistic of `-t/--stats` (2.28; `-s` from 2.11):
 *                                 time:avg(us), the default, is the mean; time:pNN(us) a
 *                                 percentile
 *   algbw(GB/s) busbw(GB/s)       always so labelled; the guide's prose says gibibytes per
 *                                 second, its examples since 2.24 print 10^9 B/s (1024 B
 *                                 in 6.19 us: 0.17) and its older ones GiB/s (1 GiB in
 *                                 18930 us: 52.83)
 *   total_input_size(B),          optional (--show-input-output-size, --show-algorithm):
 *   total_output_size(B),         read past
 *   algorithm
 *
 * The time recorded is the mean when a time:avg(us) column is there, else the median
 * (time:p50(us)), else the first time column; time:p90(us) and time:p99(us) fill the
 * results' p90 and p99 columns. The bandwidths are recomputed from the size and that
 * time in GB/s (10^9 bytes), as nccl-tests and trnbench count; the printed algbw is
 * checked against size / time in both units, and the unit it matched is recorded
 * (tb_nccom_format.unit): a row matching neither is refused, as is a table whose rows
 * match different units. nccom-test has no in-place column: only out-of-place rows.
 *
 * ---- the JSON report ----
 *
 * `--report-to-json-file PATH` (the tools of Neuron 2.24: aws-neuron-sdk
 * release-notes/components/dev-tools.rst, "Neuron Developer Tools [2.24.54.0]", commit
 * 90a7fe4b) writes the same figures unrounded: an object whose "results" array holds one
 * object per size with the table's column names as keys ("size(B)", "count(elems)",
 * "type", "algbw(GB/s)", "busbw(GB/s)", "time:avg(us)", ...). tb_nccom_run asks for it
 * when `nccom-test --help` names the option, and reads it in place of the table (whose
 * sizes it must match); a tool that names it but writes nothing leaves the table.
 *
 * Test stand-ins (tests/data/neuron/nccom-test/) print TB_NEURON_STAND_IN_KEY (and put
 * it in their JSON reports); output holding it is refused outside trnbench's tests (no
 * TRNBENCH_TEST=1), as neuron-ls's stand-ins are (tb_neuron.h).
 */
#ifndef TB_NCCOM_H
#define TB_NCCOM_H

#include "tb_coll.h"

#include <stdbool.h>
#include <stddef.h>

/* nccom-test's name of op: "allr", "allg", "redsct", "alltoall", "sendrecv". */
const char *tb_nccom_op(enum tb_coll_op op);

/* What a parse found about the output's format, for the rows' notes. */
struct tb_nccom_format {
    char time_col[40]; /* the column the time comes from: "time(us)", "time:avg(us)" */
    char unit[8];      /* what algbw(GB/s) held: "GB/s" (10^9 B/s), "GiB/s", or "" when
                          no row could tell (every algbw below 0.5 in the table) */
    bool json;         /* read from the JSON report, not the table */
    bool stand_in;     /* the output carries TB_NEURON_STAND_IN_KEY */
};

/* Parse nccom-test's table (text, len bytes; name for messages) for op over nranks into
 * r (out-of-place sizes; wrong 0 when checked is set and no error was printed, else -1;
 * r->time_stat and time_how say which statistic the time is) and f. Returns 0, or -1
 * (TB_EFAIL: the tool reported a failure) or -2 (TB_EINPUT: not its table) with
 * "NAME: line N: ..." in err; r holds nothing then. */
int tb_nccom_parse(const char *name, const char *text, size_t len, enum tb_coll_op op, int nranks,
                   bool checked, struct tb_coll_result *r, struct tb_nccom_format *f, char *err,
                   size_t errlen);

/* The same from the JSON report's text (--report-to-json-file), f->json set. Returns 0,
 * or -2 with "NAME: results[K]: ..." in err. */
int tb_nccom_parse_json(const char *name, const char *text, size_t len, enum tb_coll_op op,
                        int nranks, bool checked, struct tb_coll_result *r,
                        struct tb_nccom_format *f, char *err, size_t errlen);

struct tb_nccom_opts {
    enum tb_coll_op op;
    int ranks, nodes;
    size_t min_bytes, max_bytes;
    double step_factor;
    int iters, warmup;
    bool check;
    double timeout_s; /* 0: none */
};

/* Find nccom-test (PATH, then the Neuron tools folder), run it with o (asking for the
 * JSON report in a temporary file when its --help names the option) and parse its
 * results into r and f; tool gets its path. Returns 0, 1 when there is no nccom-test
 * (why in err), -1 (it failed, or stand-in output outside tests) or -2 (output not its
 * table or report) with a message. */
int tb_nccom_run(const struct tb_nccom_opts *o, struct tb_coll_result *r, struct tb_nccom_format *f,
                 char *tool, size_t toollen, char *err, size_t errlen);

#endif
