/*
 * harness/measure/tb_peer.h: peers, other software timed on the same work as trnbench's GPU
 * executor so that its figures have a yardstick (`trnbench perf --gpu --peer NAME`).
 * The one peer so far is PyTorch: workloads/peers/pytorch_llama.py, run by a Python
 * interpreter as a child process (tb_proc.h: an argv, no shell, a time limit).
 * trnbench never needs the peer: without the interpreter, torch or a CUDA device for
 * it, the comparison is skipped with the reason.
 *
 * The protocol, which the script's docstring states from its side:
 *   python SCRIPT --model FILE.model [--layers N] --phase P --batch B --seq T
 *                 --seq-out N --reps R --warmup W --seed S --mode eager,compile
 *   stdout  CSV, header TB_PEER_COLUMNS (more columns are allowed), one line per
 *           phase and mode measured; times are seconds of one unit of work: the
 *           batch's prefill, one decode step (a repetition's N steps / N), one
 *           training step; samples_s lists each timed repetition's unit, ';' between
 *   stderr  progress; the last line says why when it did not measure
 *   exit    0 measured, 3 cannot measure here (no torch, no CUDA device), else failed
 *
 * Ownership: a tb_peer_output owns its rows and their samples; release it with
 * tb_peer_output_release, also after a failure.
 */
#ifndef TB_PEER_H
#define TB_PEER_H

#include "tb_arch.h"
#include "tb_suite.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TB_PEER_EXIT_UNAVAILABLE 3
#define TB_PEER_NCOLS            21
extern const char *const TB_PEER_COLUMNS[TB_PEER_NCOLS];

/* One measurement of the peer: one phase at one batch in one mode. */
struct tb_peer_row {
    char peer[32];    /* "pytorch" */
    char version[64]; /* the peer's version ("2.5.1+cu124") */
    char mode[16];    /* "eager" or "compile" */
    char device[128]; /* the device as the peer names it */
    char model[64];   /* model name, "@Ln" when shortened */
    enum tb_phase phase;
    int layers, batch, seq_in, seq_out, reps, warmup;
    double median_s, min_s, max_s, mean_s, stddev_s; /* seconds of one unit */
    double tokens_per_s;                             /* tokens of one unit / median_s */
    double flops;                                    /* model FLOPs of one unit */
    double *samples_s; /* owned: [reps] seconds of one unit, each timed repetition */
    char notes[512];   /* how it ran (mode, attention path, versions) */
    long line;         /* line of the output it came from */
};

struct tb_peer_output {
    struct tb_peer_row *rows; /* owned: [nrows] */
    size_t nrows;
};

/* Read the peer's stdout (len bytes of text; name for messages, e.g. "pytorch peer
 * output"). Every field is checked: numbers in range, min <= median, mean <= max,
 * reps samples, tokens_per_s = tokens of one unit / median_s. Returns 0, or -1 with
 * "name: line N: field 'median_s': ..." in err (o then empty). */
int tb_peer_parse(struct tb_peer_output *o, const char *name, const char *text, size_t len,
                  char *err, size_t errlen);
void tb_peer_output_release(struct tb_peer_output *o);

/* What the peer is asked to measure. */
struct tb_peer_request {
    const char *peer;           /* borrowed: "pytorch" */
    const char *python;         /* borrowed: the interpreter, looked up on PATH */
    const char *script;         /* borrowed: the peer's script */
    const struct tb_arch *arch; /* borrowed: its file is passed, --layers when shortened */
    enum tb_phase phase;        /* prefill, decode or train */
    int batch, seq_in, seq_out, reps, warmup;
    uint64_t seed;
    const char *modes; /* borrowed: "eager,compile", "eager" or "compile" */
    double timeout_s;  /* for the whole child; 0: none */
    FILE *echo;        /* borrowed: gets the peer's progress lines; NULL: none */
};

/* Whether row answers q: peer, model and layers, phase, batch, lengths, repetitions,
 * and model FLOPs of one unit as trnbench counts them (tb_flops.h, to 1e-6), so a
 * peer that read the model file differently is caught. Returns 0, or -1 with "name:
 * line N: field 'batch': 64, but 1 was asked" in err. */
int tb_peer_check(const struct tb_peer_row *row, const char *name, const struct tb_peer_request *q,
                  char *err, size_t errlen);

enum tb_peer_status {
    TB_PEER_OK = 0,          /* measured: *o holds the rows, each checked */
    TB_PEER_FAILED = -1,     /* it failed, timed out or wrote malformed output: msg says */
    TB_PEER_UNAVAILABLE = 1, /* it cannot measure here (no interpreter, torch or CUDA) */
};

/* Run the peer for q and read its rows into *o (release it in every case). Returns a
 * tb_peer_status with msg set: why it is unavailable, or what failed. */
int tb_peer_run(const struct tb_peer_request *q, struct tb_peer_output *o, char *msg,
                size_t msglen);

/* The row of o for phase and batch with the most tokens per second, or NULL. */
const struct tb_peer_row *tb_peer_best(const struct tb_peer_output *o, enum tb_phase phase,
                                       int batch);

/* The script of peer NAME: <datadir>/workloads/peers/NAME_llama.py. Returns 0, or -1
 * for a peer trnbench does not know ("unknown peer 'x' (known: pytorch)"). */
int tb_peer_script(const char *name, char *path, size_t len, char *err, size_t errlen);

#endif
