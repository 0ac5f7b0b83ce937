/*
 * tests/unit/gpu.c: the GPU executor (harness/tb_gpu.h) and its CUDA plugin.
 *
 * Always run (no GPU needed): every way of having no GPU ends in a reason and no crash
 * (disabled, plugin missing, no driver, and, where the plugin was built, loading it
 * anyway and probing a machine without a device); tb_gpu_run without a device is an
 * error with that reason; the energy arithmetic on real numbers; the provenance
 * strings; the weight offsets handed to the plugin match the CPU engine's layout (the
 * Llama's and the UNet's); the GPU denoise run names the DiTs it does not cover; the
 * host's e4m3 rounding (the reference of the fp8 tests) on known values, against an
 * independent decoder of all 256 codes and at every midpoint between neighbours.
 *
 * The CPU emulation of the plugin (build/lib/libtrnbench-cuemu.so, tests/cuemu/):
 * refused by tb_gpu_open without TB_GPU_EMULATOR_OK, so it never measures. With 8
 * emulated devices (CUEMU_DEVICES): the device index and count, and a run on one GPU
 * of a p5.48xlarge (tests/data/platform_p5) end to end into results.csv and the
 * report, which charges it 1/8 of the instance's price.
 *
 * With a CUDA device, or else on the CPU emulation (each test's name then ends in
 * " (cuemu)"; skipped with the reason when neither exists): every kernel against a
 * double-precision reference on inputs rounded to bf16 first (so only the kernel's own
 * rounding counts), then the engine against the CPU engine on llama-tiny. Tolerances
 * (bf16 has 8 significant bits: one rounding is <= 2^-9 = 0.2% relative):
 *   bf16 outputs of one rounding (RMSNorm, RoPE, SwiGLU, cross-entropy
 *     gradient, the AdamW bf16 copy): max |err| <= 8e-3 x max|ref|, NMSE <= 2e-5
 *   fp32 outputs (rstd, RMSNorm backward, dw, AdamW, bf16 products with fp32
 *     accumulation and output): max |err| <= 1e-4 x max|ref|, NMSE <= 1e-9
 *   attention forward (P rounded to bf16, then the product): 2e-2, NMSE <= 1e-4;
 *     backward (dS rounded too): 3e-2, NMSE <= 3e-4; the same for the engine's causal
 *     attention and the fused kernel alone (TB_CUDA_OP_FLASH: cross-attention, causal
 *     with Sq != Sk, GQA, token-major, padded head dims), whose log-sum-exp (fp32) is
 *     held to 1e-4 x max|ref|, NMSE <= 1e-9
 *   cross-entropy loss: |err| <= 1e-4 nats
 *   engine vs CPU engine (bf16 weights and activations vs fp32): prefill and decode
 *     logits max |err| <= 5e-2 x max|ref|, NMSE <= 1e-3; training loss of the first
 *     step within 5e-3 nats, of the fourth within 2e-2, and falling
 *   the engine's cache slots (continuous batching): a staggered schedule of four
 *     sequences in non-contiguous slots (one joining late, one slot rewound by a new
 *     prompt) gives exactly the greedy tokens each sequence gets alone on the
 *     single-sequence path, with and without graphs; against the CPU engine's slots
 *     (teacher-forced) every device token within 0.1 x max|logit| of the CPU's best
 *     and most the same (test_engine_slots says why not all); the shared-position
 *     graph and the slot graph do not disturb each other; every refusal with its
 *     reason
 *   diffusion kernels: GroupNorm, LayerNorm, GEGLU (one bf16 rounding of the output):
 *     the bf16 bounds above; convolution (bf16 inputs, fp32 accumulation and output):
 *     the fp32 bounds; non-causal attention (P and y rounded to bf16): 2e-2, NMSE 1e-4
 *   UNet denoiser vs the double-precision reference on sdxl-tiny (8x8 latents, two
 *     images): every product rounds its inputs to bf16 (2^-9 relative each), about 30
 *     products deep with GroupNorm and LayerNorm renormalising in between, so errors
 *     add up like a random walk of ~30 roundings (~1% of the signal) rather than
 *     compounding: max |err| <= 5e-2 x max|ref|, NMSE <= 1e-3, the Llama engine's
 *     bounds; the device sampler vs tb_diffusion_sample (4 steps with CFG: the errors
 *     of 8 passes, each scaled by the step's dt, on latents of scale 14.6): the same
 *
 * fp8 (e4m3), on devices of compute capability 8.9+ (below: the refusal and its reason
 * are tested, the rest skipped with it):
 *   quantisation: amax and scale = 448 / amax exact; every e4m3 value equal to the host
 *     rounding of x * scale (fp32 product, nearest even, saturating); dequantised
 *     q / scale within 2^-4 |x| (half an e4m3 ulp) + 2^-10 / scale (half the
 *     subnormal step)
 *   products on host-quantised inputs, against double sums: a product of two e4m3
 *     values is exact in fp32, so only the fp32 accumulation (|err| <= K 2^-23 x
 *     sum |terms|, with margin) and the output rounding (2^-8 |ref| for bf16, half an
 *     ulp; 2^-22 for fp32) count, per element
 *   engine in fp8 vs the CPU engine (fp32): logits max |err| <= 0.15 x max|ref|, NMSE
 *     <= 1e-2. Looser than bf16's because e4m3 keeps 3 mantissa bits: each weight and
 *     each activation entering a product is off by up to 2^-4 (6%) of itself, so every
 *     product output carries a few percent of random error; a host simulation of
 *     llama-tiny with e4m3 weights alone gave NMSE 8e-4 and max 0.03 x max|ref|, and
 *     the activations add about as much again. A wrong scale, transposed operand or
 *     stale scale gives NMSE near 1 and fails it.
 */
#include "tb_arch.h"
#include "tb_darch.h"
#include "tb_csv.h"
#include "tb_gpu.h"
#include "tb_platform.h"
#include "tb_report.h"
#include "tb_results.h"
#include "tb_stats.h"
#include "tb_util.h"
#include "workloads/diffusion/diffusion.h"
#include "workloads/llama/llama.h"

#include "tests/tap/basic.h"
#include "tests/tap/float.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static float frand(void) /* uniform in [-1, 1) */
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Round to bf16 (nearest even), as the device's __float2bfloat16 does. */
static float bf16r(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
    memcpy(&x, &u, sizeof x);
    return x;
}

static float *randv(size_t n, float scale, bool round)
{
    float *p = malloc(n * sizeof *p);
    if (!p)
        bail("out of memory");
    for (size_t i = 0; i < n; i++)
        p[i] = round ? bf16r(frand() * scale) : frand() * scale;
    return p;
}

static void *zalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        bail("out of memory");
    return p;
}

/* Compare and print the figures on failure. */
static bool close_to(const float *got, const double *exp, size_t n, double rel, double nmse,
                     const char *what)
{
    struct tap_cmp c = tap_compare(got, exp, n);
    bool pass = c.max_ref > 0 && c.max_abs <= rel * c.max_ref && c.nmse <= nmse;
    if (!pass)
        diag("%s: max |err| %.3g (limit %.3g x max |ref| %.3g), NMSE %.3g (limit %.3g)", what,
             c.max_abs, rel, c.max_ref, c.nmse, nmse);
    return ok(pass, "%s: max |err| %.2g of max |ref| %.2g, NMSE %.2g", what, c.max_abs, c.max_ref,
              c.nmse);
}

static bool close_to_f(const float *got, const float *exp, size_t n, double rel, double nmse,
                       const char *what)
{
    double *e = zalloc(n, sizeof *e);
    bool r;
    for (size_t i = 0; i < n; i++)
        e[i] = exp[i];
    r = close_to(got, e, n, rel, nmse, what);
    free(e);
    return r;
}

/* ---- e4m3: the host reference ---- */

/* The e4m3 ("e4m3fn": bias 7, 3 mantissa bits, max 448, no infinities) value nearest x,
 * ties to even, saturating at +-448 (infinities too), NaN kept: the reference of the
 * device's fp8_from_f32 followed by fp8_to_f32. Below 2^-6 the values are the
 * subnormals m 2^-9, spaced as the first normal binade [2^-6, 2^-5) is. */
static float e4m3r(float x)
{
    double a = fabs((double)x), quantum;
    int e;
    if (isnan(x))
        return x;
    if (a >= 448.0)
        return copysignf(448.0f, x);
    if (a < 0x1p-6) {
        quantum = 0x1p-9;
    } else {
        frexp(a, &e); /* a in [2^(e-1), 2^e): 8 steps per binade */
        quantum = ldexp(1.0, e - 4);
    }
    /* a / quantum is exact (a power of two); nearbyint rounds half to even. Below
     * 448 nothing rounds past it (448 is a value of its binade). */
    return copysignf((float)(nearbyint(a / quantum) * quantum), x);
}

/* The value of an e4m3 code, straight from the format's definition. */
static double e4m3_decode(unsigned code)
{
    unsigned s = code >> 7 & 1, e = code >> 3 & 15, m = code & 7;
    double v;
    if (e == 15 && m == 7)
        return NAN;
    v = e ? ldexp(1.0 + m / 8.0, (int)e - 7) : ldexp(m / 8.0, -6);
    return s ? -v : v;
}

#define BF16_REL  8e-3
#define BF16_NMSE 2e-5
#define F32_REL   1e-4
#define F32_NMSE  1e-9

/* ---- always-run tests ---- */

