/*
 * harness/measure/tb_exec.h: the cpu executor's entry points (measure/exec_cpu.c), for callers
 * that hold an engine of their own (trnbench perf, the tests). A run of a suite goes
 * through the executor interface instead (measure/tb_executor.h: tb_executor_cpu and
 * tb_measure), which these call: the same loop, the same validation.
 */
#ifndef TB_EXEC_H
#define TB_EXEC_H

#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_executor.h"
#include "tb_suite.h"
#include "workloads/llama/llama.h"

#include <stdbool.h>
#include <stddef.h>

/* Time spec's phase on an engine set up for it (max_batch >= batch; max_seq >= seq_in
 * + seq_out for decode; TB_LLAMA_TRAIN for train). tokens: [batch, seq_in] prompt or
 * training ids; targets: [batch, seq_in] (train only, else NULL). Fills *r (release it
 * even on failure). Returns 0 when it ran (see r->valid), or -1 with a message when the
 * engine refused or memory ran out. */
int tb_exec_time(struct tb_llama *m, const struct tb_run_spec *spec, const int *tokens,
                 const int *targets, struct tb_exec_result *r, char *err, size_t errlen);

/* Whether the CPU executor runs spec's precision (fp32 only); false with the reason in
 * why ("precision fp8: the CPU engine computes in fp32 only (fp8 runs on the GPU
 * executor)"): the caller skips such a run, it is not a failure. */
bool tb_exec_can_run(const struct tb_run_spec *spec, char *why, size_t whylen);

/* Set up an engine for spec on arch (weights and tokens drawn from spec->seed), time
 * it and free the engine: tb_measure on tb_executor_cpu. Returns like tb_exec_time; a
 * precision the CPU does not run (tb_exec_can_run) is an error with that reason. */
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

#endif
