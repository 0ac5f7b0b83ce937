/*
 * harness/measure/tb_executor.h: the executor stage of the pipeline (suite -> plan ->
 * EXECUTOR -> results -> cost -> report): the one interface every executor implements
 * and the one measurement loop, tb_measure, that every run goes through.
 *
 * An executor is a struct tb_executor_i of functions (ggml's backend idiom): whether it
 * can run a workload (and why not: no device, a precision it lacks), setting a run up,
 * one repetition, validating a repetition's output, the edges of the timed region
 * (energy counters), finishing and tearing down. tb_measure owns what they share:
 *
 *   setup; for k = -warmup .. reps-1 (k < 0: warm-up, untimed):
 *       [k == 0: PAPI counters on (host executors), timed_begin]
 *       rep k, timed by the executor (CUDA events) or by CLOCK_MONOTONIC around it
 *       [k == reps-1: timed_end]
 *       validate k (outside the timed region); timer-granularity check of k's time
 *   counters off (per repetition); finish (first-loss check, energy, provenance);
 *   teardown
 *
 * The executors (one file each):
 *   cpu   measure/exec_cpu.c   the Llama and diffusion engines on this CPU (fp32)
 *   cuda  measure/exec_cuda.c  the CUDA plugin (tb_gpu.h), bf16 or fp8, energy from NVML
 *   model measure/exec_model.c the performance model (tb_model.h): one "repetition" is
 *                              one prediction, validated by its fitting the target
 *   endpoint measure/exec_endpoint.c  an OpenAI-compatible server under load (phase serve):
 *                              one "repetition" is one load level, every request of it
 *                              streamed and timed by the load client (endpoint/tb_loadgen.h)
 *   pytorch measure/exec_torch.c  training by PyTorch (executor=pytorch): the training
 *                              script launched by torchrun on the CPU, GPUs or NeuronCores
 *                              (tb_torch.h); setup runs every step, each "repetition" is
 *                              one timed step of its report
 * Adding one (Neuron) is adding a file that fills a struct tb_executor_i
 * and a line in the plan's list of executors (run/tb_run.c).
 *
 * What one repetition is, per phase (B = batch, T = seq_in, n = seq_out):
 *   prefill  B prompts of T tokens (fills the KV cache; last-position logits)
 *   decode   n greedy steps for B sequences at positions T .. T+n-1, after one untimed
 *            prefill of the prompt (in setup); every repetition restarts at position T
 *            from the same first tokens, so each does the same work
 *   train    one step: forward with loss on B x T tokens, backward, AdamW
 *   denoise  one generation of B images: every step, both halves with guidance
 *
 * Validation: logits finite after every prefill and decode repetition; the training
 * loss finite, and the very first loss (before any update) within 1 nat of ln V, which
 * the random initialisation (std 0.02) guarantees for a correct forward pass; latents
 * finite after every generation. A failed validation sets valid = false with the reason
 * in note; it is not an error return.
 *
 * Ownership: a tb_exec_result owns its samples; tb_exec_result_release frees them. Not
 * thread-safe (the counters are process-wide).
 */
#ifndef TB_EXECUTOR_H
#define TB_EXECUTOR_H

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_suite.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Energy over the timed repetitions (an executor with an energy counter: the GPU). */
struct tb_energy {
    bool ok;            /* figures valid */
    double joules;      /* total over the timed repetitions */
    double avg_power_w; /* joules / seconds */
    double j_per_unit;  /* joules per token (Llama) or per image (denoise) */
    char note[256];     /* why not ok, or how measured */
};

struct tb_prediction;   /* tb_model.h */
struct tb_load_result;  /* tb_loadgen.h */
struct tb_train_report; /* tb_torch.h */

