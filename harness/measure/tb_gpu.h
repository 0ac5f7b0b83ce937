/*
 * harness/measure/tb_gpu.h: the GPU executor's host side. The CUDA code lives in a plugin
 * (libtrnbench-cuda.so, harness/tb_cuda_abi.h) that this module loads with dlopen at
 * run time, so trnbench itself never links CUDA and runs unchanged where there is no
 * GPU, no driver or no plugin. Every way of not having a GPU ends in a reason string,
 * never in a crash or a failed build:
 *
 *   "disabled (TRNBENCH_CUDA=0)"
 *   "CUDA executor not built (no nvcc or no NVIDIA GPU when it was built: ...)"
 *   "no NVIDIA driver (no /proc/driver/nvidia/version, no /dev/nvidiactl)"
 *   "cannot load '.../libtrnbench-cuda.so': <dlerror>"
 *   "no CUDA device: <cudaGetErrorString>"
 *   "the CUDA emulator (libtrnbench-cuemu.so) is for tests, not measurements"
 *
 * The plugin is looked for at $TRNBENCH_CUDA_PLUGIN, next to the binary
 * (<dir of /proc/self/exe>/../lib/libtrnbench-cuda.so, the build tree) and at the
 * installed <libdir>/libtrnbench-cuda.so. Without an NVIDIA driver the plugin is not
 * even loaded (cudart is not initialised), unless TB_GPU_FORCE asks for it (tests).
 * The CPU emulation of the plugin (build/lib/libtrnbench-cuemu.so, tests/cuemu/) is
 * only ever loaded by explicit path (TRNBENCH_CUDA_PLUGIN); its probe says emulated,
 * and tb_gpu_open refuses it unless TB_GPU_EMULATOR_OK (tests), so it never produces
 * benchmark rows.
 *
 * Measurement is the cuda executor's (measure/exec_cuda.c, tb_executor_cuda with a
 * struct tb_gpu as its self): the one loop of tb_executor.h (warm-up, then timed
 * repetitions, decode restarting at position T each repetition, validation of every
 * repetition outside the timed region), timed with CUDA events around each repetition,
 * and NVML's total-energy counter read before and after the timed repetitions for the
 * energy figures (tb_gpu_energy_derive). tb_gpu_run and tb_gpu_run_denoise are its entry
 * points for callers that hold a struct tb_gpu (trnbench perf --gpu, the tests).
 *
 * Ownership: a struct tb_gpu owns the dlopen handle; tb_gpu_close releases it. Not
 * thread-safe.
 */
#ifndef TB_GPU_H
#define TB_GPU_H

#include "tb_arch.h"
#include "tb_cuda_abi.h"
#include "tb_executor.h"
#include "workloads/llama/llama.h"
#include "tb_pricing.h"
#include "tb_suite.h"

#include <stdbool.h>
#include <stddef.h>

struct tb_gpu {
    void *dl;                      /* owned: dlopen handle, or NULL */
    const struct tb_cuda_api *api; /* inside dl; NULL when unavailable */
    struct tb_cuda_info info;      /* the device (when api) */
    char path[4096];               /* plugin file tried last */
    char why[1024];                /* why unavailable; "" when available */
};

enum tb_gpu_open_flags {
    TB_GPU_FORCE = 1 << 0,       /* load the plugin even when no NVIDIA driver is seen */
    TB_GPU_EMULATOR_OK = 1 << 1, /* accept the CPU emulation (tests only, never measurements) */
};

/* Find, load and probe the plugin on CUDA ordinal `device` (0: the first GPU this
 * process sees; CUDA_VISIBLE_DEVICES chooses and orders them). Returns 0 when it is
 * usable (g->api, g->info; info.device_count tells how many this process sees), or -1
 * with the reason in g->why (not an error: the GPU is optional), e.g. "no CUDA device 8
 * (8 visible)". The plugin serves one device per process (harness/tb_cuda_abi.h):
 * replicas on several GPUs need a process each. Release with tb_gpu_close either way. */
int tb_gpu_open(struct tb_gpu *g, int device, unsigned flags);
void tb_gpu_close(struct tb_gpu *g);

/* Whether the plugin was built with this binary (nvcc present at build time). */
bool tb_gpu_built(void);

/* One line for the results' host column: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs,
 * 79.1 GiB), driver 580.65.06, CUDA 13.0". */
void tb_gpu_describe(const struct tb_cuda_info *i, char *buf, size_t len);
/* The rest of the provenance for the counters column: "device 0 of 8 visible; clocks:
 * SM 1980/1980 MHz, memory 2619/2619 MHz (current/max); cc 9.0; L2 50 MiB; bus 5120
 * bit; nvml ok; plugin nvcc 13.0, sm_80 sm_90 sm_100 + PTX". */
void tb_gpu_provenance(const struct tb_cuda_info *i, char *buf, size_t len);

/* The catalogue's chip for this GPU (pricing/chips.csv, vendor NVIDIA): the first word
 * of the chip's name ("H100" of "H100 SXM5") must appear in the device name, and among
 * several the one whose HBM size is nearest the device memory wins (A100 40GB vs
 * 80GB). *inst gets the instance type with that chip and the fewest of them (the
 * target of the modeled rows). Returns the chip, or NULL with why ("no chip in
 * pricing/chips.csv matches 'Tesla T4'"). */
