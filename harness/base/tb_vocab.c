/* harness/base/tb_vocab.c: see tb_vocab.h. */
#include "tb_vocab.h"

#include <string.h>

static const char *const PHASE_NAMES[TB_NPHASES] = {"prefill", "decode", "train", "denoise",
                                                    "serve"};

const char *tb_phase_to_string(enum tb_phase p)
{
    return (unsigned)p < TB_NPHASES ? PHASE_NAMES[p] : "unknown";
}

int tb_phase_from_string(const char *s, enum tb_phase *out)
{
    for (int i = 0; i < TB_NPHASES; i++)
        if (!strcmp(s, PHASE_NAMES[i])) {
            *out = (enum tb_phase)i;
            return 0;
        }
    return -1;
}

#define H     TB_BETTER_HIGHER
#define L     TB_BETTER_LOWER
#define N     TB_BETTER_NEITHER
#define TRAIN TB_PHASE_BIT(TB_PHASE_TRAIN)
#define INFER                                                                                      \
    (TB_PHASE_BIT(TB_PHASE_PREFILL) | TB_PHASE_BIT(TB_PHASE_DECODE) | TB_PHASE_BIT(TB_PHASE_SERVE))
#define IMAGE TB_PHASE_BIT(TB_PHASE_DENOISE)
#define ANY   ((1u << TB_NPHASES) - 1)

/* Within each phase, the modeled metrics keep the order runs have always recorded
 * them in (results.csv's row order). */