static void test_no_gpu_paths(void)
{
    struct tb_gpu g;
    struct tb_exec_result r;
    struct tb_energy e;
    struct tb_run_spec spec;
    struct tb_arch a;
    char err[512] = "", *model = test_src_path("workloads/llama/llama-tiny.model");
    char *plugin = test_tmp_path("../../lib/libtrnbench-cuda.so");
    int rc;

    setenv("TRNBENCH_CUDA", "0", 1);
    IS_INT(-1, tb_gpu_open(&g, 0, 0), "TRNBENCH_CUDA=0 disables the GPU");
    IS_STRING("disabled (TRNBENCH_CUDA=0)", g.why, "and says so");
    OK(g.api == NULL, "no interface when disabled");
    tb_gpu_close(&g);
    unsetenv("TRNBENCH_CUDA");

    setenv("TRNBENCH_CUDA_PLUGIN", "/nonexistent/libtrnbench-cuda.so", 1);
    IS_INT(-1, tb_gpu_open(&g, 0, TB_GPU_FORCE), "a missing plugin is no GPU");
    OK(strstr(g.why, "'/nonexistent/libtrnbench-cuda.so'") && strstr(g.why, "not found"),
       "the reason names the file: %s", g.why);
    tb_gpu_close(&g);
    unsetenv("TRNBENCH_CUDA_PLUGIN");

    rc = tb_gpu_open(&g, 0, 0);
    OK(rc == 0 ? g.api != NULL && g.why[0] == '\0' : g.api == NULL && g.why[0] != '\0',
       "plain open: a device, or a reason (%s)", rc == 0 ? g.info.name : g.why);
    if (!tb_gpu_built())
        IS_STRING("CUDA executor not built (no nvcc or no NVIDIA GPU when it was built: make "
                  "CUDA_ARCHS=90 builds it)",
                  g.why, "without nvcc at build time the reason says so");
    else
        OK(tb_file_exists(plugin), "nvcc built the plugin next to the binaries (%s)", plugin);
    tb_gpu_close(&g);

    /* the plugin itself, loaded even without a driver: cudart must answer, not crash */
    if (tb_gpu_built()) {
        rc = tb_gpu_open(&g, 0, TB_GPU_FORCE);
        OK(rc == 0 || !strncmp(g.why, "no CUDA device: ", 16),
           "forced load of the plugin probes: %s", rc == 0 ? g.info.name : g.why);
        OK(rc != 0 || g.info.sm_count > 0, "a device has SMs");
        tb_gpu_close(&g);
    } else {
        skip_block(2, "the CUDA plugin was not built (no nvcc or no NVIDIA GPU when it was built)");
    }

    /* running without a device is an error carrying the reason, with nothing leaked */
    memset(&g, 0, sizeof g);
    snprintf(g.why, sizeof g.why, "no CUDA device: test");
    tb_run_spec_init(&spec);
    snprintf(spec.model, sizeof spec.model, "llama-tiny");
    spec.phase = TB_PHASE_PREFILL;
    spec.seq_in = 8;
    if (tb_arch_load(&a, model, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(-1, tb_gpu_run(&g, &spec, &a, &r, &e, err, sizeof err), "tb_gpu_run without a device");
    IS_STRING("no GPU: no CUDA device: test", err, "fails with the reason");
    OK(!e.ok, "and no energy figures");
    tb_exec_result_release(&r);
    free(model);
    free(plugin);
}

static void test_energy(void)
{
    struct tb_energy e;
    /* 350 J over 0.5 s of work on 1000 tokens: 700 W, 0.35 J per token */
    tb_gpu_energy_derive(1000000ULL, 1350000ULL, 0.5, 1000, &e);
    OK(e.ok, "energy from an advancing counter: %s", e.note);
    IS_DOUBLE(350.0, e.joules, 1e-9, "joules = (1350000 - 1000000) mJ");
    IS_DOUBLE(700.0, e.avg_power_w, 1e-9, "average power = 350 J / 0.5 s");
    IS_DOUBLE(0.35, e.j_per_unit, 1e-12, "joules per token = 350 J / 1000");
    OK(strstr(e.note, "approximate") != NULL, "a window under 1 s is flagged approximate");
    tb_gpu_energy_derive(5000ULL, 5000ULL, 2.0, 10, &e);
    OK(!e.ok && isnan(e.joules), "a counter that did not advance gives no figure");
    IS_STRING("energy counter did not advance (5000 mJ before, 5000 mJ after)", e.note,
              "and says so");
    tb_gpu_energy_derive(5000ULL, 9000ULL, 2.0, 0, &e);
    OK(!e.ok, "no units: no figure (%s)", e.note);
    tb_gpu_energy_derive(0ULL, 1500000ULL, 2.5, 4, &e);
    IS_DOUBLE(375.0, e.j_per_unit, 1e-12, "joules per image = 1500 J / 4 images");
    IS_DOUBLE(600.0, e.avg_power_w, 1e-9, "600 W over 2.5 s");
}

static void test_provenance(void)
{
    struct tb_cuda_info i;
    char buf[1024];
    memset(&i, 0, sizeof i);
    snprintf(i.name, sizeof i.name, "NVIDIA H100 80GB HBM3");
    i.cc_major = 9;
    i.sm_count = 132;
    i.mem_gib = 79.1;
    i.l2_mib = 50;
    i.mem_bus_bits = 5120;
    i.sm_clock_max_mhz = 1980;
    i.mem_clock_max_mhz = 2619;
    i.sm_clock_mhz = 1755;
    i.mem_clock_mhz = 2619;
    i.driver_version = 13000;
    i.runtime_version = 13000;
    snprintf(i.driver, sizeof i.driver, "580.65.06");
    snprintf(i.nvml, sizeof i.nvml, "ok");
    snprintf(i.build, sizeof i.build, "nvcc 13.0, sm 80 90 100 + PTX");
    i.device = 3;
    i.device_count = 8;
    tb_gpu_describe(&i, buf, sizeof buf);
    IS_STRING("NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB), driver 580.65.06, CUDA 13.0", buf,
              "host column describes the GPU");
    tb_gpu_provenance(&i, buf, sizeof buf);
    IS_STRING("device 3 of 8 visible; clocks: SM 1755/1980 MHz, memory 2619/2619 MHz "
              "(current/max); cc 9.0; L2 50 MiB; bus 5120 bit; driver API 13.0; nvml ok; plugin "
              "nvcc 13.0, sm 80 90 100 + PTX",
              buf, "provenance carries the device, clocks, driver and build");
    i.sm_clock_mhz = 0;
    i.driver[0] = '\0';
    tb_gpu_describe(&i, buf, sizeof buf);
    OK(strstr(buf, "driver unknown") != NULL, "an unknown driver says so: %s", buf);
    tb_gpu_provenance(&i, buf, sizeof buf);
    OK(strstr(buf, "SM ?/1980 MHz") != NULL, "an unknown clock says so");
}

static void test_weights(const struct tb_arch *a)
{
    struct tb_llama m;
    struct tb_cuda_llama_weights w;
    size_t C = (size_t)a->hidden, HD = (size_t)a->head_dim, QD = (size_t)a->heads * HD;
    size_t KD = (size_t)a->kv_heads * HD, F = (size_t)a->ffn;
    size_t *off = zalloc((size_t)a->layers * TB_CUDA_W_PER_LAYER, sizeof *off);
    float *cs = zalloc(16 * HD / 2, sizeof *cs), *sn = zalloc(16 * HD / 2, sizeof *sn);
    bool adjacent = true;
    char err[512];
    if (tb_llama_init(&m, a, 1, 4, 0, 5, err, sizeof err) != 0)
        bail("%s", err);
    tb_gpu_weights_of(&m, off, 16, cs, sn, &w);
    for (int l = 0; l < a->layers; l++) {
        const size_t *o = off + (size_t)l * TB_CUDA_W_PER_LAYER;
        adjacent = adjacent && o[TB_CUDA_W_WK] == o[TB_CUDA_W_WQ] + QD * C &&
                   o[TB_CUDA_W_WV] == o[TB_CUDA_W_WK] + KD * C &&
                   o[TB_CUDA_W_UP] == o[TB_CUDA_W_GATE] + F * C &&
                   m.params + o[TB_CUDA_W_DOWN] == m.layers[l].w_down;
    }
    OK(adjacent, "wq|wk|wv and w_gate|w_up adjacent, offsets point at the CPU tensors");
    OK(w.params == m.params && w.n_params == m.n_params, "the whole arena is handed over");
    OK(m.params + w.decay_end == m.layers[0].attn_norm && w.final_norm == m.n_params - C,
       "decay ends where the norms begin; the final norm is last");
    OK(w.lm_head != w.tok_emb && m.params + w.lm_head == m.lm_head, "untied LM head offset");
    IS_DOUBLE(1.0, cs[0], 0, "RoPE cos at position 0 is 1");
    IS_DOUBLE(cos(3.0), cs[3 * HD / 2], 1e-6, "RoPE cos of the fastest pair at position 3");
    tb_llama_release(&m);
    free(off);
    free(cs);
    free(sn);
}

static void load_darch(struct tb_darch *d, const char *name)
{
    char path[128], err[512], *full;
    snprintf(path, sizeof path, "workloads/diffusion/%s.model", name);
    full = test_src_path(path);
    if (tb_darch_load(d, full, err, sizeof err) != 0)
        bail("%s", err);
    free(full);
}

/* The UNet's layout as the plugin gets it: every tensor where the CPU engine has it. */
static void test_dlayout(void)
{
    struct tb_darch d, f;
    struct tb_diffusion m;
    struct tb_dlayout l;
    struct tb_gpu g;
    struct tb_run_spec spec;
    struct tb_exec_result r;
    struct tb_energy e;
    char err[512] = "";
    bool adjacent = true, inside = true;
    int pushed = 0, popped = 0;
    size_t end = 0;

    load_darch(&d, "sdxl-tiny");
    if (tb_diffusion_init(&m, &d, 1, 8, 8, 3, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(0, tb_diffusion_layout(&m, &l, err, sizeof err), "UNet layout exposed%s%s",
           err[0] ? ": " : "", err);
    OK(l.n_params == m.n_params && l.npieces > 0, "the whole arena, %d pieces", l.npieces);
    OK(l.pieces[0].kind == TB_DPIECE_CONV_IN && l.pieces[l.npieces - 1].kind == TB_DPIECE_CONV_OUT,
       "conv_in first, conv_out last");
    for (int i = 0; i < l.npieces; i++) {
        const struct tb_dpiece *p = &l.pieces[i];
        pushed += p->push;
        popped += p->cat;
        end = p->c1.b != TB_DLAYOUT_NONE && p->c1.b + (size_t)p->co > end ? p->c1.b + p->co : end;
        if (p->kind == TB_DPIECE_RESNET)
            inside = inside && (p->ci == p->co) == (p->sc.w == TB_DLAYOUT_NONE) &&
                     p->temb.w != TB_DLAYOUT_NONE;
        for (int k = 0; p->kind == TB_DPIECE_TRANSFORMER && k < p->depth; k++) {
            const struct tb_dblock *b = &l.blocks[p->block + k];
            size_t C = (size_t)p->co;
            adjacent = adjacent && b->ao.w == b->wqkv + 3 * C * C && b->wkv2 == b->wq2 + C * C &&
                       b->ff2.w == b->ff1.b + 8 * C;
        }
    }
    OK(adjacent, "q|k|v and cross k|v adjacent, GEGLU's two layers in order");
    OK(inside, "ResNets have a shortcut exactly when their channels change");
    IS_INT(pushed, popped, "every skip pushed is concatenated once");
    OK(end == m.n_params && m.params[l.pieces[0].c1.w] != 0.0f,
       "the arena ends with conv_out's bias; conv_in's weights are drawn");
    tb_dlayout_release(&l);
    tb_diffusion_release(&m);

    load_darch(&f, "flux-tiny");
    if (tb_diffusion_init(&m, &f, 1, 8, 8, 3, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(0, tb_diffusion_layout(&m, &l, err, sizeof err), "FLUX layout exposed%s%s",
           err[0] ? ": " : "", err);
    OK(l.n_params == m.n_params && l.ndbl == f.dit_depth && l.nsgl == f.single_depth &&
           l.npieces == 0 && l.pos == TB_DLAYOUT_NONE && l.g1.w != TB_DLAYOUT_NONE,
       "the whole arena, %d double and %d single blocks, no position grid, a guidance MLP", l.ndbl,
       l.nsgl);
    OK(l.patch.w == 0 && l.fout.b + (size_t)f.latent_channels * f.patch * f.patch == m.n_params &&
           l.sgl[0].lin1.w == l.sgl[0].mod.b + 3 * (size_t)f.hidden &&
           l.dbl[0].img.q_norm != TB_DLAYOUT_NONE,
       "patch embedding first, the final projection's bias last, layers in order");
    tb_dlayout_release(&l);
    tb_diffusion_release(&m);

    /* the GPU executor takes the DiTs now: without a device it fails for that reason */
    memset(&g, 0, sizeof g);
    snprintf(g.why, sizeof g.why, "no CUDA device: test");
    tb_run_spec_init(&spec);
    snprintf(spec.model, sizeof spec.model, "flux-tiny");
    spec.phase = TB_PHASE_DENOISE;
    IS_INT(-1, tb_gpu_run_denoise(&g, &spec, &f, &r, &e, err, sizeof err),
           "GPU denoise of a DiT without a device fails");
    IS_STRING("no GPU: no CUDA device: test", err, "with the reason, not a refusal of the DiT");
    tb_exec_result_release(&r);
    snprintf(spec.model, sizeof spec.model, "sdxl-tiny");
    IS_INT(-1, tb_gpu_run_denoise(&g, &spec, &d, &r, &e, err, sizeof err),
           "GPU denoise of the UNet without a device fails");
    IS_STRING("no GPU: no CUDA device: test", err, "with the reason");
    tb_exec_result_release(&r);
}

static void test_e4m3_host(void)
{
    static const struct {
        float x, want;
        const char *what;
    } known[] = {
        {448.0f, 448.0f, "448, the largest value, is kept"},
        {500.0f, 448.0f, "500 saturates to 448"},
        {464.0f, 448.0f, "464, halfway to 480 (not a value), goes to 448"},
        {1e30f, 448.0f, "1e30 saturates"},
        {INFINITY, 448.0f, "+inf saturates (no infinities in e4m3)"},
        {-500.0f, -448.0f, "-500 saturates to -448"},
        {240.0f, 240.0f, "240 is a value"},
        {250.0f, 256.0f, "250 rounds to 256 (step 16 in [128, 256))"},
        {1.0625f, 1.0f, "1.0625, halfway between 1 and 1.125, goes to the even 1"},
        {1.1875f, 1.25f, "1.1875, halfway between 1.125 and 1.25, goes to the even 1.25"},
        {0.015625f, 0.015625f, "2^-6, the smallest normal"},
        {0.0136f, 0.013671875f, "0.0136 rounds to 7 x 2^-9, the largest subnormal"},
        {0.0146484375f, 0.015625f, "7.5 x 2^-9 goes to the even 2^-6"},
        {0.001953125f, 0.001953125f, "2^-9, the smallest subnormal"},
        {0.0009765625f, 0.0f, "2^-10, halfway to the smallest subnormal, goes to 0"},
        {0.0029296875f, 0.00390625f, "3 x 2^-10 goes to the even 2 x 2^-9"},
        {-0.0015f, -0.001953125f, "-0.0015 rounds to -2^-9"},
    };
    bool fixed = true, rising = true, midpoints = true, sides = true;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        IS_DOUBLE(known[i].want, e4m3r(known[i].x), 0, "e4m3: %s", known[i].what);
    OK(isnan(e4m3r(NAN)), "e4m3: NaN stays NaN");
    IS_DOUBLE(448.0, e4m3_decode(0x7e), 0, "decoder: 0x7e is 448");
    OK(isnan(e4m3_decode(0x7f)) && isnan(e4m3_decode(0xff)), "decoder: 0x7f and 0xff are NaN");
    /* every value is its own rounding; the positive codes rise; a midpoint between
     * neighbours goes to the even code (the mantissa's low bit is the code's), and a
     * hair off it to the nearer side */
    for (unsigned c = 0; c < 256; c++) {
        double v = e4m3_decode(c);
        if (!isnan(v) && e4m3r((float)v) != (float)v)
            fixed = false;
    }
    for (unsigned c = 0; c + 1 < 0x7f; c++) {
        double lo = e4m3_decode(c), hi = e4m3_decode(c + 1);
        float mid = (float)((lo + hi) / 2); /* at most 5 significant bits: exact */
        rising = rising && hi > lo;
        midpoints = midpoints && e4m3r(mid) == (float)(c % 2 ? hi : lo);
        sides = sides && e4m3r(nextafterf(mid, 0.0f)) == (float)lo &&
                e4m3r(nextafterf(mid, 1e9f)) == (float)hi;
    }
    OK(fixed, "every e4m3 value rounds to itself");
    OK(rising, "the 127 non-negative codes rise");
    OK(midpoints, "midpoints go to the even neighbour");
    OK(sides, "just below a midpoint rounds down, just above rounds up");
}

/* ---- kernel tests (device) ---- */

static void run_op(const struct tb_cuda_api *api, struct tb_cuda_op_args *o, const char *what)
{
    char err[512];
    if (api->op(o, err, sizeof err) != 0)
        bail("%s: %s", what, err);
}

static void test_rmsnorm(const struct tb_cuda_api *api)
{
    enum { N = 7, C = 96 };
    struct tb_cuda_op_args o;
    float *x = randv(N * C, 2, false), *w = randv(C, 1, false), *dy = randv(N * C, 1, false);
    float *dx0 = randv(N * C, 1, false);
    float out[N * C], rstd[N], dx[N * C], dw[C];
    double eo[N * C], er[N], edx[N * C], edw[C];
    float eps = 1e-5f;

    for (int n = 0; n < N; n++) {
        double ss = 0, dot = 0;
        for (int c = 0; c < C; c++)
            ss += (double)x[n * C + c] * x[n * C + c];
        er[n] = 1.0 / sqrt(ss / C + eps);
        for (int c = 0; c < C; c++) {
            eo[n * C + c] = x[n * C + c] * er[n] * w[c];
            dot += (double)dy[n * C + c] * w[c] * x[n * C + c];
        }
        for (int c = 0; c < C; c++)
            edx[n * C + c] = dx0[n * C + c] + er[n] * dy[n * C + c] * w[c] -
                             er[n] * er[n] * er[n] * x[n * C + c] * dot / C;
    }
    for (int c = 0; c < C; c++) {
        edw[c] = 0;
        for (int n = 0; n < N; n++)
            edw[c] += (double)dy[n * C + c] * x[n * C + c] * er[n];
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_RMSNORM_FWD;
    o.N = N;
    o.C = C;
    o.eps = eps;
    o.in[0] = x;
    o.in[1] = w;
    o.out[0] = out;
    o.out[1] = rstd;
    run_op(api, &o, "rmsnorm_fwd");
    close_to(out, eo, N * C, BF16_REL, BF16_NMSE, "RMSNorm forward (bf16 out)");
    close_to(rstd, er, N, F32_REL, F32_NMSE, "RMSNorm 1/rms (fp32)");
    {
        float rs[N];
        for (int n = 0; n < N; n++)
            rs[n] = (float)er[n];
        memset(&o, 0, sizeof o);
        o.op = TB_CUDA_OP_RMSNORM_BWD;
        o.N = N;
        o.C = C;
        o.accumulate = true;
        o.in[0] = dy;
        o.in[1] = x;
        o.in[2] = rs;
        o.in[3] = w;
        o.in[4] = dx0;
        o.out[0] = dx;
        o.out[1] = dw;
        run_op(api, &o, "rmsnorm_bwd");
    }
    close_to(dx, edx, N * C, F32_REL, F32_NMSE, "RMSNorm backward dx, accumulated (fp32)");
    close_to(dw, edw, C, F32_REL, F32_NMSE, "RMSNorm backward dw (fp32)");
    free(x);
    free(w);
    free(dy);
    free(dx0);
}

static void test_rope(const struct tb_cuda_api *api)
{
    enum { B = 2, T = 5, NH = 4, NKV = 2, HD = 16, HALF = HD / 2 };
    enum { QD = NH * HD, KD = NKV * HD, QKV = QD + 2 * KD, N = B * T };
    struct tb_cuda_op_args o;
    float *qkv = randv(N * QKV, 1, true), cs[T * HALF], sn[T * HALF];
    float q[N * QD], k[N * KD], v[N * KD];
    double eq[N * QD], ek[N * KD], ev[N * KD];
    for (int t = 0; t < T; t++)
        for (int i = 0; i < HALF; i++) {
            double f = pow(10000.0, -2.0 * i / HD);
            cs[t * HALF + i] = (float)cos(t * f);
            sn[t * HALF + i] = (float)sin(t * f);
        }
    for (int n = 0; n < N; n++) {
        int b = n / T, t = n % T;
        const float *row = qkv + n * QKV;
        for (int h = 0; h < NH + NKV; h++)
            for (int i = 0; i < HALF; i++) {
                double x1 = row[h * HD + i], x2 = row[h * HD + i + HALF];
                double c = cs[t * HALF + i], s = sn[t * HALF + i];
                double *dst = h < NH ? eq + ((b * NH + h) * T + t) * HD
                                     : ek + ((b * NKV + h - NH) * T + t) * HD;
                dst[i] = x1 * c - x2 * s;
                dst[i + HALF] = x1 * s + x2 * c;
            }
        for (int i = 0; i < KD; i++)
            ev[((b * NKV + i / HD) * T + t) * HD + i % HD] = row[QD + KD + i];
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_ROPE;
    o.B = B;
    o.T = T;
    o.N = N;
    o.NH = NH;
    o.NKV = NKV;
    o.HD = HD;
    o.in[0] = qkv;
    o.in[1] = cs;
    o.in[2] = sn;
    o.out[0] = q;
    o.out[1] = k;
    o.out[2] = v;
    run_op(api, &o, "rope");
    close_to(q, eq, N * QD, BF16_REL, BF16_NMSE, "RoPE queries, head-major (bf16)");
    close_to(k, ek, N * KD, BF16_REL, BF16_NMSE, "RoPE keys, head-major (bf16)");
    close_to(v, ev, N * KD, 0, 0, "values copied exactly, head-major");
    free(qkv);
}

static void test_swiglu(const struct tb_cuda_api *api)
{
    enum { N = 6, F = 40 };
    struct tb_cuda_op_args o;
    float *gu = randv(N * 2 * F, 3, true), *dh = randv(N * F, 1, true);
    float h[N * F], dgu[N * 2 * F];
    double eh[N * F], edgu[N * 2 * F];
    for (int n = 0; n < N; n++)
        for (int f = 0; f < F; f++) {
            double g = gu[n * 2 * F + f], u = gu[n * 2 * F + F + f], d = dh[n * F + f];
            double s = 1.0 / (1.0 + exp(-g));
            eh[n * F + f] = g * s * u;
            edgu[n * 2 * F + f] = d * u * s * (1 + g * (1 - s));
            edgu[n * 2 * F + F + f] = d * g * s;
        }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_SWIGLU_FWD;
    o.N = N;
    o.F = F;
    o.in[0] = gu;
    o.out[0] = h;
    run_op(api, &o, "swiglu_fwd");
    close_to(h, eh, N * F, BF16_REL, BF16_NMSE, "SwiGLU forward (bf16)");
    o.op = TB_CUDA_OP_SWIGLU_BWD;
    o.in[0] = dh;
    o.in[1] = gu;
    o.out[0] = dgu;
    run_op(api, &o, "swiglu_bwd");
    close_to(dgu, edgu, N * 2 * F, BF16_REL, BF16_NMSE, "SwiGLU backward (bf16)");
    free(gu);
    free(dh);
}

/* Double-precision attention of head-major q [B,NH,T,HD], k, v [B,NKV,T,HD]: y
 * token-major; with dy, the gradients dq, dk, dv head-major. */
static void ref_attention(const float *q, const float *k, const float *v, const float *dy, int B,
                          int T, int NH, int NKV, int HD, double *y, double *dq, double *dk,
                          double *dv)
{
    int G = NH / NKV, QD = NH * HD;
    double scale = 1.0 / sqrt((double)HD), *p = zalloc((size_t)T * T, sizeof *p);
    double *dp = zalloc((size_t)T * T, sizeof *dp);
    if (dy) {
        memset(dq, 0, (size_t)B * NH * T * HD * sizeof *dq);
        memset(dk, 0, (size_t)B * NKV * T * HD * sizeof *dk);
        memset(dv, 0, (size_t)B * NKV * T * HD * sizeof *dv);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++) {
            const float *qh = q + (size_t)(b * NH + h) * T * HD;
            const float *kh = k + (size_t)(b * NKV + h / G) * T * HD;
            const float *vh = v + (size_t)(b * NKV + h / G) * T * HD;
            for (int t = 0; t < T; t++) {
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= t; j++) {
                    double d = 0;
                    for (int i = 0; i < HD; i++)
                        d += (double)qh[t * HD + i] * kh[j * HD + i];
                    p[t * T + j] = d * scale;
                    mx = fmax(mx, d * scale);
                }
                for (int j = 0; j <= t; j++)
                    sum += (p[t * T + j] = exp(p[t * T + j] - mx));
                for (int j = 0; j <= t; j++)
                    p[t * T + j] /= sum;
                for (int i = 0; i < HD; i++) {
                    double o = 0;
                    for (int j = 0; j <= t; j++)
                        o += p[t * T + j] * vh[j * HD + i];
                    y[((size_t)b * T + t) * QD + h * HD + i] = o;
                }
            }
            if (!dy)
                continue;
            for (int t = 0; t < T; t++) {
                const float *dyr = dy + ((size_t)b * T + t) * QD + h * HD;
                double dot = 0;
                for (int j = 0; j <= t; j++) {
                    double d = 0;
                    for (int i = 0; i < HD; i++)
                        d += (double)dyr[i] * vh[j * HD + i];
                    dp[t * T + j] = d;
                    dot += p[t * T + j] * d;
                    for (int i = 0; i < HD; i++)
                        dv[((size_t)(b * NKV + h / G) * T + j) * HD + i] += p[t * T + j] * dyr[i];
                }
                for (int j = 0; j <= t; j++) {
                    double ds = scale * p[t * T + j] * (dp[t * T + j] - dot);
                    for (int i = 0; i < HD; i++) {
                        dq[((size_t)(b * NH + h) * T + t) * HD + i] += ds * kh[j * HD + i];
                        dk[((size_t)(b * NKV + h / G) * T + j) * HD + i] += ds * qh[t * HD + i];
                    }
                }
            }
        }
    free(p);
    free(dp);
}

static void test_attention(const struct tb_cuda_api *api)
{
    enum { B = 2, T = 19, NH = 4, NKV = 2, HD = 16, N = B * T, QD = NH * HD, KD = NKV * HD };
    struct tb_cuda_op_args o;
    float *q = randv(N * QD, 1, true), *k = randv(N * KD, 1, true), *v = randv(N * KD, 1, true);
    float *dy = randv(N * QD, 1, true), y[N * QD], dq[N * QD], dk[N * KD], dv[N * KD];
    double ey[N * QD], edq[N * QD], edk[N * KD], edv[N * KD];
    ref_attention(q, k, v, dy, B, T, NH, NKV, HD, ey, edq, edk, edv);
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_ATTENTION_FWD;
    o.B = B;
    o.T = T;
    o.NH = NH;
    o.NKV = NKV;
    o.HD = HD;
    o.in[0] = q;
    o.in[1] = k;
    o.in[2] = v;
    o.out[0] = y;
    run_op(api, &o, "attention_fwd");
    close_to(y, ey, N * QD, 2e-2, 1e-4, "causal GQA attention forward (the engine's, fused)");
    o.op = TB_CUDA_OP_ATTENTION_BWD;
    o.in[3] = dy;
    o.out[0] = dq;
    o.out[1] = dk;
    o.out[2] = dv;
    run_op(api, &o, "attention_bwd");
    close_to(dq, edq, N * QD, 3e-2, 3e-4, "attention backward dQ");
    close_to(dk, edk, N * KD, 3e-2, 3e-4, "attention backward dK (summed over the G heads)");
    close_to(dv, edv, N * KD, 3e-2, 3e-4, "attention backward dV (summed over the G heads)");
    free(q);
    free(k);
    free(v);
    free(dy);
}

/* One shape of the fused attention test: q [B,H,Sq,D], k, v [B,HKV,Sk,D], head-major or
 * token-major ([B,Sq,H,D], [B,Sk,HKV,D]). */
struct flash_case {
    int B, H, HKV, Sq, Sk, D;
    bool causal, token_major;
    float scale; /* 0: 1/sqrt(D) */
    const char *what;
};

/* Offset of row s of head h of batch b (rows of D elements) in a tensor of heads heads
 * and S rows. */
static size_t flash_at(const struct flash_case *c, int heads, int S, int b, int h, int s)
{
    return c->token_major ? (((size_t)b * S + s) * heads + h) * c->D
                          : (((size_t)b * heads + h) * S + s) * c->D;
}

/* Double-precision attention for a flash_case: o and lse (-inf for a query that sees no
 * key, whose o is 0); with dout, dq, dk, dv (zeroed here) in the inputs' layouts. */
static void ref_flash(const struct flash_case *c, double scale, const float *q, const float *k,
                      const float *v, const float *dout, double *o, double *lse, double *dq,
                      double *dk, double *dv)
{
    int G = c->H / c->HKV, D = c->D;
    double *p = zalloc((size_t)c->Sk, sizeof *p);
    if (dout) {
        memset(dq, 0, (size_t)c->B * c->H * c->Sq * D * sizeof *dq);
        memset(dk, 0, (size_t)c->B * c->HKV * c->Sk * D * sizeof *dk);
        memset(dv, 0, (size_t)c->B * c->HKV * c->Sk * D * sizeof *dv);
    }
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++)
            for (int i = 0; i < c->Sq; i++) {
                size_t qo = flash_at(c, c->H, c->Sq, b, h, i);
                int nk = c->causal ? i + c->Sk - c->Sq + 1 : c->Sk;
                double mx = -INFINITY, sum = 0, dot = 0;
                nk = nk < 0 ? 0 : nk > c->Sk ? c->Sk : nk;
                for (int j = 0; j < nk; j++) {
                    size_t ko = flash_at(c, c->HKV, c->Sk, b, h / G, j);
                    double d = 0;
                    for (int e = 0; e < D; e++)
                        d += (double)q[qo + e] * k[ko + e];
                    p[j] = d * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j < nk; j++)
                    sum += (p[j] = exp(p[j] - mx));
                lse[((size_t)b * c->H + h) * c->Sq + i] = nk ? mx + log(sum) : -INFINITY;
                for (int e = 0; e < D; e++)
                    o[qo + e] = 0;
                for (int j = 0; j < nk; j++) {
                    size_t vo = flash_at(c, c->HKV, c->Sk, b, h / G, j);
                    p[j] /= sum;
                    for (int e = 0; e < D; e++)
                        o[qo + e] += p[j] * v[vo + e];
                }
                if (!dout)
                    continue;
                for (int e = 0; e < D; e++)
                    dot += (double)dout[qo + e] * o[qo + e];
                for (int j = 0; j < nk; j++) {
                    size_t ko = flash_at(c, c->HKV, c->Sk, b, h / G, j);
                    double dp = 0, ds;
                    for (int e = 0; e < D; e++) {
                        dp += (double)dout[qo + e] * v[ko + e];
                        dv[ko + e] += p[j] * dout[qo + e];
                    }
                    ds = scale * p[j] * (dp - dot);
                    for (int e = 0; e < D; e++) {
                        dq[qo + e] += ds * k[ko + e];
                        dk[ko + e] += ds * q[qo + e];
                    }
                }
            }
    free(p);
}

/* The fused attention alone against ref_flash: 5 checks per case. */
static void test_flash(const struct tb_cuda_api *api)
{
    static const struct flash_case cases[] = {
        {1, 4, 1, 37, 53, 16, false, false, 0, "cross-attention Sq 37, Sk 53, D 16, G 4"},
        {2, 2, 2, 70, 70, 64, true, true, 0.2f,
         "causal self-attention over two tiles, token-major, D 64, G 1, scale 0.2"},
        {1, 4, 1, 20, 45, 128, true, true, 0,
         "causal after a cached prefix (Sk 45 > Sq 20), token-major, D 128, G 4"},
        {1, 2, 1, 30, 18, 20, true, false, 0,
         "causal Sq 30 > Sk 18 (12 queries see no key), D 20 (padded, scalar loads), G 2"},
    };
    for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
        const struct flash_case *c = &cases[t];
        size_t nq = (size_t)c->B * c->H * c->Sq * c->D, nk = (size_t)c->B * c->HKV * c->Sk * c->D;
        size_t rows = (size_t)c->B * c->H * c->Sq;
        double scale = c->scale != 0 ? c->scale : 1.0 / sqrt((double)c->D);
        float *q = randv(nq, 1.5f, true), *k = randv(nk, 1.5f, true), *v = randv(nk, 1, true);
        float *dout = randv(nq, 1, true), *o = zalloc(nq, sizeof *o),
              *lse = zalloc(rows, sizeof *lse);
        float *dq = zalloc(nq, sizeof *dq), *dkv = zalloc(2 * nk, sizeof *dkv);
        double *eo = zalloc(nq, sizeof *eo), *elx = zalloc(rows, sizeof *elx);
        double *edq = zalloc(nq, sizeof *edq), *edk = zalloc(nk, sizeof *edk);
        double *edv = zalloc(nk, sizeof *edv);
        struct tb_cuda_op_args op;
        char what[256];

        ref_flash(c, scale, q, k, v, dout, eo, elx, edq, edk, edv);
        memset(&op, 0, sizeof op);
        op.op = TB_CUDA_OP_FLASH;
        op.B = c->B;
        op.NH = c->H;
        op.NKV = c->HKV;
        op.T = c->Sq;
        op.Sk = c->Sk;
        op.HD = c->D;
        op.causal = c->causal;
        op.token_major = c->token_major;
        op.softmax_scale = c->scale;
        op.in[0] = q;
        op.in[1] = k;
        op.in[2] = v;
        op.in[3] = dout;
        op.out[0] = o;
        op.out[1] = lse;
        op.out[2] = dq;
        op.out[3] = dkv;
        run_op(api, &op, "flash");
        /* rows that see no key: -inf in both, compared as 0 */
        for (size_t i = 0; i < rows; i++)
            if (isinf(elx[i]) && elx[i] < 0 && isinf(lse[i]) && lse[i] < 0)
                elx[i] = lse[i] = 0;
        snprintf(what, sizeof what, "flash: %s: output", c->what);
        close_to(o, eo, nq, 2e-2, 1e-4, what);
        snprintf(what, sizeof what, "flash: %s: log-sum-exp (fp32)", c->what);
        close_to(lse, elx, rows, F32_REL, F32_NMSE, what);
        snprintf(what, sizeof what, "flash: %s: dQ", c->what);
        close_to(dq, edq, nq, 3e-2, 3e-4, what);
        snprintf(what, sizeof what, "flash: %s: dK", c->what);
        close_to(dkv, edk, nk, 3e-2, 3e-4, what);
        snprintf(what, sizeof what, "flash: %s: dV", c->what);
        close_to(dkv + nk, edv, nk, 3e-2, 3e-4, what);
        free(q);
        free(k);
        free(v);
        free(dout);
        free(o);
        free(lse);
        free(dq);
        free(dkv);
        free(eo);
        free(elx);
        free(edq);
        free(edk);
        free(edv);
    }
}

static void test_xent(const struct tb_cuda_api *api)
{
    enum { N = 5, V = 1000 };
    struct tb_cuda_op_args o;
    float *logits = randv(N * V, 3, true), *d = zalloc(N * V, sizeof *d);
    double *e = zalloc(N * V, sizeof *e), loss = 0;
    int tgt[N] = {0, 999, 17, 500, 3};
    for (int n = 0; n < N; n++) {
        double mx = -INFINITY, sum = 0, lse;
        for (int j = 0; j < V; j++)
            mx = fmax(mx, logits[n * V + j]);
        for (int j = 0; j < V; j++)
            sum += exp(logits[n * V + j] - mx);
        lse = mx + log(sum);
        loss += (lse - logits[n * V + tgt[n]]) / N;
        for (int j = 0; j < V; j++)
            e[n * V + j] = (exp(logits[n * V + j] - lse) - (j == tgt[n])) / N;
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_XENT;
    o.N = N;
    o.V = V;
    o.in[0] = logits;
    o.ids = tgt;
    o.out[0] = d;
    run_op(api, &o, "xent");
    IS_DOUBLE(loss, o.loss, 1e-4, "cross-entropy mean loss (fp32 from bf16 logits)");
    close_to(d, e, N * V, BF16_REL, BF16_NMSE, "cross-entropy gradient (bf16, in place)");
    free(logits);
    free(d);
    free(e);
}

static void test_adamw(const struct tb_cuda_api *api)
{
    enum { n = 300, n_decay = 200 };
    struct tb_cuda_op_args o;
    float *p = randv(n, 0.05f, false), *g = randv(n, 0.01f, false);
    float *m = randv(n, 0.001f, false), *v = randv(n, 0.001f, false);
    float op[n], om[n], ov[n], ob[n];
    double ep[n], em[n], ev[n];
    struct tb_cuda_adamw opt = {3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
    long t = 3;
    double bc1 = 1 - pow(0.9, t), bc2 = 1 - pow(0.95, t);
    for (int i = 0; i < n; i++)
        v[i] = fabsf(v[i]);
    for (int i = 0; i < n; i++) {
        double wd = i < n_decay ? opt.weight_decay : 0.0;
        em[i] = 0.9 * m[i] + 0.1 * g[i];
        ev[i] = 0.95 * v[i] + 0.05 * (double)g[i] * g[i];
        ep[i] = (1 - opt.lr * wd) * p[i] - opt.lr * (em[i] / bc1) / (sqrt(ev[i] / bc2) + opt.eps);
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_ADAMW;
    o.n = n;
    o.n_decay = n_decay;
    o.opt = opt;
    o.step = t;
    o.in[0] = p;
    o.in[1] = g;
    o.in[2] = m;
    o.in[3] = v;
    o.out[0] = op;
    o.out[1] = om;
    o.out[2] = ov;
    o.out[3] = ob;
    run_op(api, &o, "adamw");
    close_to(op, ep, n, 1e-5, 1e-10, "AdamW parameters (fp32 master, decay on [0, 200))");
    close_to(om, em, n, 1e-5, 1e-10, "AdamW first moments");
    close_to(ov, ev, n, 1e-5, 1e-10, "AdamW second moments");
    close_to(ob, ep, n, BF16_REL, BF16_NMSE, "AdamW refreshes the bf16 copy");
    free(p);
    free(g);
    free(m);
    free(v);
}

static void test_products(const struct tb_cuda_api *api)
{
    enum { M = 64, N = 96, K = 256 };
    struct tb_cuda_op_args o;
    float *a = randv(M * K, 1, true), *b = randv(N * K, 1, true), c[M * N];
    double e[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++)
                s += (double)a[i * K + k] * b[j * K + k];
            e[i * N + j] = s;
        }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_GEMM_BF16;
    o.M = M;
    o.N = N;
    o.K = K;
    o.in[0] = a;
    o.in[1] = b;
    o.out[0] = c;
    run_op(api, &o, "gemm");
    close_to(c, e, M * N, F32_REL, F32_NMSE, "bf16 product through cuBLASLt (fp32 accumulate)");
    o.op = TB_CUDA_OP_GEMV_BF16;
    o.M = 3;
    run_op(api, &o, "gemv");
    close_to(c, e, 3 * N, F32_REL, F32_NMSE, "decode product, 3 rows (fp32 accumulate)");
    o.K = K - 3; /* odd rows: the element-by-element path */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K - 3; k++)
                s += (double)a[i * (K - 3) + k] * b[j * (K - 3) + k];
            e[i * N + j] = s;
        }
    run_op(api, &o, "gemv");
    close_to(c, e, 3 * N, F32_REL, F32_NMSE, "decode product, K not a multiple of 8");
    free(a);
    free(b);
}

/* ---- diffusion kernels (device) ---- */

static double ref_gelu(double g)
{
    return 0.5 * g * (1.0 + erf(g / sqrt(2.0)));
}

static void test_groupnorm(const struct tb_cuda_api *api)
{
    enum { B = 2, H = 3, W = 5, C = 12, G = 4, HW = H * W, CPG = C / G, N = B * HW * C };
    float *x = randv(N, 3, false), *w = randv(C, 1, false), *bb = randv(C, 1, false), out[N];
    double ref[2][N];
    struct tb_cuda_op_args o;
    for (int b = 0; b < B; b++)
        for (int g = 0; g < G; g++) {
            double mean = 0, var = 0;
            for (int p = 0; p < HW; p++)
                for (int j = 0; j < CPG; j++)
                    mean += x[(b * HW + p) * C + g * CPG + j];
            mean /= HW * CPG;
            for (int p = 0; p < HW; p++)
                for (int j = 0; j < CPG; j++) {
                    double dd = x[(b * HW + p) * C + g * CPG + j] - mean;
                    var += dd * dd;
                }
            var /= HW * CPG;
            for (int p = 0; p < HW; p++)
                for (int j = 0; j < CPG; j++) {
                    int c = g * CPG + j, i = (b * HW + p) * C + c;
                    double y = (x[i] - mean) / sqrt(var + 1e-5) * w[c] + bb[c];
                    ref[0][i] = y;
                    ref[1][i] = y / (1.0 + exp(-y));
                }
        }
    for (int act = 0; act < 2; act++) {
        memset(&o, 0, sizeof o);
        o.op = TB_CUDA_OP_GROUPNORM;
        o.B = B;
        o.H = H;
        o.W = W;
        o.C = C;
        o.G = G;
        o.eps = 1e-5f;
        o.silu = act;
        o.in[0] = x;
        o.in[1] = w;
        o.in[2] = bb;
        o.out[0] = out;
        run_op(api, &o, "groupnorm");
        close_to(out, ref[act], N, BF16_REL, BF16_NMSE,
                 act ? "GroupNorm + SiLU, channel-last (bf16 out)" : "GroupNorm (bf16 out)");
    }
    free(x);
    free(w);
    free(bb);
}

/* Direct convolution of channel-last x [B, H, W, ci] (upsampled 2x nearest first when
 * up) with w [co, ci, k, k], padding k/2, stride s: out [B, Ho, Wo, co]. */
static void ref_conv(double *out, const float *x, const float *w, const float *bias, int B, int H,
                     int W, int ci, int co, int k, int s, bool up, int *Ho, int *Wo)
{
    int Hl = up ? 2 * H : H, Wl = up ? 2 * W : W, pad = k / 2;
    *Ho = (Hl + 2 * pad - k) / s + 1;
    *Wo = (Wl + 2 * pad - k) / s + 1;
    for (int b = 0; b < B; b++)
        for (int oy = 0; oy < *Ho; oy++)
            for (int ox = 0; ox < *Wo; ox++)
                for (int o = 0; o < co; o++) {
                    double acc = bias[o];
                    for (int c = 0; c < ci; c++)
                        for (int ky = 0; ky < k; ky++)
                            for (int kx = 0; kx < k; kx++) {
                                int iy = oy * s + ky - pad, ix = ox * s + kx - pad;
                                if (iy < 0 || iy >= Hl || ix < 0 || ix >= Wl)
                                    continue;
                                if (up) {
                                    iy /= 2;
                                    ix /= 2;
                                }
                                acc += (double)w[((o * ci + c) * k + ky) * k + kx] *
                                       x[((b * H + iy) * W + ix) * ci + c];
                            }
                    out[((b * *Ho + oy) * *Wo + ox) * co + o] = acc;
                }
}

static void test_conv2d(const struct tb_cuda_api *api)
{
    enum { B = 2, H = 5, W = 6, CI = 7, CO = 5, MAXO = B * 10 * 12 * CO };
    static const struct {
        int k, s;
        bool up;
        const char *what;
    } cases[] = {
        {3, 1, false, "3x3 conv, im2col + product (fp32 out)"},
        {3, 2, false, "3x3 conv, stride 2"},
        {3, 1, true, "3x3 conv of the 2x nearest upsampling"},
        {1, 1, false, "1x1 conv"},
    };
    float *x = randv(B * H * W * CI, 1, true), *w = randv(CO * CI * 9, 1, true);
    float *bias = randv(CO, 1, false), out[MAXO];
    double ref[MAXO];
    struct tb_cuda_op_args o;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int Ho, Wo;
        ref_conv(ref, x, w, bias, B, H, W, CI, CO, cases[i].k, cases[i].s, cases[i].up, &Ho, &Wo);
        memset(&o, 0, sizeof o);
        o.op = TB_CUDA_OP_CONV2D;
        o.B = B;
        o.H = H;
        o.W = W;
        o.ci = CI;
        o.co = CO;
        o.ksize = cases[i].k;
        o.stride = cases[i].s;
        o.upsample = cases[i].up;
        o.in[0] = x;
        o.in[1] = w;
        o.in[2] = bias;
        o.out[0] = out;
        run_op(api, &o, "conv2d");
        close_to(out, ref, (size_t)B * Ho * Wo * CO, F32_REL, F32_NMSE, cases[i].what);
    }
    free(x);
    free(w);
    free(bias);
}

static void test_layernorm(const struct tb_cuda_api *api)
{
    enum { N = 5, C = 40 };
    float *x = randv(N * C, 4, false), *w = randv(C, 1, false), *bb = randv(C, 1, false);
    float out[N * C];
    double ref[N * C];
    struct tb_cuda_op_args o;
    for (int n = 0; n < N; n++) {
        double mean = 0, var = 0;
        for (int c = 0; c < C; c++)
            mean += x[n * C + c];
        mean /= C;
        for (int c = 0; c < C; c++)
            var += (x[n * C + c] - mean) * (x[n * C + c] - mean);
        var /= C;
        for (int c = 0; c < C; c++)
            ref[n * C + c] = (x[n * C + c] - mean) / sqrt(var + 1e-5) * w[c] + bb[c];
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_LAYERNORM;
    o.N = N;
    o.C = C;
    o.eps = 1e-5f;
    o.in[0] = x;
    o.in[1] = w;
    o.in[2] = bb;
    o.out[0] = out;
    run_op(api, &o, "layernorm");
    close_to(out, ref, N * C, BF16_REL, BF16_NMSE, "LayerNorm (bf16 out)");
    free(x);
    free(w);
    free(bb);
}

static void test_geglu(const struct tb_cuda_api *api)
{
    enum { N = 4, F = 24 };
    float *ff = randv(N * 2 * F, 3, false), *bias = randv(2 * F, 1, false), out[N * F];
    double ref[N * F];
    struct tb_cuda_op_args o;
    for (int n = 0; n < N; n++)
        for (int j = 0; j < F; j++)
            ref[n * F + j] = ((double)ff[n * 2 * F + j] + bias[j]) *
                             ref_gelu((double)ff[n * 2 * F + F + j] + bias[F + j]);
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_GEGLU;
    o.N = N;
    o.F = F;
    o.in[0] = ff;
    o.in[1] = bias;
    o.out[0] = out;
    run_op(api, &o, "geglu");
    close_to(out, ref, N * F, BF16_REL, BF16_NMSE, "GEGLU with bias, erf GELU (bf16 out)");
    free(ff);
    free(bias);
}

/* The UNet's attention (the fused kernel, non-causal, token-major) against a
 * double-precision softmax: T queries over S keys of NH heads of HD. */
static void check_attention_nc(const struct tb_cuda_api *api, int B, int T, int S, int NH, int HD,
                               const char *what)
{
    const int D = NH * HD;
    float *q = randv((size_t)B * T * D, 2, true), *k = randv((size_t)B * S * D, 2, true);
    float *v = randv((size_t)B * S * D, 1, true), *y = zalloc((size_t)B * T * D, sizeof *y);
    double *ref = zalloc((size_t)B * T * D, sizeof *ref), *sc = zalloc((size_t)S, sizeof *sc);
    struct tb_cuda_op_args o;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < NH; h++)
            for (int i = 0; i < T; i++) {
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j < S; j++) {
                    double d = 0;
                    for (int e = 0; e < HD; e++)
                        d += (double)q[(b * T + i) * D + h * HD + e] *
                             k[(b * S + j) * D + h * HD + e];
                    sc[j] = d / sqrt((double)HD);
                    mx = sc[j] > mx ? sc[j] : mx;
                }
                for (int j = 0; j < S; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int e = 0; e < HD; e++) {
                    double acc = 0;
                    for (int j = 0; j < S; j++)
                        acc += sc[j] / sum * v[(b * S + j) * D + h * HD + e];
                    ref[(b * T + i) * D + h * HD + e] = acc;
                }
            }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_ATTENTION_NC;
    o.B = B;
    o.T = T;
    o.S = S;
    o.NH = NH;
    o.HD = HD;
    o.in[0] = q;
    o.in[1] = k;
    o.in[2] = v;
    o.out[0] = y;
    run_op(api, &o, "attention_nc");
    close_to(y, ref, (size_t)B * T * D, 2e-2, 1e-4, what);
    free(q);
    free(k);
    free(v);
    free(y);
    free(ref);
    free(sc);
}

static void test_attention_nc(const struct tb_cuda_api *api)
{
    check_attention_nc(api, 2, 6, 5, 2, 8,
                       "non-causal attention, cross-shaped (T 6 queries, S 5 keys, 2 heads)");
    /* SDXL's cross-attention: 77 text tokens (two key tiles, the second partial) for
     * more queries than one tile, head dim 64 */
    check_attention_nc(api, 1, 70, 77, 2, 64,
                       "non-causal attention, 70 queries over 77 text tokens, head dim 64");
}

/* adaLN-modulated LayerNorm (no affine weights, eps 1e-6) against double precision. */
static void test_dit_ln_mod(const struct tb_cuda_api *api)
{
    enum { B = 2, T = 5, C = 40 };
    float *x = randv(B * T * C, 4, false), *mod = randv(B * 2 * C, 1, false), out[B * T * C];
    double ref[B * T * C];
    struct tb_cuda_op_args o;
    for (int r = 0; r < B * T; r++) {
        const float *sh = mod + (r / T) * 2 * C, *sc = sh + C;
        double mean = 0, var = 0;
        for (int c = 0; c < C; c++)
            mean += x[r * C + c];
        mean /= C;
        for (int c = 0; c < C; c++)
            var += (x[r * C + c] - mean) * (x[r * C + c] - mean);
        var /= C;
        for (int c = 0; c < C; c++)
            ref[r * C + c] = (x[r * C + c] - mean) / sqrt(var + 1e-6) * (1.0 + sc[c]) + sh[c];
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_DIT_LN_MOD;
    o.B = B;
    o.T = T;
    o.C = C;
    o.eps = 1e-6f;
    o.in[0] = x;
    o.in[1] = mod;
    o.out[0] = out;
    run_op(api, &o, "dit_ln_mod");
    close_to(out, ref, B * T * C, BF16_REL, BF16_NMSE,
             "LayerNorm with adaLN shift and scale per image (bf16 out)");
    free(x);
    free(mod);
}

/* FLUX's q|k|v epilogue: bias, per-head RMSNorm of q and k, 2-D RoPE of the image
 * tokens (ids (0, row, col), axes 12, 34, 34 of head dim 80: pairs past a warp's 32
 * lanes), the single block's GELU columns; against double precision with the angles
 * from the model's definition. */
static void test_dit_qkv(const struct tb_cuda_api *api)
{
    enum { B = 2, S = 3, GH = 2, GW = 3, T = S + GH * GW, NH = 2, HD = 80, D = NH * HD };
    enum { F = 24, ZW = 3 * D + F, A1 = 34, A0 = HD - 2 * A1 };
    float *z = randv(B * T * ZW, 2, false), *bias = randv(ZW, 1, false);
    float *qn = randv(HD, 1, false), *kn = randv(HD, 1, false);
    float *qkv = zalloc(B * T * 3 * D, sizeof *qkv), *mlp = zalloc(B * T * F, sizeof *mlp);
    double *eq = zalloc(B * T * 3 * D, sizeof *eq), *em = zalloc(B * T * F, sizeof *em);
    struct tb_cuda_op_args o;
    for (int r = 0; r < B * T; r++) {
        int tk = r % T - S;
        for (int hh = 0; hh < 3 * NH; hh++) {
            double v[HD], ss = 0;
            for (int i = 0; i < HD; i++) {
                v[i] = (double)z[r * ZW + hh * HD + i] + bias[hh * HD + i];
                ss += v[i] * v[i];
            }
            if (hh < 2 * NH)
                for (int i = 0; i < HD; i++)
                    v[i] *= (hh < NH ? qn : kn)[i] / sqrt(ss / HD + 1e-6);
            for (int j = 0; hh < 2 * NH && tk >= 0 && j < HD / 2; j++) {
                /* pair j: axis 0 (id 0) below A0/2, then rows, then columns */
                double ang = j < A0 / 2 ? 0
                             : j < A0 / 2 + A1 / 2
                                 ? (tk / GW) * pow(1e4, -2.0 * (j - A0 / 2) / A1)
                                 : (tk % GW) * pow(1e4, -2.0 * (j - A0 / 2 - A1 / 2) / A1);
                double a = v[2 * j], b = v[2 * j + 1];
                v[2 * j] = a * cos(ang) - b * sin(ang);
                v[2 * j + 1] = a * sin(ang) + b * cos(ang);
            }
            for (int i = 0; i < HD; i++)
                eq[r * 3 * D + hh * HD + i] = v[i];
        }
        for (int j = 0; j < F; j++) {
            double u = (double)z[r * ZW + 3 * D + j] + bias[3 * D + j];
            em[r * F + j] =
                0.5 * u * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (u + 0.044715 * u * u * u)));
        }
    }
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_DIT_QKV;
    o.B = B;
    o.T = T;
    o.S = S;
    o.H = GH;
    o.W = GW;
    o.NH = NH;
    o.HD = HD;
    o.F = F;
    o.eps = 1e-6f;
    o.in[0] = z;
    o.in[1] = bias;
    o.in[2] = qn;
    o.in[3] = kn;
    o.out[0] = qkv;
    o.out[1] = mlp;
    run_op(api, &o, "dit_qkv");
    close_to(qkv, eq, B * T * 3 * D, BF16_REL, BF16_NMSE,
             "q|k|v: bias, q/k RMSNorm, 2-D RoPE of the image tokens (bf16)");
    close_to(mlp, em, B * T * F, BF16_REL, BF16_NMSE, "single block MLP columns, tanh GELU");
    free(z);
    free(bias);
    free(qn);
    free(kn);
    free(qkv);
    free(mlp);
    free(eq);
    free(em);
}

/* A DiT's drawn parameters (weights N(0, 0.02^2), zero biases, unit norm weights) give
 * adaLN gates near 1e-3: the blocks would hardly touch the output and a wrong block
 * would pass. Weights x8, biases uniform in +-0.1, norm weights 1 +- 0.2 make every
 * layer count. */
static void dit_liven(struct tb_diffusion *m)
{
    for (size_t i = 0; i < m->n_params; i++) {
        float *p = &m->params[i];
        *p = *p == 0.0f ? 0.1f * frand() : *p == 1.0f ? 1.0f + 0.2f * frand() : 8.0f * *p;
    }
}

/* A denoiser (sdxl-tiny, flux-tiny, sd3-tiny) on the device against the CPU engine's
 * double-precision reference on 8x8 latents, then the device sampler against
 * tb_diffusion_sample (the UNet and SD3 with CFG, FLUX with the guidance embedding at
 * the scale). The DiTs' parameters are livened (dit_liven); the UNet's drawn ones
 * already matter. The engine holds bf16 weights, the UNet's fp32 ones as well. */
static void test_denoiser(struct tb_gpu *g, const char *name)
{
    enum { B = 2, LAT = 8, STEPS = 3 };
    const struct tb_cuda_api *api = g->api;
    struct tb_darch d;
    struct tb_diffusion m;
    struct tb_dlayout l;
    struct tb_cuda_diffusion_weights w;
    size_t img, nctx, npool;
    float *x, *ctx, *pooled, *out, *lat_cpu, *lat_gpu, *ctx2, *pool2;
    float t[B] = {0.3f, 0.85f}, gd[B] = {3.5f, 1.0f}, ts[STEPS], ci[STEPS], dt[STEPS];
    double *ref;
    void *eng = NULL;
    bool finite = false;
    char err[512] = "";
    int cfg;

    load_darch(&d, name);
    cfg = d.cfg ? 2 : 1;
    img = (size_t)d.latent_channels * LAT * LAT;
    nctx = (size_t)d.text_tokens * d.context_dim;
    npool = (size_t)(d.pooled_dim > 0 ? d.pooled_dim : 1);
    x = randv(B * img, 1, false);
    ctx = randv(B * nctx, 1, false);
    pooled = randv(B * npool, 1, false);
    out = zalloc(B * img, sizeof *out);
    ref = zalloc(B * img, sizeof *ref);
    if (tb_diffusion_init(&m, &d, cfg * B, LAT, LAT, 23, err, sizeof err) != 0 ||
        tb_diffusion_layout(&m, &l, err, sizeof err) != 0)
        bail("%s: %s", name, err);
    if (d.kind != TB_DARCH_UNET)
        dit_liven(&m);
    w.params = m.params;
    w.n_params = m.n_params;
    w.layout = &l;
    if (api->diffusion_init(&eng, &d, &w, cfg * B, LAT, LAT, err, sizeof err) != 0)
        bail("%s: diffusion_init: %s", name, err);
    OK(api->diffusion_bytes(eng) > m.n_params * (d.kind == TB_DARCH_UNET ? 6 : 2),
       "%s: engine holds its weights", name);
    if (tb_diffusion_reference_forward(&m, x, t, ctx, pooled, d.guidance_embed ? gd : NULL, B, ref,
                                       err, sizeof err) != 0)
        bail("reference: %s", err);
    OK(api->diffusion_forward(eng, x, t, ctx, pooled, d.guidance_embed ? gd : NULL, B, out, err,
                              sizeof err) == 0,
       "%s forward on the device: %s", name, err);
    {
        char what[128];
        snprintf(what, sizeof what, "%s forward vs the double-precision reference", name);
        close_to(out, ref, B * img, 5e-2, 1e-3, what);
    }

    lat_cpu = zalloc(B * img, sizeof *lat_cpu);
    lat_gpu = zalloc(B * img, sizeof *lat_gpu);
    ctx2 = zalloc(cfg * B * nctx, sizeof *ctx2);
    pool2 = zalloc(cfg * B * npool, sizeof *pool2);
    if (tb_diffusion_sample(&m, B, STEPS, 4.0f, 99, lat_cpu, err, sizeof err) != 0)
        bail("sample: %s", err);
    tb_diffusion_sample_inputs(&d, B, LAT, LAT, 99, lat_gpu, ctx2, pool2);
    for (int s = 0; s < STEPS; s++)
        tb_diffusion_schedule(&d, s, STEPS, &ts[s], &ci[s], &dt[s]);
    OK(api->diffusion_sample(eng, lat_gpu, ctx2, pool2, B, STEPS, ts, ci, dt, 4.0f, err,
                             sizeof err) == 0 &&
           api->diffusion_latents(eng, lat_gpu, B * img, &finite, err, sizeof err) == 0 && finite,
       "%s: device sampler runs %d steps, latents finite: %s", name, STEPS, err);
    {
        char what[128];
        snprintf(what, sizeof what, "%s: device sampler vs tb_diffusion_sample", name);
        close_to_f(lat_gpu, lat_cpu, B * img, 5e-2, 1e-3, what);
    }
    api->diffusion_free(eng);
    tb_dlayout_release(&l);
    tb_diffusion_release(&m);
    free(x);
    free(ctx);
    free(pooled);
    free(out);
    free(ref);
    free(lat_cpu);
    free(lat_gpu);
    free(ctx2);
    free(pool2);
}

static void test_denoise_executor(struct tb_gpu *g, const char *name)
{
    struct tb_darch d;
    struct tb_run_spec s;
    struct tb_exec_result r;
    struct tb_energy e;
    char err[512] = "";
    load_darch(&d, name);
    tb_run_spec_init(&s);
    snprintf(s.model, sizeof s.model, "%s", name);
    s.phase = TB_PHASE_DENOISE;
    s.batch = 1;
    s.steps = 2;
    s.resolution = 64;
    s.reps = 2;
    s.warmup = 1;
    OK(tb_gpu_run_denoise(g, &s, &d, &r, &e, err, sizeof err) == 0 && r.valid && r.secs[1] > 0 &&
           r.tokens == 1 && r.steps == 2,
       "%s: executor denoise runs, validates and times (%s%s)", name, err, r.note);
    OK(e.ok || strstr(e.note, "unavailable") || strstr(e.note, "did not advance"),
       "energy per image measured or its absence explained: %s", e.note);
    tb_exec_result_release(&r);
}

/* ---- fp8 kernels (compute capability 8.9+) ---- */

/* One quantisation on the device against the host: see the header's tolerances. */
static void check_quant(const struct tb_cuda_api *api, const float *x, size_t n, bool in_bf16,
                        const char *what)
{
    struct tb_cuda_op_args o;
    float *q = zalloc(n, sizeof *q), amax = 0.0f, scale;
    size_t bad = 0, far = 0;
    for (size_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(in_bf16 ? bf16r(x[i]) : x[i]));
    scale = amax > 0 ? 448.0f / amax : 1.0f;
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_QUANT_FP8;
    o.n = n;
    o.in_bf16 = in_bf16;
    o.in[0] = x;
    o.out[0] = q;
    run_op(api, &o, "quant_fp8");
    for (size_t i = 0; i < n; i++) {
        float xi = in_bf16 ? bf16r(x[i]) : x[i];
        float want = e4m3r(xi * scale); /* a float product, as the device's */
        if (q[i] != want) {
            if (bad++ < 3)
                diag("%s: x[%zu] = %.9g: e4m3 %.9g, host %.9g", what, i, xi, q[i], want);
        }
        if (fabs((double)q[i] * o.scale_inv - xi) > 0x1p-4 * fabs(xi) + 0x1p-10 / scale)
            far++;
    }
    IS_DOUBLE(amax, o.amax, 0, "%s: amax = max |x| (device reduction)", what);
    OK(o.scale == scale && o.scale_inv == 1.0f / scale,
       "%s: scale 448 / amax = %.9g, its inverse %.9g", what, o.scale, o.scale_inv);
    OK(bad == 0, "%s: all %zu e4m3 values equal the host rounding of x * scale (%zu differ)", what,
       n, bad);
    OK(far == 0, "%s: dequantised within half an e4m3 step (%zu beyond)", what, far);
    free(q);
}

static void test_fp8_quant(const struct tb_cuda_api *api)
{
    enum { N1 = 1000, N2 = 200000, N3 = 100 };
    float *x = randv(N1, 3, false), *y = zalloc(N2, sizeof *y), *z = zalloc(N3, sizeof *z);
    /* magnitudes over 2^-14 .. 2^4: the scaled values reach the subnormals */
    for (size_t i = 0; i < N2; i++)
        y[i] = frand() * ldexpf(1.0f, (int)(i * 7919 % 19) - 14);
    y[N2 - 1] = -20.0f; /* the amax, last, in the last block */
    check_quant(api, x, N1, false, "fp8 quantisation of fp32");
    check_quant(api, y, N2, true, "fp8 quantisation of bf16 over many blocks");
    check_quant(api, z, N3, false, "fp8 quantisation of zeros (scale 1)");
    free(x);
    free(y);
    free(z);
}

/* Host-quantised e4m3 values of n random numbers (scale 448 / amax: the largest is
 * 448); *deq gets the dequantisation factor. */
static float *randq(size_t n, float *deq)
{
    float *p = randv(n, 1, false), amax = 0, s;
    for (size_t i = 0; i < n; i++)
        amax = fmaxf(amax, fabsf(p[i]));
    s = 448.0f / amax;
    for (size_t i = 0; i < n; i++)
        p[i] = e4m3r(p[i] * s);
    *deq = 1.0f / s;
    return p;
}

/* c[M, N] from an fp8 op against da db sum(a8 b8) (double), per element within
 * rel |ref| + K 2^-23 sum |terms|. */
static bool fp8_product_ok(const float *c, const float *a, const float *b, float da, float db,
                           int M, int N, int K, double rel, const char *what)
{
    double worst = 0;
    size_t bad = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0, sa = 0, lim;
            for (int k = 0; k < K; k++) {
                s += (double)a[i * K + k] * b[j * K + k];
                sa += fabs((double)a[i * K + k] * b[j * K + k]);
            }
            s *= (double)da * db;
            sa *= (double)da * db;
            /* the accumulation: fp32 sums on the emulator (K 2^-23 of sum |a b|), but the
             * H100's fp8 tensor cores add products with fewer bits even with fast
             * accumulation off (partial sums are promoted to fp32 only between blocks of
             * products; DeepSeek-V3's report, section 3.3.2, measured about 14 bits): on
             * one, M=48 N=96 K=256 came out at 1.62 times the fp32 bound, about 2^-14.3
             * of sum |a b|. 2^-12 of it holds the hardware with a margin of 4 and still
             * catches a wrong scale or a dropped block of K. */
            lim = rel * fabs(s) + fmax(K * 0x1p-23, 0x1p-12) * sa;
            if (fabs(c[i * N + j] - s) > lim) {
                if (bad++ < 3)
                    diag("%s: c[%d][%d] = %.9g, reference %.9g (limit %.3g)", what, i, j,
                         c[i * N + j], s, lim);
            }
            worst = fmax(worst, fabs(c[i * N + j] - s) / (lim > 0 ? lim : 1));
        }
    return ok(bad == 0, "%s: %d x %d within the bound (worst %.2f of it)", what, M, N, worst);
}

static void test_fp8_products(const struct tb_cuda_api *api)
{
    enum { M = 48, N = 96, K = 256, K2 = 248 }; /* cuBLASLt fp8: M, N, K multiples of 16 */
    struct tb_cuda_op_args o;
    float da, db, da2, db2;
    float *a = randq(M * K, &da), *b = randq(N * K, &db), *c = zalloc(M * N, sizeof *c);
    float *a2 = randq(3 * K2, &da2), *b2 = randq(N * K2, &db2);
    char err[512] = "";

    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_GEMM_FP8;
    o.M = M;
    o.N = N;
    o.K = K;
    o.scale_a = da;
    o.scale_b = db;
    o.in[0] = a;
    o.in[1] = b;
    o.out[0] = c;
    run_op(api, &o, "gemm_fp8");
    fp8_product_ok(c, a, b, da, db, M, N, K, 0x1p-22, "fp8 product through cuBLASLt (fp32 out)");
    o.out_bf16 = true;
    run_op(api, &o, "gemm_fp8");
    fp8_product_ok(c, a, b, da, db, M, N, K, 0x1p-8, "fp8 product through cuBLASLt (bf16 out)");
    o.op = TB_CUDA_OP_GEMV_FP8;
    o.M = 3;
    o.out_bf16 = false;
    run_op(api, &o, "gemv_fp8");
    fp8_product_ok(c, a, b, da, db, 3, N, K, 0x1p-22, "fp8 decode product, 3 rows (fp32 out)");
    o.out_bf16 = true;
    run_op(api, &o, "gemv_fp8");
    fp8_product_ok(c, a, b, da, db, 3, N, K, 0x1p-8, "fp8 decode product, 3 rows (bf16 out)");
    /* K not a multiple of 16: the GEMV's element-by-element path; cuBLASLt refuses */
    o.K = K2;
    o.out_bf16 = false;
    o.scale_a = da2;
    o.scale_b = db2;
    o.in[0] = a2;
    o.in[1] = b2;
    run_op(api, &o, "gemv_fp8");
    fp8_product_ok(c, a2, b2, da2, db2, 3, N, K2, 0x1p-22,
                   "fp8 decode product, K not a multiple of 16");
    o.op = TB_CUDA_OP_GEMM_FP8;
    OK(api->op(&o, err, sizeof err) == -1 && strstr(err, "multiples of 16"),
       "cuBLASLt's fp8 contract is checked by name: %s", err);
    free(a);
    free(b);
    free(c);
    free(a2);
    free(b2);
}

/* ---- the engine against the CPU engine ---- */

/* A CPU engine on llama-tiny's weights (seed 11) and what the plugin takes of it: the
 * parameter offsets and the RoPE tables for S positions (w borrows them). */
struct cpu_twin {
    struct tb_llama cpu;
    struct tb_cuda_llama_weights w;
    size_t *off;
    float *cs, *sn;
};

static void twin_init(struct cpu_twin *t, const struct tb_arch *a, int B, int S, unsigned flags)
{
    size_t half = (size_t)a->head_dim / 2;
    char err[512];
    if (tb_llama_init(&t->cpu, a, B, S, flags, 11, err, sizeof err) != 0)
        bail("%s", err);
    t->off = zalloc((size_t)a->layers * TB_CUDA_W_PER_LAYER, sizeof *t->off);
    t->cs = zalloc((size_t)S * half, sizeof *t->cs);
    t->sn = zalloc((size_t)S * half, sizeof *t->sn);
    tb_gpu_weights_of(&t->cpu, t->off, S, t->cs, t->sn, &t->w);
}

static void twin_release(struct cpu_twin *t)
{
    tb_llama_release(&t->cpu);
    free(t->off);
    free(t->cs);
    free(t->sn);
}

/* n decode steps from position T fed the CPU engine's greedy tokens on both engines (the
 * device's logits into lg [B, V]); true when at every step the device's are within rel
 * of max |ref| with NMSE <= nmse, else the failing steps are diagnosed. */
static bool decode_matches(const struct tb_cuda_api *api, void *eng, struct tb_llama *cpu,
                           float *lg, int B, int T, int n, double rel, double nmse,
                           const char *what)
{
    int V = cpu->arch->vocab, *next = zalloc((size_t)B, sizeof *next);
    bool ok = true;
    char err[512];
    for (int s = 0; s < n; s++) {
        struct tap_cmp c;
        tb_exec_argmax(cpu->logits, B, V, next);
        if (tb_llama_decode(cpu, next, B, T + s, err, sizeof err) != 0 ||
            api->llama_decode(eng, next, B, T + s, err, sizeof err) != 0 ||
            api->llama_logits(eng, lg, (size_t)B * V, err, sizeof err) != 0)
            bail("%s: %s", what, err);
        c = tap_compare_f(lg, cpu->logits, (size_t)B * V);
        if (!(c.max_abs <= rel * c.max_ref && c.nmse <= nmse)) {
            diag("%s step %d: max |err| %.3g of %.3g, NMSE %.3g", what, s, c.max_abs, c.max_ref,
                 c.nmse);
            ok = false;
        }
    }
    free(next);
    return ok;
}

/* The refusals below compute capability 8.9, each with the reason. */
static void test_fp8_refused(struct tb_gpu *g, const struct tb_arch *a)
{
    const struct tb_cuda_api *api = g->api;
    struct tb_cuda_op_args o;
    struct tb_run_spec s;
    struct cpu_twin t;
    float x[16] = {1}, q[16];
    char err[512] = "", want[128];
    void *eng = NULL;

    snprintf(want, sizeof want,
             "fp8 products need compute capability 8.9 or later (this device: %d.%d)",
             g->info.cc_major, g->info.cc_minor);
    memset(&o, 0, sizeof o);
    o.op = TB_CUDA_OP_QUANT_FP8;
    o.n = 16;
    o.in[0] = x;
    o.out[0] = q;
    OK(api->op(&o, err, sizeof err) == -1 && !strcmp(err, want), "fp8 op refused: %s", err);
    twin_init(&t, a, 1, 8, 0);
    err[0] = '\0';
    OK(api->llama_init(&eng, a, &t.w, 1, 8, TB_CUDA_LLAMA_FP8, err, sizeof err) == -1 &&
           !strcmp(err, want),
       "fp8 engine refused: %s", err);
    if (eng)
        api->llama_free(eng);
    twin_release(&t);
    tb_run_spec_init(&s);
    snprintf(s.model, sizeof s.model, "llama-tiny");
    s.phase = TB_PHASE_DECODE;
    s.seq_in = 8;
    snprintf(s.precision, sizeof s.precision, "fp8");
    OK(!tb_gpu_can_run(g, &s, err, sizeof err) && !strcmp(err, want),
       "the executor skips fp8 runs with the reason: %s", err);
}

static void test_engine(struct tb_gpu *g, const struct tb_arch *a)
{
    const struct tb_cuda_api *api = g->api;
    enum {
        B = 2,
        T = 130,
        NSTEP = 4,
        S = T + NSTEP + 1
    }; /* + 1: the greedy step; T over two of
          the decode attention's 64-key chunks */
    struct cpu_twin t;
    struct tb_adamw co = tb_adamw_default();
    struct tb_cuda_adamw go = {co.lr, co.beta1, co.beta2, co.eps, co.weight_decay};
    int V = a->vocab, tok[B * T], tgt[B * T];
    float *lg = zalloc((size_t)B * V, sizeof *lg);
    float cpu_loss[4], gpu_loss[4];
    void *eng = NULL;
    char err[512];

    for (int i = 0; i < B * T; i++) {
        tok[i] = (int)((unsigned)(i * 37 + 11) % (unsigned)V);
        tgt[i] = (int)((unsigned)(i * 53 + 7) % (unsigned)V);
    }
    /* inference: prefill then teacher-forced decode steps */
    twin_init(&t, a, B, S, 0);
    if (api->llama_init(&eng, a, &t.w, B, S, 0, err, sizeof err) != 0)
        bail("llama_init: %s", err);
    if (tb_llama_prefill(&t.cpu, tok, B, T, err, sizeof err) != 0 ||
        api->llama_prefill(eng, tok, B, T, err, sizeof err) != 0 ||
        api->llama_logits(eng, lg, (size_t)B * V, err, sizeof err) != 0)
        bail("prefill: %s", err);
    close_to_f(lg, t.cpu.logits, (size_t)B * V, 5e-2, 1e-3, "engine prefill logits vs CPU engine");
    OK(decode_matches(api, eng, &t.cpu, lg, B, T, NSTEP, 5e-2, 1e-3, "decode"),
       "engine decode logits vs CPU engine, %d teacher-forced steps", NSTEP);
    {
        bool finite = false;
        OK(api->llama_finite(eng, &finite, err, sizeof err) == 0 && finite, "decode logits finite");
    }
    /* greedy decode on the device: after a host-token step, a NULL step runs */
    OK(api->llama_decode(eng, NULL, B, T + NSTEP - 1, err, sizeof err) == 0,
       "greedy device decode step runs: %s", err);
    {
        /* the greedy step fed the device's argmax of the logits in lg; the same step fed
         * the host's argmax of those logits must give the same logits, bit for bit */
        int host_next[B];
        float *lg2 = zalloc((size_t)B * V, sizeof *lg2), *lg3 = zalloc((size_t)B * V, sizeof *lg3);
        tb_exec_argmax(lg, B, V, host_next);
        if (api->llama_logits(eng, lg2, (size_t)B * V, err, sizeof err) != 0 ||
            api->llama_decode(eng, host_next, B, T + NSTEP - 1, err, sizeof err) != 0 ||
            api->llama_logits(eng, lg3, (size_t)B * V, err, sizeof err) != 0)
            bail("greedy check: %s", err);
        OK(!memcmp(lg2, lg3, (size_t)B * V * sizeof *lg2),
           "the device's greedy token is the host's argmax of the same logits");
        free(lg2);
        free(lg3);
    }
    api->llama_free(eng);
    eng = NULL;
    twin_release(&t);

    /* training: four steps on the same batch */
    twin_init(&t, a, B, T, TB_LLAMA_TRAIN);
    if (api->llama_init(&eng, a, &t.w, B, T, TB_CUDA_LLAMA_TRAIN, err, sizeof err) != 0)
        bail("llama_init (train): %s", err);
    for (int k = 0; k < 4; k++) {
        if (tb_llama_train_step(&t.cpu, tok, tgt, B, T, &co, &cpu_loss[k], err, sizeof err) != 0 ||
            api->llama_train_step(eng, tok, tgt, B, T, &go, err, sizeof err) != 0 ||
            api->llama_loss(eng, &gpu_loss[k], err, sizeof err) != 0)
            bail("train step %d: %s", k, err);
    }
    IS_DOUBLE(cpu_loss[0], gpu_loss[0], 5e-3, "training loss, step 1, vs CPU engine");
    IS_DOUBLE(cpu_loss[3], gpu_loss[3], 2e-2, "training loss, step 4 (after 3 AdamW updates)");
    OK(gpu_loss[3] < gpu_loss[0] - 0.01, "GPU training loss falls (%.4f -> %.4f)", gpu_loss[0],
       gpu_loss[3]);
    api->llama_free(eng);
    twin_release(&t);
    free(lg);
}

/* Precision fp8 against the CPU engine (fp32) and the bf16 engine, on prefill and
 * teacher-forced decode; the header states the tolerance and why. */
static void test_engine_fp8(struct tb_gpu *g, const struct tb_arch *a)
{
    const struct tb_cuda_api *api = g->api;
    enum { B = 2, T = 12, NSTEP = 4, S = T + NSTEP + 1 }; /* + 1: the greedy step */
    struct cpu_twin t;
    int V = a->vocab, tok[B * T];
    float *lg = zalloc((size_t)B * V, sizeof *lg), *lb = zalloc((size_t)B * V, sizeof *lb);
    struct tap_cmp c;
    bool finite = false;
    void *eng = NULL, *e16 = NULL;
    char err[512] = "";

    for (int i = 0; i < B * T; i++)
        tok[i] = (int)((unsigned)(i * 37 + 11) % (unsigned)V);
    twin_init(&t, a, B, S, 0);
    OK(api->llama_init(&eng, a, &t.w, B, S, TB_CUDA_LLAMA_FP8 | TB_CUDA_LLAMA_TRAIN, err,
                       sizeof err) == -1 &&
           strstr(err, "precision fp8 is for inference"),
       "fp8 with training is refused: %s", err);
    if (api->llama_init(&eng, a, &t.w, B, S, TB_CUDA_LLAMA_FP8, err, sizeof err) != 0 ||
        api->llama_init(&e16, a, &t.w, B, S, 0, err, sizeof err) != 0)
        bail("llama_init (fp8): %s", err);
    if (tb_llama_prefill(&t.cpu, tok, B, T, err, sizeof err) != 0 ||
        api->llama_prefill(eng, tok, B, T, err, sizeof err) != 0 ||
        api->llama_logits(eng, lg, (size_t)B * V, err, sizeof err) != 0 ||
        api->llama_prefill(e16, tok, B, T, err, sizeof err) != 0 ||
        api->llama_logits(e16, lb, (size_t)B * V, err, sizeof err) != 0)
        bail("prefill (fp8): %s", err);
    close_to_f(lg, t.cpu.logits, (size_t)B * V, 0.15, 1e-2,
               "fp8 engine prefill logits vs CPU engine");
    c = tap_compare_f(lg, lb, (size_t)B * V);
    OK(c.max_abs > 1e-3 * c.max_ref, "fp8 logits are not the bf16 engine's (max |diff| %.3g)",
       c.max_abs);
    OK(decode_matches(api, eng, &t.cpu, lg, B, T, NSTEP, 0.15, 1e-2, "fp8 decode"),
       "fp8 engine decode logits vs CPU engine, %d teacher-forced steps (fp8 GEMV)", NSTEP);
    OK(api->llama_decode(eng, NULL, B, T + NSTEP, err, sizeof err) == 0 &&
           api->llama_finite(eng, &finite, err, sizeof err) == 0 && finite,
       "fp8 greedy device decode step runs, logits finite: %s", err);
    api->llama_free(eng);
    api->llama_free(e16);
    twin_release(&t);
    free(lg);
    free(lb);
}

/* ---- continuous batching: the engine's cache slots ---- */

/* The staggered schedule of test_engine_slots: four sequences in max_batch 4 slots of
 * SL_S positions. 0 and 1 start at once in slots 3 and 1; 2 joins at step 1 in slot 0;
 * 1 ends after step 1 and 3 reuses its slot from step 3 (a prefill over a longer
 * sequence's cache: the slot rewinds). Decode rows go in sequence order (cache rows 3,
 * 1, 0, ...), and their count goes 2, 3, 2, 3, 1, 1 (one slot graph per count, captured
 * again at each change). Short, because the CPU emulation takes about 0.3 s a step. */
enum { SL_MAXB = 4, SL_S = 40, SL_NSEQ = 4, SL_MAXP = 16, SL_MAXOUT = 16, SL_ERR_STEP = 2 };
static const struct {
    int plen, slot, join, nout;
} SL_PLAN[SL_NSEQ] = {{5, 3, 0, 5}, {11, 1, 0, 3}, {7, 0, 1, 4}, {4, 1, 3, 4}};

struct slot_run {
    int prompt[SL_NSEQ][SL_MAXP];
    int out[SL_NSEQ][SL_MAXOUT];        /* the greedy tokens each sequence got */
    int cpu_exact, cpu_near, cpu_total; /* CPU agreement (teacher-forced), when asked */
    double cpu_worst;                   /* largest CPU logit gap of a device token */
};

/* Greedy tokens of prompt [T] decoded alone: batch 1 through llama_prefill and
 * llama_decode on a fresh engine (the shared-position path), n tokens into out. */
static void alone_greedy(const struct tb_cuda_api *api, const struct tb_arch *a,
                         const struct cpu_twin *t, int S, unsigned flags, const int *prompt, int T,
                         int n, int *out)
{
    int V = a->vocab;
    float *lg = zalloc((size_t)V, sizeof *lg);
    void *eng = NULL;
    char err[512];
    if (api->llama_init(&eng, a, &t->w, 1, S, flags, err, sizeof err) != 0 ||
        api->llama_prefill(eng, prompt, 1, T, err, sizeof err) != 0 ||
        api->llama_logits(eng, lg, (size_t)V, err, sizeof err) != 0)
        bail("alone: %s", err);
    for (int i = 0; i < n; i++) {
        tb_exec_argmax(lg, 1, V, &out[i]);
        if (i + 1 < n && (api->llama_decode(eng, &out[i], 1, T + i, err, sizeof err) != 0 ||
                          api->llama_logits(eng, lg, (size_t)V, err, sizeof err) != 0))
            bail("alone decode: %s", err);
    }
    api->llama_free(eng);
    free(lg);
}

/* How the device's greedy token tok stands among the CPU engine's logits row: counts an
 * exact match, and a near one (within gap of the CPU's largest logit). */
static void cpu_agree(struct slot_run *r, const float *row, int V, int tok, double gap)
{
    int best;
    double mx = 0;
    tb_exec_argmax(row, 1, V, &best);
    for (int v = 0; v < V; v++)
        mx = fabs(row[v]) > mx ? fabs(row[v]) : mx;
    r->cpu_total++;
    r->cpu_exact += best == tok;
    r->cpu_near += row[best] - row[tok] <= gap * mx;
    if (mx > 0 && (row[best] - row[tok]) / mx > r->cpu_worst)
        r->cpu_worst = (row[best] - row[tok]) / mx;
}

static void slot_errors(const struct tb_cuda_api *api, void *eng, int V, int slot, int pos);

/* Run SL_PLAN on eng (max_batch SL_MAXB, SL_S positions) with r->prompt; the tokens into
 * r->out. With cpu (the same weights, SL_MAXB x SL_S), the CPU engine runs the same slot
 * calls fed the device's tokens and r's agreement counts are filled (gap: see
 * cpu_agree). With errors, the refusals are tested at step SL_ERR_STEP (and must change
 * nothing: the run goes on). */
static void run_slots(const struct tb_cuda_api *api, void *eng, struct tb_llama *cpu,
                      struct slot_run *r, double gap, bool errors)
{
    int produced[SL_NSEQ] = {0}, pos[SL_NSEQ] = {0}, done = 0;
    int tok[SL_NSEQ], slots[SL_NSEQ], at[SL_NSEQ], row[SL_NSEQ], next[SL_NSEQ];
    float *cl = cpu ? zalloc((size_t)cpu->arch->vocab, sizeof *cl) : NULL;
    char err[512];

    r->cpu_exact = r->cpu_near = r->cpu_total = 0;
    r->cpu_worst = 0;
    for (int step = 0; done < SL_NSEQ; step++) {
        int n = 0;
        for (int i = 0; i < SL_NSEQ; i++) {
            if (SL_PLAN[i].join != step)
                continue;
            if (api->llama_prefill_slot(eng, r->prompt[i], SL_PLAN[i].plen, SL_PLAN[i].slot,
                                        &r->out[i][0], err, sizeof err) != 0)
                bail("prefill_slot of sequence %d: %s", i, err);
            if (cpu) {
                if (tb_llama_prefill_slot(cpu, r->prompt[i], SL_PLAN[i].plen, SL_PLAN[i].slot, cl,
                                          err, sizeof err) != 0)
                    bail("CPU prefill_slot: %s", err);
                cpu_agree(r, cl, cpu->arch->vocab, r->out[i][0], gap);
            }
            produced[i] = 1;
            pos[i] = SL_PLAN[i].plen;
            if (produced[i] == SL_PLAN[i].nout)
                done++;
        }
        if (errors && step == SL_ERR_STEP)
            slot_errors(api, eng, cpu ? cpu->arch->vocab : 256, SL_PLAN[0].slot, pos[0]);
        for (int i = 0; i < SL_NSEQ; i++) {
            if (produced[i] == 0 || produced[i] == SL_PLAN[i].nout)
                continue;
            tok[n] = r->out[i][produced[i] - 1];
            slots[n] = SL_PLAN[i].slot;
            at[n] = pos[i];
            row[n++] = i;
        }
        if (n == 0)
            continue;
        if (api->llama_decode_slots(eng, tok, slots, at, n, next, err, sizeof err) != 0)
            bail("decode_slots at step %d: %s", step, err);
        if (cpu && tb_llama_decode_slots(cpu, tok, slots, at, n, err, sizeof err) != 0)
            bail("CPU decode_slots: %s", err);
        for (int k = 0; k < n; k++) {
            int i = row[k];
            if (cpu)
                cpu_agree(r, cpu->logits + (size_t)k * cpu->arch->vocab, cpu->arch->vocab, next[k],
                          gap);
            r->out[i][produced[i]++] = next[k];
            pos[i]++;
            if (produced[i] == SL_PLAN[i].nout)
                done++;
        }
    }
    free(cl);
}

/* The refusals, each with its reason, on an engine whose slot `slot` caches positions
 * [0, pos). */
static void slot_errors(const struct tb_cuda_api *api, void *eng, int V, int slot, int pos)
{
    int tok2[2] = {1, 2}, s2[2] = {slot, slot}, p2[2] = {pos, pos}, next[SL_MAXB + 1];
    int tok5[SL_MAXB + 1] = {0}, s5[SL_MAXB + 1] = {0, 1, 2, 3, 0},
                       p5[SL_MAXB + 1] = {1, 1, 1, 1, 1};
    int s1, p1, t1, prompt[3] = {1, -1, 2};
    char err[512], want[128];

#define REFUSED(call, what, ...)                                                                   \
    do {                                                                                           \
        err[0] = '\0';                                                                             \
        int rc_ = (call);                                                                          \
        snprintf(want, sizeof want, __VA_ARGS__);                                                  \
        OK(rc_ == -1 && strstr(err, want), "%s refused: %s", what, err);                           \
    } while (0)

    REFUSED(api->llama_decode_slots(eng, tok2, s2, p2, 2, next, err, sizeof err), "duplicate slots",
            "sequences 0 and 1 both in slot %d", slot);
    s1 = SL_MAXB, p1 = pos, t1 = 1;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err),
            "decode: slot out of range", "slot %d outside the engine's capacity [0, %d)", SL_MAXB,
            SL_MAXB);
    s1 = -1;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err),
            "decode: negative slot", "slot -1 outside");
    REFUSED(api->llama_prefill_slot(eng, tok2, 2, SL_MAXB, next, err, sizeof err),
            "prefill: slot out of range", "slot %d outside the engine's capacity", SL_MAXB);
    s1 = slot, p1 = 0;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err), "position 0",
            "position 0 outside [1, %d)", SL_S);
    p1 = SL_S;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err),
            "position max_seq", "position %d outside [1, %d)", SL_S, SL_S);
    p1 = pos + 1;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err),
            "position past the slot's cache", "slot %d caches only positions [0, %d)", slot, pos);
    p1 = pos, t1 = V;
    REFUSED(api->llama_decode_slots(eng, &t1, &s1, &p1, 1, next, err, sizeof err),
            "decode: token outside the vocabulary", "tokens[0] = %d out of range [0, %d)", V, V);
    REFUSED(api->llama_prefill_slot(eng, prompt, 3, slot, next, err, sizeof err),
            "prefill: token outside the vocabulary", "tokens[1] = -1 out of range");
    REFUSED(api->llama_decode_slots(eng, tok5, s5, p5, 0, next, err, sizeof err), "0 rows",
            "batch 0 outside the engine's capacity [1, %d]", SL_MAXB);
    REFUSED(api->llama_decode_slots(eng, tok5, s5, p5, SL_MAXB + 1, next, err, sizeof err),
            "more rows than slots", "batch %d outside the engine's capacity [1, %d]", SL_MAXB + 1,
            SL_MAXB);
