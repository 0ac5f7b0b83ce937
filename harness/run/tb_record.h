/*
 * harness/run/tb_record.h: the rows of one measured run in results.csv (tb_results.h). From
 * the seconds of each timed repetition (tb_exec_result) come the phase's metrics with
 * their spread: latency (ttft_ms, tpot_ms, step_time_s, s_per_image), throughput
 * (prefill_, decode_, train_tokens_per_s, images_per_s), gflop_per_s and, for decode,
 * gbyte_per_s; then the loss of a training run and one-value extras (energy, MFU). All
 * of a run's rows are appended at once, atomically.
 *
 * A prediction (the model executor's result) becomes the rows of every metric the
 * model predicts for its phase (tb_vocab.h), provenance modeled.
 *
 * `trnbench run` (the CPU, GPU and model executors) and `trnbench perf --gpu --out` (the GPU
 * figures and the PyTorch peer's) write through here, so a metric means the same
 * whichever executor produced it.
 *
 * Ownership: nothing here keeps a pointer past the call; the caller owns every struct.
 */
#ifndef TB_RECORD_H
#define TB_RECORD_H

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_exec.h"
#include "tb_gpu.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_suite.h"

#include <stddef.h>

#define TB_RECORD_MAX_EXTRA                                                                        \
    5 /* one-value rows beside the metrics: energy (2), MFU, device memory */

struct tb_slurm_task; /* tb_slurm.h */

/* Facts every row of one executor's runs share. */
struct tb_record_ctx {
    const char *results;     /* borrowed: DIR/results.csv */
    char target[128];        /* "host" or the EC2 instance type */
    char host[512];          /* what ran it: CPU, cores, memory; or the GPU */
    char blas[256];          /* BLAS and threads; cuBLASLt; a peer's libraries */
    char device[320];        /* results' device: "AMD EPYC (host CPU)", "NVIDIA H100 80GB HBM3
                                x1"; "" leaves it empty */
    char accel_unused[1024]; /* results' accelerators_unused: the accelerators of this machine
                                that no executor of the run used, and why ("16 Trainium2
                                devices (128 NeuronCores): no Neuron SDK found ..."); set on
                                the host executor's rows only, "" for none */
    const char *executor;    /* borrowed: "cpu", "cuda", "pytorch" */
    const char *engine;      /* static: results' engine, "host-cpu" (our CPU engines on the
                                host CPU), "trnbench-cuda", or NULL (a server's own, a vendor
                                stack's) */
    const char *compiler;    /* borrowed: NULL for this build's compiler */
    const char *cflags;      /* borrowed: NULL for this build's CFLAGS */
    const char *source;      /* borrowed: NULL for "trnbench" */
    const char *chips_used;  /* borrowed: results' chips_used ("1" on a GPU); NULL: the whole
                                target */
    const struct tb_slurm_task *slurm; /* borrowed: the Slurm task measuring (the rows' nodes,
                                          ranks, rank, node, slurm_job); NULL outside Slurm */
};

/* A one-value row (energy, MFU): value in unit over n repetitions. */
struct tb_record_extra {
    const char *metric, *unit; /* static strings */
    double value;
    int n;
    char notes[700];
};

/* Append the rows of one finished, validated run of spec: the phase's metrics, the
 * loss of a training run (when r has one), then extra[0..nextra-1]. a: the Llama of a
 * Llama run, d: the diffusion model of a denoise run (the other NULL). note: added to
 * every metric row's notes (NULL: none). summary, when not NULL, gets "ttft_ms 12.5 ms,
 * prefill_tokens_per_s ..." for a progress line. Returns 0, or -1 with a message (out
 * of memory, a sample not finite, the write). */
int tb_record_run(const struct tb_record_ctx *c, const struct tb_run_spec *spec,
                  const struct tb_arch *a, const struct tb_darch *d, const struct tb_exec_result *r,
                  const char *run_id, const struct tb_record_extra *extra, int nextra,
                  const char *note, char *summary, size_t summarylen, char *err, size_t errlen);

/* Append the rows of a prediction p of sc (the model executor's result): every metric
 * the vocabulary records for sc's phase that p has, provenance modeled, executor model.
 * Returns 0, or -1 with a message (the write). */
int tb_record_prediction(const struct tb_record_ctx *c, const struct tb_scenario *sc,
                         const struct tb_prediction *p, const char *run_id, const char *device,
                         char *err, size_t errlen);

/* Append the rows of one serving level (the endpoint executor's result, r->load):
 * per-request latency distributions (ttft_ms, tpot_ms, itl_ms, e2e_latency_ms and
 * tokens_per_s_per_user: value the p50, columns p90 and p99 beside min, max, mean,
 * stddev, n) and the level's totals (output_tokens_per_s, total_tokens_per_s,
 * requests_per_s, goodput_requests_per_s when the spec has latency limits,
 * failed_requests with the reasons, mismatched_requests, the load achieved), then
 * extra[0..nextra-1] (the server's start); flops the model FLOPs of the completed
 * requests (prefill and decode, tb_flops.h). a: the catalogue Llama the run names.
 * c->device: the server (label and version). Returns 0, or -1 with a message. */
int tb_record_serve(const struct tb_record_ctx *c, const struct tb_run_spec *spec,
                    const struct tb_arch *a, const struct tb_exec_result *r, const char *run_id,
                    const struct tb_record_extra *extra, int nextra, char *summary,
                    size_t summarylen, char *err, size_t errlen);

/* A GPU run's extras into x[0..TB_RECORD_MAX_EXTRA-1]: average power and energy per
 * token or image when e says ok (e may be NULL), and a training run's MFU against chip's
 * dense bf16 peak (chip may be NULL: no MFU). Returns how many. */
int tb_record_gpu_extras(const struct tb_chip *chip, const struct tb_run_spec *spec,
                         const struct tb_exec_result *r, const struct tb_energy *e,
                         struct tb_record_extra *x);

#endif