/* What one run of an executor produced. */
struct tb_exec_result {
    int reps;                /* timed repetitions */
    double *secs;            /* owned: [reps] seconds of each timed repetition */
    double tokens;           /* tokens one repetition processes: B*T, or B*n for decode; images */
    double flops;            /* model FLOPs of one repetition (tb_flops.h) */
    double bytes;            /* decode: minimum bytes one repetition reads; else 0 */
    double steps;            /* decode: n steps per repetition; denoise: steps; else 1 */
    double loss_first;       /* train: loss of the first step (a warm-up one when warmup > 0) */
    double loss_last;        /* train: loss of the last timed step */
    bool valid;              /* every output passed validation */
    char note[256];          /* validation failure or timer warning; "" when none */
    char counters[1200];     /* per timed repetition: "PAPI_TOT_CYC=...;..." or "unavailable: ..."
                                (host executors); the device's provenance (cuda) */
    size_t engine_bytes;     /* memory the engine allocated (device memory on a GPU) */
    struct tb_energy energy; /* ok false where there is no counter */
    struct tb_prediction *predicted; /* owned: the model executor's prediction; NULL for a
                                        measurement */
    struct tb_load_result *load;     /* owned: the endpoint executor's level (every request
                                        timed); NULL for the others */
    struct tb_train_report *train;   /* owned: the pytorch executor's report (the script's
                                        environment, compile_s); NULL for the others */
    bool unavailable; /* setup found the executor cannot run here (no torch, no device):
                         the run is skipped with the reason tb_measure returns, not failed */
    bool elsewhere;   /* setup: the work ran, and another process reports it (a node of a
                         training across nodes without its rank 0): nothing to record here */
};

/* A workload as the plan resolved it: the spec and its model. */
struct tb_workload {
    const struct tb_run_spec *spec; /* borrowed */
    const struct tb_arch *arch;     /* borrowed: the Llama (NULL for denoise) */
    const struct tb_darch *darch;   /* borrowed: the diffusion model (denoise only) */
    const void *scenario;           /* borrowed: the model executor's question (struct
                                       tb_scenario, tb_model.h); NULL for the engines */
    struct tb_progress *progress;   /* borrowed: progress lines on stderr while tb_measure
                                       runs it (tb_progress.h); NULL: none */
};

enum tb_exec_flags {
    TB_EXEC_HOST_COUNTERS = 1 << 0, /* PAPI counters around the timed repetitions */
    TB_EXEC_SELF_TIMED = 1 << 1,    /* rep reports its own time (device events) */
    TB_EXEC_ENERGY = 1 << 2,        /* r->energy from a counter; device memory, MFU rows */
};

struct tb_executor_i {
    const char *name;       /* results.csv's executor: "cpu", "cuda", "model" */
    const char *provenance; /* "measured" or "modeled" */
    const char *what;       /* in messages: "CPU", "GPU", "model" */
    const char *id_prefix;  /* run ids: "" or "cuda:" */
    unsigned flags;         /* enum tb_exec_flags */
    /* Whether it runs w on self; false with the reason (no device, a precision it does
     * not run): the run is skipped, not failed. */
    bool (*can_run)(const void *self, const struct tb_workload *w, char *why, size_t whylen);
    /* The precision this executor runs spec at, into spec (the GPU runs fp32 as bf16);
     * NULL: as given. */
    void (*adapt)(const void *self, struct tb_run_spec *spec);
    /* Set a run of w up (engine, weights, inputs, the untimed prefill of a decode) and
     * the work of one repetition in r (tokens, flops, bytes, steps, engine_bytes); *run
     * gets the run's state. Returns 0 or -1 with a message. */
    int (*setup)(void *self, const struct tb_workload *w, struct tb_exec_result *r, void **run,
                 char *err, size_t errlen);
    /* Repetition k (k < 0: warm-up). A TB_EXEC_SELF_TIMED executor sets *secs. Returns
     * 0, 1 when the output failed validation inside the repetition (r marked invalid;
     * the loop stops) or -1 with a message. */
    int (*rep)(void *run, int k, struct tb_exec_result *r, double *secs, char *err, size_t errlen);
    /* Validate repetition k's output, outside the timed region: 0 (r->valid says),
     * 1 to stop the loop (r marked invalid), -1 with a message. NULL: none. */
    int (*validate)(void *run, int k, struct tb_exec_result *r, char *err, size_t errlen);
    /* The edges of the timed region: before repetition 0, after repetition reps-1
     * (energy counters). NULL: nothing. */
    void (*timed_begin)(void *run);
    void (*timed_end)(void *run);
    /* After the last repetition: final checks, energy, provenance into r->counters.
     * NULL: nothing. */
    int (*finish)(void *run, struct tb_exec_result *r, char *err, size_t errlen);
    void (*teardown)(void *run);
};