#undef REFUSED
}

/* Each sequence of r against its tokens decoded alone (want); what names the run. */
static bool same_as_alone(const struct slot_run *r, int want[SL_NSEQ][SL_MAXOUT], int i)
{
    for (int k = 0; k < SL_PLAN[i].nout; k++)
        if (r->out[i][k] != want[i][k]) {
            diag("sequence %d token %d: %d, alone %d", i, k, r->out[i][k], want[i][k]);
            return false;
        }
    return true;
}

/* The shared-position path and the slots on one engine: their graphs (both for 2 rows
 * here) must not replace each other. Rows 0 and 1 decode at a shared position, slots 3
 * and 2 run sequences 0 and 2 of SL_PLAN between two of their steps, then rows 0 and 1
 * go on: the same tokens and logits as an engine that ran rows 0 and 1 alone, and the
 * slots' tokens those of their prompts decoded alone (want, test_engine_slots'). */
static void test_engine_slot_graphs(struct tb_gpu *g, const struct tb_arch *a,
                                    const struct cpu_twin *t, const struct slot_run *plan,
                                    int want[SL_NSEQ][SL_MAXOUT])
{
    const struct tb_cuda_api *api = g->api;
    enum { T = 6, NSH = 3, NSL = 3 };
    static const int seq[2] = {0, 2}, slots[2] = {3, 2};
    int V = a->vocab, tok[2 * T], sh[2][NSH], ref[2][NSH], got[2][NSL];
    float *lg = zalloc((size_t)2 * V, sizeof *lg), *lr = zalloc((size_t)2 * V, sizeof *lr);
    void *eng = NULL, *e_ref = NULL;
    char err[512] = "";
    bool same_slots = true;

    for (int i = 0; i < 2 * T; i++)
        tok[i] = (int)((unsigned)(i * 13 + 3) % (unsigned)V);
    if (api->llama_init(&eng, a, &t->w, SL_MAXB, SL_S, 0, err, sizeof err) != 0 ||
        api->llama_init(&e_ref, a, &t->w, SL_MAXB, SL_S, 0, err, sizeof err) != 0)
        bail("llama_init: %s", err);
    for (int k = 0; k < 2; k++) {
        void *e = k ? e_ref : eng;
        float *l = k ? lr : lg;
        int(*out)[NSH] = k ? ref : sh;
        if (api->llama_prefill(e, tok, 2, T, err, sizeof err) != 0 ||
            api->llama_logits(e, l, (size_t)2 * V, err, sizeof err) != 0)
            bail("prefill: %s", err);
        for (int s = 0; s < NSH; s++) {
            int next[2];
            tb_exec_argmax(l, 2, V, next);
            out[0][s] = next[0], out[1][s] = next[1];
            if (k == 0 && s == 1) {
                /* the slots, between two shared-position steps (the graph for 2 rows
                 * captured at the first) */
                for (int q = 0; q < 2; q++)
                    if (api->llama_prefill_slot(eng, plan->prompt[seq[q]], SL_PLAN[seq[q]].plen,
                                                slots[q], &got[q][0], err, sizeof err) != 0)
                        bail("prefill_slot: %s", err);
                for (int i = 1; i < NSL; i++) {
                    int in[2] = {got[0][i - 1], got[1][i - 1]}, nx[2], host[2];
                    int at[2] = {SL_PLAN[seq[0]].plen + i - 1, SL_PLAN[seq[1]].plen + i - 1};
                    if (api->llama_decode_slots(eng, in, slots, at, 2, nx, err, sizeof err) != 0)
                        bail("decode_slots: %s", err);
                    got[0][i] = nx[0], got[1][i] = nx[1];
                    if (i < NSL - 1)
                        continue;
                    if (api->llama_logits(eng, lg, (size_t)2 * V, err, sizeof err) != 0)
                        bail("logits: %s", err);
                    tb_exec_argmax(lg, 2, V, host);
                    OK(host[0] == nx[0] && host[1] == nx[1],
                       "llama_logits after a slot step: its 2 rows, whose argmax are the tokens "
                       "it returned");
                }
                err[0] = '\0';
                OK(api->llama_decode(eng, NULL, 2, T + s, err, sizeof err) == -1 &&
                       strstr(err, "needs a previous decode step"),
                   "a greedy shared-position step after slot calls is refused: %s", err);
            }
            if (api->llama_decode(e, next, 2, T + s, err, sizeof err) != 0 ||
                api->llama_logits(e, l, (size_t)2 * V, err, sizeof err) != 0)
                bail("decode at %d: %s", T + s, err);
        }
    }
    OK(!memcmp(sh, ref, sizeof sh) && !memcmp(lg, lr, (size_t)2 * V * sizeof *lg),
       "shared-position decode around slot steps: its tokens and logits are those of an "
       "engine without slots (the two graphs apart)");
    for (int q = 0; q < 2; q++)
        for (int i = 0; i < NSL; i++)
            same_slots = same_slots && got[q][i] == want[seq[q]][i];
    OK(same_slots, "the slot steps between: their prompts' tokens decoded alone");
    api->llama_free(eng);
    api->llama_free(e_ref);
    free(lg);
    free(lr);
}

