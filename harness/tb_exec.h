/*
 * harness/tb_exec.h: the CPU executor. Runs one run spec (tb_suite.h) on the Llama
 * engine (workloads/llama/llama.h) and measures it: `warmup` untimed repetitions, then
 * `reps` timed ones on CLOCK_MONOTONIC (tb_timer.h), every repetition's output
 * validated, PAPI counters around the timed repetitions when they work.
 *
 * What one repetition is, per phase (B = batch, T = seq_in, n = seq_out):
 *   prefill  B prompts of T tokens (fills the KV cache; last-position logits)
 *   decode   n greedy steps for B sequences at positions T .. T+n-1, after one untimed
 *            prefill of the prompt; every repetition restarts at position T from the
 *            same first token, so each does the same work
 *   train    one step: forward with loss on B x T tokens, backward, AdamW
 *
 * Validation: logits finite after every prefill and decode step; the training loss
 * finite, and the very first loss (before any update) within 1 nat of ln V, which the
 * random initialisation (std 0.02) guarantees for a correct forward pass. A failed
 * validation sets valid = false with the reason in note; it is not an error return.
 *
 * Ownership: a tb_exec_result owns its samples; tb_exec_result_release frees them.
 * Not thread-safe (the counters are process-wide).
 */
#ifndef TB_EXEC_H
#define TB_EXEC_H

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_suite.h"
#include "workloads/llama/llama.h"

#include <stdbool.h>
#include <stddef.h>

struct tb_exec_result {
    int reps;            /* timed repetitions */
    double *secs;        /* owned: [reps] seconds of each timed repetition */
    double tokens;       /* tokens one repetition processes: B*T, or B*n for decode */
    double flops;        /* model FLOPs of one repetition (tb_flops.h) */
    double bytes;        /* decode: minimum bytes one repetition reads (fp32); else 0 */
    double steps;        /* decode: n steps per repetition; else 1 */
    double loss_first;   /* train: loss of the first step (a warm-up one when warmup > 0) */
    double loss_last;    /* train: loss of the last timed step */
    bool valid;          /* every output passed validation */
    char note[256];      /* validation failure or timer warning; "" when none */
    char counters[1200]; /* per timed repetition: "PAPI_TOT_CYC=...;..." or "unavailable: ..." */
    size_t engine_bytes; /* memory the engine allocated */
};

/* Time spec's phase on an engine set up for it (max_batch >= batch; max_seq >= seq_in
 * + seq_out for decode; TB_LLAMA_TRAIN for train). tokens: [batch, seq_in] prompt or
 * training ids; targets: [batch, seq_in] (train only, else NULL). Fills *r (release
 * it even on failure). Returns 0 when it ran (see r->valid), or -1 with a message when
 * the engine refused or memory ran out. */
int tb_exec_time(struct tb_llama *m, const struct tb_run_spec *spec, const int *tokens,
                 const int *targets, struct tb_exec_result *r, char *err, size_t errlen);

/* Whether the CPU executor runs spec's precision (fp32 only); false with the reason in
 * why ("precision fp8: the CPU engine computes in fp32 only (fp8 runs on the GPU
 * executor)"): the caller skips such a run, it is not a failure. */
bool tb_exec_can_run(const struct tb_run_spec *spec, char *why, size_t whylen);

/* Set up an engine for spec on arch (weights and tokens drawn from spec->seed), time
 * it with tb_exec_time and free the engine. Returns like tb_exec_time; a precision the
 * CPU does not run (tb_exec_can_run) is an error with that reason. */
int tb_exec_run(const struct tb_run_spec *spec, const struct tb_arch *arch,
                struct tb_exec_result *r, char *err, size_t errlen);

/* Phase denoise on the diffusion engine (workloads/diffusion/diffusion.h): set it up
 * for spec->batch images at spec->resolution (0: the model's) and time `reps`
 * generations of `steps` (0: the model's default) denoising steps each, after `warmup`
 * untimed ones; tb_diffusion_sample validates every generation (finite latents). One
 * repetition is one batch of images: r->tokens counts images, r->flops the denoiser
 * passes (the text encoders and the VAE are not run on the CPU), r->steps the steps.
 * Returns like tb_exec_time. */
int tb_exec_run_denoise(const struct tb_run_spec *spec, const struct tb_darch *a,
                        struct tb_exec_result *r, char *err, size_t errlen);

/* Draw n token ids in [0, vocab) from *seed (advanced): a 64-bit LCG, high bits. */
void tb_exec_tokens(int *ids, size_t n, int vocab, uint64_t *seed);

/* The inputs of a Llama run, drawn from spec->seed: *tokens [batch, seq_in] and, for
 * train, *targets [batch, seq_in] (the next token of one stream of seq_in + 1 per
 * sequence; NULL otherwise). The caller frees both. Returns 0 or -1 (out of memory). */
int tb_exec_inputs(const struct tb_run_spec *spec, int vocab, int **tokens, int **targets,
                   char *err, size_t errlen);

/* Start a result for spec on arch: reps, valid, loss NAN, and the work of one
 * repetition (tokens, flops, steps and, for decode, the bytes a step must read with
 * weights of bytes_per_param and a KV cache of bytes_per_kv bytes per element).
 * Allocates r->secs. Returns 0 or -1 (out of memory). */
int tb_exec_result_init(struct tb_exec_result *r, const struct tb_run_spec *spec,
                        const struct tb_arch *a, double bytes_per_param, double bytes_per_kv,
                        char *err, size_t errlen);

/* Greedy next token of each of B sequences from logits [B, V]. */
void tb_exec_argmax(const float *logits, int B, int V, int *out);

/* Mark r invalid with "validation failed: what" (the first reason is kept). */
void tb_exec_invalid(struct tb_exec_result *r, const char *what);

/* After a train run: the first loss must be within 1 nat of ln V (random weights with
 * std 0.02 predict near-uniformly), else r becomes invalid. */
void tb_exec_check_first_loss(struct tb_exec_result *r, int vocab);

void tb_exec_result_release(struct tb_exec_result *r);

#endif