/* An executor and its instance (the GPU it drives, the model it asks). */
struct tb_executor {
    const struct tb_executor_i *i;
    void *self; /* borrowed */
};

extern const struct tb_executor_i tb_executor_cpu;      /* measure/exec_cpu.c; self NULL */
extern const struct tb_executor_i tb_executor_cuda;     /* measure/exec_cuda.c; self a tb_gpu */
extern const struct tb_executor_i tb_executor_model;    /* measure/exec_model.c; self a tb_model */
extern const struct tb_executor_i tb_executor_endpoint; /* measure/exec_endpoint.c; self a
                                                           tb_endpoint */
extern const struct tb_executor_i tb_executor_torch;    /* measure/exec_torch.c; self NULL */

/* The endpoint executor's self: where the server of a serving run answers (the plan
 * fills it: the suite's URL, or the port of the server it started). */
struct tb_endpoint {
    char base_url[512];     /* "http://HOST:PORT/v1" */
    char served_model[128]; /* the server's name for the model */
};

/* Run w on ex through the one loop: setup, w->spec->warmup untimed and w->spec->reps
 * timed repetitions, validation, counters, finish, teardown. Fills *r (release it even
 * on failure). Returns 0 when it ran (see r->valid), or -1 with a message (the engine
 * refused, memory ran out, the device failed, can_run says no; r->unavailable when
 * setup found it cannot run here). */
int tb_measure(const struct tb_executor *ex, const struct tb_workload *w, struct tb_exec_result *r,
               char *err, size_t errlen);

/* The same loop on a run already set up (the engine the caller holds: tb_exec_time). */
int tb_measure_run(const struct tb_executor_i *i, void *run, const struct tb_run_spec *spec,
                   struct tb_exec_result *r, char *err, size_t errlen);

/* ---- helpers the executors share ---- */

/* Draw n token ids in [0, vocab) from *seed (advanced): a 64-bit LCG, high bits. */
void tb_exec_tokens(int *ids, size_t n, int vocab, uint64_t *seed);

/* The inputs of a Llama run, drawn from spec->seed: *tokens [batch, seq_in] and, for
 * train, *targets [batch, seq_in] (the next token of one stream of seq_in + 1 per
 * sequence; NULL otherwise). The caller frees both. Returns 0 or -1 (out of memory). */
int tb_exec_inputs(const struct tb_run_spec *spec, int vocab, int **tokens, int **targets,
                   char *err, size_t errlen);

/* Start an empty result of spec->reps repetitions: valid, one step, losses NAN, r->secs
 * allocated. Returns 0 or -1 (out of memory). */
int tb_exec_result_start(struct tb_exec_result *r, const struct tb_run_spec *spec, char *err,
                         size_t errlen);

/* Start a result for spec on arch: reps, valid, loss NAN, and the work of one
 * repetition (tokens, flops, steps and, for decode, the bytes a step must read with
 * weights of bytes_per_param and a KV cache of bytes_per_kv bytes per element).
 * Allocates r->secs. Returns 0 or -1 (out of memory). */
int tb_exec_result_init(struct tb_exec_result *r, const struct tb_run_spec *spec,
                        const struct tb_arch *a, double bytes_per_param, double bytes_per_kv,
                        char *err, size_t errlen);

/* The same for a denoise run of d: one repetition is one batch of images with all the
 * steps; flops are the denoiser passes'. */
int tb_exec_result_init_denoise(struct tb_exec_result *r, const struct tb_run_spec *spec,
                                const struct tb_darch *d, char *err, size_t errlen);

/* Greedy next token of each of B sequences from logits [B, V]. */
void tb_exec_argmax(const float *logits, int B, int V, int *out);

/* Mark r invalid with "validation failed: what" (the first reason is kept). */
void tb_exec_invalid(struct tb_exec_result *r, const char *what);

/* After a train run: the first loss must be within 1 nat of ln V (random weights with
 * std 0.02 predict near-uniformly), else r becomes invalid. */
void tb_exec_check_first_loss(struct tb_exec_result *r, int vocab);

/* Record a training repetition's loss: invalid when not finite; the first (k ==
 * -warmup) and the last kept. */
void tb_exec_loss(struct tb_exec_result *r, const struct tb_run_spec *spec, int k, double loss);

void tb_exec_result_release(struct tb_exec_result *r);

#endif