/* Slot prefill and slot decode of SL_PLAN against each sequence decoded alone (batch 1,
 * the shared-position path) on the same engine type: the same greedy tokens exactly.
 * Every kernel of a decode step works row by row in the same order whatever the rows
 * (the GEMV for up to 8 rows sums each row alone; norms, RoPE, attention and argmax are
 * per row), and a slot prefill is a batch-1 prefill on the cache pointers of its slot,
 * so the slot path must reproduce the single-sequence path bit for bit. Against the CPU
 * engine (fp32) only agreement can be asked: the device's products round their inputs
 * to bf16, which moves logits by up to ~5% of the largest (the engine-vs-CPU bound of
 * test_engine), and llama-tiny's random weights leave many logits that close, so the
 * greedy tokens may differ and then the sequences diverge. So the CPU engine runs the
 * same slot calls fed the device's tokens (teacher-forced), and each device token must
 * be within 2 x 5e-2 x max|logit| of the CPU's best (two errors of the bound apart at
 * most), the exact matches counted and required on most steps. */
static void test_engine_slots(struct tb_gpu *g, const struct tb_arch *a)
{
    const struct tb_cuda_api *api = g->api;
    struct cpu_twin t;
    struct slot_run r, r2;
    int want[SL_NSEQ][SL_MAXOUT];
    void *eng = NULL;
    char err[512];

    memset(&r, 0, sizeof r);
    for (int i = 0; i < SL_NSEQ; i++)
        for (int k = 0; k < SL_PLAN[i].plen; k++)
            r.prompt[i][k] = (int)((unsigned)(i * 71 + k * 29 + 5) % (unsigned)a->vocab);
    twin_init(&t, a, SL_MAXB, SL_S, 0);
    for (int i = 0; i < SL_NSEQ; i++)
        alone_greedy(api, a, &t, SL_S, 0, r.prompt[i], SL_PLAN[i].plen, SL_PLAN[i].nout, want[i]);

    if (api->llama_init(&eng, a, &t.w, SL_MAXB, SL_S, 0, err, sizeof err) != 0)
        bail("llama_init: %s", err);
    run_slots(api, eng, &t.cpu, &r, 2 * 5e-2, true);
    api->llama_free(eng);
    for (int i = 0; i < SL_NSEQ; i++)
        OK(same_as_alone(&r, want, i),
           "slots: sequence %d (prompt %d, slot %d, joins at step %d): its %d greedy tokens are "
           "those it gets alone",
           i, SL_PLAN[i].plen, SL_PLAN[i].slot, SL_PLAN[i].join, SL_PLAN[i].nout);
    diag("slots vs CPU engine (teacher-forced): %d of %d greedy tokens the same, the worst "
         "gap %.3g of max |logit|",
         r.cpu_exact, r.cpu_total, r.cpu_worst);
    OK(r.cpu_near == r.cpu_total && 2 * r.cpu_exact > r.cpu_total,
       "slots vs CPU engine slots: every token within 0.1 x max|logit| of the CPU's best "
       "(worst %.3g), %d of %d the same",
       r.cpu_worst, r.cpu_exact, r.cpu_total);

    /* the same without graphs: the direct launches give what the graphs gave */
    memcpy(&r2, &r, sizeof r2);
    memset(r2.out, 0, sizeof r2.out);
    if (api->llama_init(&eng, a, &t.w, SL_MAXB, SL_S, TB_CUDA_LLAMA_NOGRAPH, err, sizeof err) != 0)
        bail("llama_init: %s", err);
    run_slots(api, eng, NULL, &r2, 0, false);
    api->llama_free(eng);
    OK(!memcmp(r.out, r2.out, sizeof r.out),
       "slots without graphs (TB_CUDA_LLAMA_NOGRAPH): the same tokens");
    test_engine_slot_graphs(g, a, &t, &r, want);
    twin_release(&t);
}

