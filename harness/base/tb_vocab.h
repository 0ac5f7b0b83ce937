/*
 * harness/base/tb_vocab.h: the vocabulary of shared/DESIGN.md §2 in one place: the phases
 * and the metrics (name, unit, definition, which way is better, the cost metric a
 * throughput feeds, its per-chip twin and the phases the performance model predicts it
 * for). Every stage (executors, recorder, model, cost, report) takes names, units and
 * definitions from here; a report states each definition once because the code does.
 */
#ifndef TB_VOCAB_H
#define TB_VOCAB_H

#include <stddef.h>

/* What a workload does. prefill, decode and train run on the engines (Llama);
 * denoise on the diffusion engines; serve (generation of seq_out tokens after a
 * seq_in prompt, at a batch or concurrency) is the model's and the endpoint's. */
enum tb_phase {
    TB_PHASE_PREFILL,
    TB_PHASE_DECODE,
    TB_PHASE_TRAIN,
    TB_PHASE_DENOISE, /* image generation: steps of a diffusion denoiser */
    TB_PHASE_SERVE,   /* prompt in, seq_out tokens out, per request */
};
#define TB_NPHASES      5
#define TB_PHASE_BIT(p) (1u << (p))

/* "prefill", ...; "unknown" outside the enum. */
const char *tb_phase_to_string(enum tb_phase p);
/* 0 and *out set, or -1 for an unknown name. */
int tb_phase_from_string(const char *s, enum tb_phase *out);

enum tb_better {
    TB_BETTER_NEITHER, /* a check or a fact (loss, memory) */
    TB_BETTER_HIGHER,
    TB_BETTER_LOWER,
};

struct tb_metric {
    const char *name;       /* results.csv's metric: "output_tokens_per_s" */
    const char *unit;       /* results.csv's unit: "tokens/s" */
    const char *definition; /* the report's one sentence; NULL: none recorded */
    enum tb_better better;
    const char *cost;     /* the cost metric this throughput prices ("usd_per_mtok_out"), or NULL */
    const char *per_chip; /* its per-chip twin ("output_tokens_per_s_per_chip"), or NULL */
    unsigned modeled;     /* TB_PHASE_BITs whose predictions the run records it for */
};

/* The metric called name, or NULL. */
const struct tb_metric *tb_metric_find(const char *name);
/* Every metric, in the table's order (the order predictions record them in). */
const struct tb_metric *tb_metric_all(size_t *n);

#endif