static const struct tb_metric METRICS[] = {
    {"train_tokens_per_s", "tokens/s",
     "training tokens (batch x seq_in) per second of full steps (forward, backward, optimizer), "
     "all chips of the run together",
     H, "usd_per_mtok_train", "train_tokens_per_s_per_chip", TRAIN},
    {"train_tokens_per_s_per_chip", "tokens/s",
     "train_tokens_per_s divided by the chips of the run", H, NULL, NULL, TRAIN},
    {"step_time_s", "s", "wall time of one training step (forward, backward, optimizer)", L, NULL,
     NULL, TRAIN},
    {"time_to_train_s", "s",
     "time to train on train_tokens tokens at train_tokens_per_s (performance model)", L, NULL,
     NULL, 0},
    {"usd_to_train", "USD",
     "time_to_train_s x the on-demand price of the instances (performance model)", L, NULL, NULL,
     0},
    {"mfu", "fraction",
     "model FLOPs utilisation: model FLOPs / (time x dense peak of the precision used, per chip, "
     "from pricing/chips.csv)",
     H, NULL, NULL, TRAIN},
    {"compile_s", "s",
     "time the warm-up steps of a training run took beyond steady steps (each warm-up step's time "
     "less the median timed step): graph tracing and compilation where there is a compiler "
     "(torch-xla on Neuron compiles each new graph with neuronx-cc; a persistent cache shortens a "
     "later run), first-call allocation and kernel selection in eager mode (no compilation); "
     "predicted for any phase: a published compile time of the model on the chip (neuronx-cc, "
     "a TensorRT engine build, torch.compile; pricing/compile.csv), none where none is published",
     L, NULL, NULL, ANY},
    {"ttft_ms", "ms",
     "time to first token: wall time of the prefill of the whole batch of prompts (an engine run); "
     "from sending a request to its first streamed output chunk (a serving run, per request)",
     L, NULL, NULL, INFER},
    {"tpot_ms", "ms",
     "time per output token after the first: one decode step (an engine run); per request "
     "(e2e_latency - ttft) / (output tokens - 1) (a serving run); never includes the time to "
     "first token",
     L, NULL, NULL, INFER},
    {"itl_ms", "ms",
     "inter-token latency of a serving run: the gap between consecutive streamed output chunks "
     "of a request, over every gap of every request",
     L, NULL, NULL, 0},
    {"e2e_latency_ms", "ms", "end-to-end latency of a request: prompt in to last output token out",
     L, NULL, NULL, INFER},
    {"requests_per_s", "requests/s",
     "requests completed per second of a serving run (counted requests, warm-up excluded)", H, NULL,
     NULL, 0},
    {"goodput_requests_per_s", "requests/s",
     "requests completed per second of a serving run within the run's TTFT and TPOT limits", H,
     NULL, NULL, 0},
    {"failed_requests", "requests",
     "counted requests of a serving run that failed (the reasons in the row's notes)", L, NULL,
     NULL, 0},
    {"mismatched_requests", "requests",
     "completed requests whose prompt or output token counts, as the server reported them, "
     "differ from those asked",
     L, NULL, NULL, 0},
    {"achieved_concurrency", "requests",
     "requests in flight during a serving run, averaged over its time (beside the concurrency "
     "asked)",
     N, NULL, NULL, 0},
    {"achieved_request_rate", "requests/s",
     "requests sent per second during a serving run (beside the request_rate asked)", N, NULL, NULL,
     0},
    {"server_start_s", "s",
     "from starting the inference server to its endpoint answering (on Neuron a cold start "
     "includes compiling the model)",
     L, NULL, NULL, 0},
    {"server_warm_start_s", "s",
     "a second start of the same server right after the first (caches warm: a compiled Neuron "
     "model is reused)",
     L, NULL, NULL, 0},
    {"server_compile_s", "s",
     "server_start_s - server_warm_start_s of a recipe's server (recipe=vllm): the same "
     "command started with an empty compile cache, then with the cache the first start "
     "filled; what compiling adds to a start",
     L, NULL, NULL, 0},
    {"neuroncore_utilization_pct", "%",
     "NeuronCore utilisation during a serving level on Neuron devices: neuron-monitor's "
     "neuroncore_utilization, the mean over its reports and the cores in use (a percentage)",
     N, NULL, NULL, 0},
    {"neuron_device_memory_gib", "GiB",
     "the most Neuron device memory the server's applications held at once during a level "
     "(neuron-monitor's memory_used)",
     N, NULL, NULL, 0},
    {"neuron_power_utilization_pct", "%",
     "the Neuron devices' power as a percentage of their maximum (the driver's per-minute "
     "sysfs figure), mean over the devices during a level; a percentage, never watts",
     N, NULL, NULL, 0},
    {"prefill_tokens_per_s", "tokens/s",
     "prompt tokens processed per second in prefill: batch x seq_in / prefill time", H,
     "usd_per_mtok_in", NULL, 0},
    {"decode_tokens_per_s", "tokens/s",
     "output tokens generated per second in decode, all sequences of the batch together", H,
     "usd_per_mtok_out", NULL, 0},
    {"output_tokens_per_s", "tokens/s",
     "output tokens per second of a serving run, all requests together (a measured run: "
     "output tokens of the completed requests / the run's time)",
     H, "usd_per_mtok_out", "output_tokens_per_s_per_chip", INFER},
    {"output_tokens_per_s_per_chip", "tokens/s",
     "output_tokens_per_s divided by the chips of the run", H, NULL, NULL, INFER},
    {"total_tokens_per_s", "tokens/s", "prompt plus output tokens per second of a serving run", H,
     "usd_per_mtok_total", NULL, INFER},
    {"tokens_per_s_per_user", "tokens/s",
     "output tokens per second seen by one request (interactivity)", H, NULL, NULL, INFER},
    {"images_per_s", "images/s",
     "images generated per second, all chips of the run together: text encoders, every "
     "denoising step (both halves with classifier-free guidance) and the VAE decode",
     H, "usd_per_kimage", "images_per_s_per_chip", IMAGE},
    {"images_per_s_per_chip", "images/s", "images_per_s divided by the chips of the run", H, NULL,
     NULL, IMAGE},
    {"s_per_image", "s", "seconds from prompt to decoded image for one image at the batch", L, NULL,
     NULL, IMAGE},
    {"ms_per_step", "ms",
     "one denoising step at the batch: the denoiser's pass (both halves with classifier-free "
     "guidance), without the text encoders and the VAE decode",
     L, NULL, NULL, IMAGE},
    {"weight_load_s", "s",
     "time to read the model's weights from storage into device memory before the first request "
     "or step; predicted: the weights each instance's devices hold (replicas their own copy) over "
     "the instance's published storage read bandwidth (EBS maximum throughput, "
     "pricing/storage.csv), storage -> host -> device",
     L, NULL, NULL, ANY},
    {"gflop_per_s", "GFLOP/s",
     "model FLOPs per second the run achieved; FLOPs counted from the workload's shapes "
     "(tb_flops.h: 2 per multiply-add of every matrix product, causal attention counted once, "
     "training = 3 x forward), the count the performance model uses",
     H, NULL, NULL, 0},
    {"gbyte_per_s", "GB/s",
     "minimum bytes a decode step must read (every weight once plus the KV cache) per second of "
     "decode",
     H, NULL, NULL, 0},
    {"loss", "nats",
     "training loss (cross-entropy) of the last timed step, a check that training ran", N, NULL,
     NULL, 0},
    {"avg_power_w", "W",
     "GPU board power over the timed repetitions: NVML's energy counter difference / time", L, NULL,
     NULL, 0},
    {"j_per_token", "J/token", "GPU energy per token processed: NVML energy / tokens", L, NULL,
     NULL, 0},
    {"j_per_image", "J/image", "GPU energy per image generated: NVML energy / images", L, NULL,
     NULL, 0},
    {"device_mem_gib", "GiB",
     "device memory the GPU engine holds for the run (weights, optimizer state, activations, KV "
     "cache), besides the CUDA context and the cuBLASLt workspace",
     N, NULL, NULL, 0},
    {"busbw_gbyte_per_s", "GB/s",
     "a collective's bus bandwidth, nccl-tests' convention: bytes x the op's bus factor "
     "(all-reduce 2(n-1)/n, all-gather, reduce-scatter and all-to-all (n-1)/n, sendrecv 1) / "
     "time, comparable across rank counts",
     H, NULL, NULL, 0},
    {"algbw_gbyte_per_s", "GB/s", "a collective's algorithm bandwidth: its buffer's bytes / time",
     H, NULL, NULL, 0},
    {"latency_us", "us",
     "a collective's time per operation: over MPI and NCCL the mean over the timed iterations of "
     "the slowest rank's time; from nccom-test the statistic it printed, its mean when it "
     "printed one (the row's notes say which; the mean column is filled for a mean only)",
     L, NULL, NULL, 0},
    {"host_mem_gbyte_per_s", "GB/s",
     "the host's memory bandwidth before a collectives sweep within one host (shm, loopback, "
     "tcp): rank 0's STREAM triad on one thread over 3 x 32 MiB, the median of 5; the raw "
     "bandwidth the model's comparison and calibration use for that run",
     H, NULL, NULL, 0},
    {"usd_per_kimage", "USD",
     "cost of one thousand images: usd_per_hour / (images_per_s x 3600) x 10^3", L, NULL, NULL, 0},
    {"usd_per_mtok_in", "USD",
     "cost of one million prompt tokens in prefill: usd_per_hour / (prefill_tokens_per_s x 3600) x "
     "10^6",
     L, NULL, NULL, 0},
    {"usd_per_mtok_out", "USD",
     "cost of one million output tokens: usd_per_hour / (decode_tokens_per_s or "
     "output_tokens_per_s x 3600) x 10^6",
     L, NULL, NULL, 0},
    {"usd_per_mtok_train", "USD",
     "cost of training on one million tokens: usd_per_hour / (train_tokens_per_s x 3600) x 10^6", L,
     NULL, NULL, 0},
    {"usd_per_mtok_total", "USD",
     "cost of one million prompt plus output tokens: usd_per_hour / (total_tokens_per_s x 3600) x "
     "10^6",
     L, NULL, NULL, 0},
    {"tokens_per_usd", "tokens",
     "tokens processed for one US dollar: tokens_per_s x 3600 / usd_per_hour", H, NULL, NULL, 0},
};

const struct tb_metric *tb_metric_find(const char *name)
{
    for (size_t i = 0; i < sizeof METRICS / sizeof METRICS[0]; i++)
        if (!strcmp(METRICS[i].name, name))
            return &METRICS[i];
    return NULL;
}

const struct tb_metric *tb_metric_all(size_t *n)
{
    *n = sizeof METRICS / sizeof METRICS[0];
    return METRICS;
}