/* Precision fp8: a sequence alone in a slot (one row: its activations' scales are its
 * own, as alone) gives the tokens of the fp8 single-sequence path; with a second
 * sequence in another slot a step of 2 rows runs (the rows share each product's
 * current scale, so only finite logits and tokens in the vocabulary are asked). */
static void test_engine_slots_fp8(struct tb_gpu *g, const struct tb_arch *a)
{
    const struct tb_cuda_api *api = g->api;
    enum { P = 6, N = 3 };
    struct cpu_twin t;
    int prompt[P], want[N], got[N], other, tok2[2], slots2[2] = {2, 0}, pos2[2], next2[2];
    void *eng = NULL;
    bool finite = false;
    char err[512] = "";

    for (int k = 0; k < P; k++)
        prompt[k] = (int)((unsigned)(k * 41 + 9) % (unsigned)a->vocab);
    twin_init(&t, a, SL_MAXB, SL_S, 0);
    alone_greedy(api, a, &t, SL_S, TB_CUDA_LLAMA_FP8, prompt, P, N, want);
    if (api->llama_init(&eng, a, &t.w, SL_MAXB, SL_S, TB_CUDA_LLAMA_FP8, err, sizeof err) != 0 ||
        api->llama_prefill_slot(eng, prompt, P, 2, &got[0], err, sizeof err) != 0)
        bail("fp8 slots: %s", err);
    for (int i = 1; i < N; i++) {
        int s = 2, p = P + i - 1;
        if (api->llama_decode_slots(eng, &got[i - 1], &s, &p, 1, &got[i], err, sizeof err) != 0)
            bail("fp8 decode_slots: %s", err);
    }
    OK(!memcmp(got, want, sizeof got), "fp8 slots: one sequence in slot 2, the tokens alone");
    tok2[0] = got[N - 1];
    pos2[0] = P + N - 1;
    pos2[1] = P - 2;
    if (api->llama_prefill_slot(eng, prompt, P - 2, 0, &other, err, sizeof err) != 0)
        bail("fp8 prefill_slot: %s", err);
    tok2[1] = other;
    OK(api->llama_decode_slots(eng, tok2, slots2, pos2, 2, next2, err, sizeof err) == 0 &&
           api->llama_finite(eng, &finite, err, sizeof err) == 0 && finite && next2[0] >= 0 &&
           next2[0] < a->vocab && next2[1] >= 0 && next2[1] < a->vocab,
       "fp8 slots: a step of 2 rows in slots 2 and 0 runs, logits finite: %s", err);
    api->llama_free(eng);
    twin_release(&t);
}

