/*
 * harness/dist/tb_nccom.h: Neuron's collectives through `nccom-test`, the Neuron SDK's
 * collective benchmark (aws-neuron-sdk tools/neuron-sys-tools/nccom-test.rst, "NCCOM-TEST
 * User Guide"), run as a child process with an argv (never a shell) and its table parsed
 * into a tb_coll_result (tb_coll.h).
 *
 * Its documented command line: `nccom-test -r RANKS [-N NODES] -b MIN -e MAX -f FACTOR -n
 * ITERS -w WARMUP -d fp32 [-c] OP`, OP one of allr, allg, redsct, sendrecv (the guide
 * names no all-to-all). Its documented output: a header line `size(B) count(elems) type
 * time(us) algbw(GB/s) busbw(GB/s)`, one line per size, then `Avg bus bandwidth: XGB/s`;
 * a failed size prints `SIZE Failure running neuron-bench - log file PATH` and the run
 * ends `N errors found - test failed`. time(us) is the P50 of the operations' times,
 * algbw and busbw are in GiB/s (the guide: "gibibytes (1GiB = 1,073,741,824 bytes) per
 * second"): they are converted to GB/s (1e9 bytes) here, as nccl-tests and trnbench
 * count. nccom-test has no in-place column: only out-of-place rows come from it.
 *
 * Test stand-ins (tests/data/neuron/nccom-test/) print TB_NEURON_STAND_IN_KEY; output
 * holding it is refused outside trnbench's tests (no TRNBENCH_TEST=1), as neuron-ls's
 * stand-ins are (tb_neuron.h).
 */
#ifndef TB_NCCOM_H
#define TB_NCCOM_H

#include "tb_coll.h"

#include <stdbool.h>
#include <stddef.h>

/* nccom-test's name of op ("allr"), or NULL when the guide names none (all-to-all). */
const char *tb_nccom_op(enum tb_coll_op op);

/* Parse nccom-test's output (text, len bytes; name for messages) for op over nranks
 * into r (out-of-place sizes; wrong 0 when checked is set and no error was printed,
 * else -1). *stand_in says whether the text carries the stand-in key. Returns 0, or -1
 * (TB_EFAIL: the tool reported a failure) or -2 (TB_EINPUT: not its table) with
 * "NAME: line N: ..." in err. */
int tb_nccom_parse(const char *name, const char *text, size_t len, enum tb_coll_op op, int nranks,
                   bool checked, struct tb_coll_result *r, bool *stand_in, char *err,
                   size_t errlen);

struct tb_nccom_opts {
    enum tb_coll_op op;
    int ranks, nodes;
    size_t min_bytes, max_bytes;
    double step_factor;
    int iters, warmup;
    bool check;
    double timeout_s; /* 0: none */
};

/* Find nccom-test (PATH, then the Neuron tools folder), run it with o and parse its
 * table into r; tool gets its path. Returns 0, 1 when there is no nccom-test (why in
 * err), -1 (it failed, or stand-in output outside tests) or -2 (output not its table)
 * with a message. */
int tb_nccom_run(const struct tb_nccom_opts *o, struct tb_coll_result *r, char *tool,
                 size_t toollen, char *err, size_t errlen);

#endif