const struct tb_chip *tb_gpu_chip(const struct tb_pricing *p, const struct tb_cuda_info *i,
                                  const struct tb_instance **inst, char *why, size_t whylen);

/* What part of the machine the GPU executor's rows use, for results.csv's chips_used
 * and the report's share of the instance-hour. Today a run is one replica on one
 * device (tb_gpu_open's), so used is 1: on a p5.48xlarge its rows are charged 1/8 of
 * the instance, never the whole machine for one GPU's throughput. */
struct tb_gpu_share {
    int used;                       /* GPUs one run uses: 1 */
    int visible;                    /* devices this process sees (info.device_count) */
    const struct tb_instance *inst; /* borrowed: the target's catalogue row; NULL for
                                       "host", an uncatalogued type or no pricing */
    const struct tb_instance *twin; /* borrowed: the instance type of the modeled twins
                                       when it is inst (inst has this GPU's chip: one chip
                                       of the same machine, charged the same share); NULL:
                                       keep tb_gpu_chip's */
    char chips_used[16];            /* `used` as results.csv writes it */
    char text[320];                 /* "1 of 8 GPUs of p5.48xlarge (8 visible): ..." */
};

/* Fill s for g's device on target (tb_platform_target) with the catalogue p (NULL: not
 * loaded) and the GPU's chip (tb_gpu_chip's, or NULL). */
void tb_gpu_share(const struct tb_gpu *g, const struct tb_pricing *p, const char *target,
                  const struct tb_chip *chip, struct tb_gpu_share *s);

/* From NVML's counter read before (mj0) and after (mj1) the timed repetitions, the
 * wall seconds between the two readings and the units (tokens or images) processed. A counter that
 * did not advance or went backwards, or no time or no units, gives ok = false and says why in note.
 */
void tb_gpu_energy_derive(unsigned long long mj0, unsigned long long mj1, double seconds,
                          double units, struct tb_energy *e);

/* Whether the GPU executor runs spec's precision on g's device: fp8 (e4m3 products,
 * harness/tb_cuda_abi.h) needs phase prefill or decode and compute capability 8.9+;
 * false with the reason in why ("fp8 products need compute capability 8.9 or later
 * (this device: 8.0)"): the caller skips the run, it is not a failure. fp32, the
 * default, runs as bf16 mixed precision. */
bool tb_gpu_can_run(const struct tb_gpu *g, const struct tb_run_spec *spec, char *why,
                    size_t whylen);

/* Run spec (phase prefill, decode or train; precision fp32, run as bf16 mixed
 * precision, or fp8 for prefill and decode) on the GPU: weights drawn from spec->seed
 * exactly as the CPU engine draws them (a CPU engine is set up to draw them, then
 * freed), tokens as tb_exec_inputs. Fills *r (release it even on failure) and *e.
 * Returns 0 when it ran (see r->valid), -1 with a message when the device or the engine
 * failed, the phase is not one of these (denoise: tb_gpu_run_denoise) or
 * tb_gpu_can_run says no. */
int tb_gpu_run(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_arch *arch,
               struct tb_exec_result *r, struct tb_energy *e, char *err, size_t errlen);

/* Phase denoise on the GPU: tb_exec_run_denoise's semantics (the same weights, inputs,
 * schedule, classifier-free guidance at scale 5 and validation: finite latents after
 * every generation, outside the timed region) with the sampler's whole loop on the
 * device, each repetition (all the steps of one batch of images) timed with CUDA
 * events and the energy per image from NVML. The UNet and the DiTs (FLUX, SD3's
 * MMDiT). Fills *r (release it even on failure) and *e; returns like tb_gpu_run. */
int tb_gpu_run_denoise(struct tb_gpu *g, const struct tb_run_spec *spec, const struct tb_darch *a,
                       struct tb_exec_result *r, struct tb_energy *e, char *err, size_t errlen);

/* The weights of a CPU engine as the plugin takes them: offsets into m->params.
 * layer_off: caller's [L * TB_CUDA_W_PER_LAYER]; rope tables caller's [max_seq, HD/2],
 * filled here. */
void tb_gpu_weights_of(const struct tb_llama *m, size_t *layer_off, int max_seq, float *rope_cos,
                       float *rope_sin, struct tb_cuda_llama_weights *w);

/* A Llama engine of g's plugin (g opened) with the weights of the CPU engine m (copied;
 * m's own capacity does not matter) for max_batch sequences (cache slots) of max_seq
 * tokens; flags: tb_cuda_llama_flags. Returns 0 with *eng (free it with
 * g->api->llama_free), or -1 with a message ("cannot set up the GPU engine for 16
 * sequences of 4096 tokens: <the plugin's reason>"). */
int tb_gpu_llama_new(const struct tb_gpu *g, const struct tb_llama *m, int max_batch, int max_seq,
                     unsigned flags, void **eng, char *err, size_t errlen);

#endif