/* The executor tests' run of phase ph: llama-tiny, batch 2, 16 prompt tokens, 4
 * generated, 3 timed repetitions after 1 warm-up. */
static void tiny_spec(struct tb_run_spec *s, enum tb_phase ph)
{
    tb_run_spec_init(s);
    snprintf(s->model, sizeof s->model, "llama-tiny");
    s->phase = ph;
    s->batch = 2;
    s->seq_in = 16;
    s->seq_out = 4;
    s->reps = 3;
    s->warmup = 1;
}

static void test_executor_fp8(struct tb_gpu *g, const struct tb_arch *a)
{
    struct tb_run_spec s;
    struct tb_exec_result r;
    struct tb_energy e;
    char err[512] = "";
    const enum tb_phase ph[2] = {TB_PHASE_PREFILL, TB_PHASE_DECODE};
    for (int i = 0; i < 2; i++) {
        tiny_spec(&s, ph[i]);
        snprintf(s.precision, sizeof s.precision, "fp8");
        OK(tb_gpu_run(g, &s, a, &r, &e, err, sizeof err) == 0 && r.valid && r.secs[2] > 0,
           "executor %s at fp8 runs, validates and times (%s%s)", tb_phase_to_string(ph[i]), err,
           r.note);
        tb_exec_result_release(&r);
    }
}

static void test_executor(struct tb_gpu *g, const struct tb_arch *a)
{
    struct tb_run_spec s;
    struct tb_exec_result r;
    struct tb_energy e;
    char err[512] = "";
    const enum tb_phase ph[3] = {TB_PHASE_PREFILL, TB_PHASE_DECODE, TB_PHASE_TRAIN};
    for (int i = 0; i < 3; i++) {
        tiny_spec(&s, ph[i]);
        OK(tb_gpu_run(g, &s, a, &r, &e, err, sizeof err) == 0 && r.valid && r.secs[2] > 0,
           "executor %s runs, validates and times (%s%s)", tb_phase_to_string(ph[i]), err, r.note);
        OK(e.ok || strstr(e.note, "unavailable") || strstr(e.note, "did not advance"),
           "energy measured or its absence explained: %s", e.note);
        tb_exec_result_release(&r);
    }
}

/* The fp8 device tests: quantisation 3 x 4, products 6, engine 5, executor 2, slots 2. */
#define FP8_TESTS (12 + 6 + 5 + 2 + 2)

/* The emulator loads only by explicit path and only for tests: without
 * TB_GPU_EMULATOR_OK it is refused with the reason. */
static void test_emulator_gate(const char *emu)
{
    struct tb_gpu g;
    int rc;
    if (!tb_file_exists(emu)) {
        skip_block(4, "the CUDA emulator was not built (%s)", emu);
        return;
    }
    setenv("TRNBENCH_CUDA_PLUGIN", emu, 1);
    IS_INT(-1, tb_gpu_open(&g, 0, TB_GPU_FORCE), "the CUDA emulator is refused for measurements");
    IS_STRING("the CUDA emulator (libtrnbench-cuemu.so) is for tests, not measurements", g.why,
              "and says why");
    tb_gpu_close(&g);
    rc = tb_gpu_open(&g, 0, TB_GPU_FORCE | TB_GPU_EMULATOR_OK);
    OK(rc == 0 && g.info.emulated, "tests may open it with TB_GPU_EMULATOR_OK: %s",
       rc == 0 ? g.info.build : g.why);
    IS_STRING("cuemu (CPU emulation of the CUDA kernels; not a GPU)", g.info.name,
              "its device says it is not a GPU");
    tb_gpu_close(&g);
    unsetenv("TRNBENCH_CUDA_PLUGIN");
}

/* test_share's test count (skipped together without the emulator). */
#define SHARE_TESTS 20

/* A GPU run on a p5.48xlarge, end to end on the emulator with 8 devices: the device
 * index and count, the machine read from tests/data/platform_p5, the share the rows
 * record (1 of the instance's 8 GPUs), the executor's run, its row in results.csv and
 * the report's cost: 1/8 of the instance's price, not the whole machine's. */
static void test_share(const char *emu, const struct tb_arch *a)
{
    struct tb_gpu g;
    struct tb_gpu_share sh;
    struct tb_platform plat;
    struct tb_pricing pricing;
    struct tb_run_spec spec;
    struct tb_exec_result r;
    struct tb_energy e;
    struct tb_stats st;
    struct tb_result_row row;
    struct tb_report_opts o;
    struct tb_csv_table t;
    const struct tb_chip *h100;
    char err[1024] = "", buf[1024], value[32];
    char *root = test_src_path("tests/data/platform_p5"), *pdir = test_src_path("pricing");
    char *res = test_tmp_path("gpu_share.csv"), *out = test_tmp_path("gpu_share");
    char *costs = test_tmp_path("gpu_share/cost.csv");
    const char *files[1] = {res};
    int rc;

    if (!tb_file_exists(emu)) {
        skip_block(SHARE_TESTS, "the CUDA emulator was not built (%s)", emu);
        goto out;
    }
    if (tb_pricing_load(&pricing, pdir, err, sizeof err) != 0)
        bail("%s", err);
    setenv("TRNBENCH_CUDA_PLUGIN", emu, 1);
    setenv("CUEMU_DEVICES", "8", 1);
    IS_INT(-1, tb_gpu_open(&g, 8, TB_GPU_FORCE | TB_GPU_EMULATOR_OK), "no device 8 of 8");
    IS_STRING("no CUDA device 8 (8 visible)", g.why, "and why");
    tb_gpu_close(&g);
    /* the emulator's context is on device 0 since test_emulator_gate */
    IS_INT(-1, tb_gpu_open(&g, 3, TB_GPU_FORCE | TB_GPU_EMULATOR_OK), "one device a process");
    OK(strstr(g.why, "device 3 needs a process of its own") != NULL, "%s", g.why);
    tb_gpu_close(&g);
    rc = tb_gpu_open(&g, 0, TB_GPU_FORCE | TB_GPU_EMULATOR_OK);
    OK(rc == 0 && g.info.device == 0 && g.info.device_count == 8, "device 0 of 8 (%s)", g.why);
    tb_gpu_provenance(&g.info, buf, sizeof buf);
    OK(!strncmp(buf, "device 0 of 8 visible; ", 23), "the rows' provenance names it: %s", buf);

    /* the machine: a p5.48xlarge (8 H100s); the emulator's device matches no chip of
     * the catalogue, so the H100 stands in for what tb_gpu_chip finds on a real one */
    tb_platform_detect_root(&plat, root, err, sizeof err);
    IS_STRING("p5.48xlarge", tb_platform_target(&plat), "the target: p5.48xlarge");
    h100 = tb_pricing_chip(&pricing, "h100-sxm");
    tb_gpu_share(&g, &pricing, tb_platform_target(&plat), h100, &sh);
    OK(sh.used == 1 && sh.visible == 8 && !strcmp(sh.chips_used, "1"),
       "one GPU used of 8 visible (chips_used '%s')", sh.chips_used);
    OK(sh.inst && !strcmp(sh.inst->instance, "p5.48xlarge") && sh.inst->accel_count == 8,
       "the instance's 8 GPUs from pricing/instances.csv");
    OK(sh.twin == sh.inst, "the modeled twin goes on one chip of the same instance type");
    IS_STRING("1 of 8 GPUs of p5.48xlarge (8 visible): its rows are charged 1/8 of the "
              "instance-hour",
              sh.text, "and run says so");

    /* a run, its row as the executor's rows are written, and the report's cost */
    tiny_spec(&spec, TB_PHASE_DECODE);
    rc = tb_gpu_run(&g, &spec, a, &r, &e, err, sizeof err);
    OK(rc == 0 && r.valid && tb_stats_compute(&st, r.secs, 3, NULL, 0) == 0,
       "the executor runs on device 0 (%s%s)", err, r.note);
    snprintf(value, sizeof value, "%.6g", rc == 0 ? r.tokens / st.median : 1.0);
    tb_exec_result_release(&r);
    remove(res);
    memset(&row, 0, sizeof row);
    row.col[TB_COL_RUN_ID] = "cuda:llama-tiny/decode/b2/in16/out4/bf16";
    row.col[TB_COL_PROVENANCE] = "measured";
    row.col[TB_COL_TARGET] = tb_platform_target(&plat);
    row.col[TB_COL_INSTANCES] = "1";
    row.col[TB_COL_EXECUTOR] = "cuda";
    row.col[TB_COL_MODEL] = "llama-tiny";
    row.col[TB_COL_PHASE] = "decode";
    row.col[TB_COL_PRECISION] = "bf16";
    row.col[TB_COL_METRIC] = "decode_tokens_per_s";
    row.col[TB_COL_VALUE] = value;
    row.col[TB_COL_UNIT] = "tokens/s";
    row.col[TB_COL_COUNTERS] = buf;
    row.col[TB_COL_CHIPS_USED] = sh.chips_used;
    IS_INT(0, tb_results_append(res, &row, 1, err, sizeof err), "row written %s", err);
    tb_report_opts_init(&o);
    o.results = files;
    o.nresults = 1;
    o.out_dir = out;
    o.pricing_dir = pdir;
    setenv("TRNBENCH_GNUPLOT", "/nonexistent/gnuplot", 1); /* the cost, not the charts */
    IS_INT(TB_OK, tb_report_write(&o, NULL, err, sizeof err), "report %s", err);
    unsetenv("TRNBENCH_GNUPLOT");
    if (tb_csv_load(&t, costs, err, sizeof err) != 0)
        bail("%s", err);
    /* p5.48xlarge on-demand in us-east-1: $55.04/h for 8 H100s (pricing/prices.csv) */
    IS_REL(55.04 / 8 / (strtod(value, NULL) * 3600) * 1e6,
           strtod(tb_csv_field(&t, 0, "usd_per_mtok"), NULL), 1e-9,
           "charged $55.04/8 per hour at %s tokens/s", value);
    IS_STRING("0.125", tb_csv_field(&t, 0, "instances_charged"), "1/8 of the instance");
    tb_csv_release(&t);

    /* CUDA_VISIBLE_DEVICES: the runtime's count (the plugin's) follows it, the machine's
     * (/proc, the catalogue) does not, and the share is of the machine */
    setenv("CUDA_VISIBLE_DEVICES", "5", 1);
    tb_gpu_close(&g);
    rc = tb_gpu_open(&g, 0, TB_GPU_FORCE | TB_GPU_EMULATOR_OK);
    OK(rc == 0 && g.info.device_count == 1 && plat.nvidia_gpus == 8,
       "CUDA_VISIBLE_DEVICES=5: 1 visible to the plugin, /proc still lists %d", plat.nvidia_gpus);
    tb_gpu_share(&g, &pricing, tb_platform_target(&plat), h100, &sh);
    OK(sh.visible == 1 && !strcmp(sh.chips_used, "1") && sh.inst && sh.inst->accel_count == 8,
       "still 1 of 8: %s", sh.text);
    unsetenv("CUDA_VISIBLE_DEVICES");

    /* not a catalogued instance: the row records the GPU used, the price is the host's */
    tb_gpu_share(&g, &pricing, "host", h100, &sh);
    OK(!sh.inst && !sh.twin && !strcmp(sh.chips_used, "1"), "host: 1 GPU recorded");
    OK(strstr(sh.text, "on host, not an instance type in pricing/instances.csv") != NULL, "%s",
       sh.text);
    tb_gpu_close(&g);
    unsetenv("CUEMU_DEVICES");
    unsetenv("TRNBENCH_CUDA_PLUGIN");
    tb_pricing_release(&pricing);
out:
    free(root);
    free(pdir);
    free(res);
    free(out);
    free(costs);
}

int main(void)
{
    struct tb_arch a;
    struct tb_gpu g;
    char err[512], *model = test_src_path("workloads/llama/llama-tiny.model");
    char *emu = test_tmp_path("../../lib/libtrnbench-cuemu.so");

    plan_lazy();
    if (tb_arch_load(&a, model, err, sizeof err) != 0)
        bail("%s", err);
    free(model);
    test_no_gpu_paths();
    test_energy();
    test_provenance();
    test_weights(&a);
    test_dlayout();
    test_e4m3_host();
    test_emulator_gate(emu);
    test_share(emu, &a);

    if (tb_gpu_open(&g, 0, 0) != 0) {
        if (!tb_file_exists(emu)) {
            /* the count of the device tests below: 36, 20 of the fused attention, 17 of
             * the UNet's diffusion, 15 of the DiTs' (3 kernel checks, 5 each of FLUX and
             * SD3, 2 of FLUX through the executor), 21 of the cache slots (17 and 4),
             * then the fp8 ones (FP8_TESTS, or the 3 refusals below compute capability
             * 8.9) */
            skip_block(36 + 20 + 17 + 15 + 21 + FP8_TESTS + 3, "no GPU: %s", g.why);
            tb_gpu_close(&g);
            free(emu);
            return 0;
        }
        diag("no GPU (%s): the device tests run on the CPU emulation %s", g.why, emu);
        tb_gpu_close(&g);
        setenv("TRNBENCH_CUDA_PLUGIN", emu, 1);
        if (tb_gpu_open(&g, 0, TB_GPU_FORCE | TB_GPU_EMULATOR_OK) != 0)
            bail("the CUDA emulator: %s", g.why);
        tap_suffix(" (cuemu)");
    }
    free(emu);
    diag("GPU: %s", g.info.name);
    test_rmsnorm(g.api);
    test_rope(g.api);
    test_swiglu(g.api);
    test_attention(g.api);
    test_flash(g.api);
    test_xent(g.api);
    test_adamw(g.api);
    test_products(g.api);
    test_groupnorm(g.api);
    test_conv2d(g.api);
    test_layernorm(g.api);
    test_geglu(g.api);
    test_attention_nc(g.api);
    test_dit_ln_mod(g.api);
    test_dit_qkv(g.api);
    test_engine(&g, &a);
    test_engine_slots(&g, &a);
    test_executor(&g, &a);
    test_denoiser(&g, "sdxl-tiny");
    test_denoiser(&g, "flux-tiny");
    test_denoiser(&g, "sd3-tiny");
    test_denoise_executor(&g, "sdxl-tiny");
    test_denoise_executor(&g, "flux-tiny");
    if (g.info.cc_major * 10 + g.info.cc_minor >= 89) {
        test_fp8_quant(g.api);
        test_fp8_products(g.api);
        test_engine_fp8(&g, &a);
        test_engine_slots_fp8(&g, &a);
        test_executor_fp8(&g, &a);
        skip_block(3, "compute capability %d.%d: fp8 is not refused here", g.info.cc_major,
                   g.info.cc_minor);
    } else {
        test_fp8_refused(&g, &a);
        skip_block(FP8_TESTS,
                   "fp8 products need compute capability 8.9 or later (this device: "
                   "%d.%d)",
                   g.info.cc_major, g.info.cc_minor);
    }
    tb_gpu_close(&g);
    return 0;
}
