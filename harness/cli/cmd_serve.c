/*
 * harness/cli/cmd_serve.c: `trnbench serve`, one of our engines behind the OpenAI API
 * with continuous batching: parses the options, sets up the engine (the CPU Llama
 * engine with max_num_seqs cache slots of max_model_len positions, the GPU Llama engine
 * of the CUDA plugin with as many, or the instant engine), the batcher
 * (harness/serve/tb_batcher.h) and the HTTP server
 * (harness/serve/tb_server.h), prints one line when it listens, and runs until SIGTERM
 * or SIGINT, then ends cleanly with exit status 0.
 */
#include "cli.h"
#include "cli_opt.h"
#include "tb_arch.h"
#include "tb_batcher.h"
#include "tb_gpu.h"
#include "tb_server.h"
#include "tb_util.h"

#include "workloads/llama/llama.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fputs("usage: trnbench serve --model NAME|PATH [--layers N] [--served-model-name NAME]\n"
          "                      [--host ADDR] [--port P] [--engine cpu|cuda|instant]\n"
          "                      [--step-us US]\n"
          "                      [--max-num-seqs N] [--max-model-len N]\n"
          "                      [--kv-cache-tokens N] [--seed S]\n"
          "                      [--max-body-bytes N] [--read-timeout S]\n"
          "                      [--max-connections N]\n"
          "\n"
          "Serve a Llama model of the catalogue through the OpenAI API (GET /v1/models,\n"
          "POST /v1/completions and /v1/chat/completions, streamed or not; GET /health and\n"
          "/version) with continuous batching: each engine iteration admits waiting\n"
          "requests in arrival order while the sequence and KV-cache budgets allow,\n"
          "prefills one prompt, and decodes one token for every running sequence in one\n"
          "batched step. Weights are random (drawn from the seed) and decoding is greedy\n"
          "(temperature and the like are ignored); a sequence ends at max_tokens (the\n"
          "models have no EOS token).\n"
          "Prompts are token ids in [0, vocab), or text: each white-space-separated word is\n"
          "the token FNV-1a-32(word) % vocab. Token id t reads as the text \" t<id>\".\n"
          "Each streamed chunk carries t_sent_ns, the server's CLOCK_MONOTONIC nanoseconds\n"
          "when it was queued for sending.\n"
          "When it listens it prints one line on stdout:\n"
          "  trnbench serve: listening on http://HOST:PORT/v1 (model NAME, engine E, "
          "max-num-seqs N)\n"
          "\n"
          "  --model NAME|PATH       catalogue name (trnbench run --list) or a .model file\n"
          "  --layers N              keep the first N layers of the model\n"
          "  --served-model-name S   the name in the API (default: the catalogue name)\n"
          "  --host ADDR             address to listen on (default 127.0.0.1)\n"
          "  --port P                port (default 8000; 0: a free one, see the line above)\n"
          "  --engine E              cpu (the CPU Llama engine, default), cuda (the GPU\n"
          "                          Llama engine of the CUDA plugin on the first GPU, bf16;\n"
          "                          exit 1 with the reason where there is none), or\n"
          "                          instant (no model: output token i of a prompt of n\n"
          "                          tokens is (n + i) % vocab, at once; measures a load\n"
          "                          client)\n"
          "  --step-us US            instant engine: a decode step every US microseconds\n"
          "                          (every running stream gets a token each step, as\n"
          "                          from a batched engine); 0 (default): back to back\n"
          "  --max-num-seqs N        sequences decoded together (default 16)\n"
          "  --max-model-len N       prompt + output tokens per request (default the\n"
          "                          model's context, at most 4096)\n"
          "  --kv-cache-tokens N     KV budget: prompt + max_tokens summed over running\n"
          "                          sequences (default max-num-seqs * max-model-len)\n"
          "  --seed S                weights are drawn from it (default 1)\n"
          "  --max-body-bytes N      a request body at most (default 16777216): over it,\n"
          "                          413 (at once when Content-Length says so)\n"
          "  --read-timeout S        a request's headers and body must arrive within S\n"
          "                          seconds of the connection's start or its previous\n"
          "                          answer, and a stream's client take its bytes within\n"
          "                          S seconds, else the connection is dropped (default\n"
          "                          30; waiting for the engine does not count)\n"
          "  --max-connections N     open connections at most (default 1024); up to 64\n"
          "                          more are answered 503, further ones closed at once\n"
          "  -h, --help              this text\n"
          "\n"
          "SIGTERM or SIGINT stops it: no new connections, open streams end, exit 0.\n"
          "Exit status: 0 ok, 1 the engine or the server could not start (e.g. out of\n"
          "memory, no GPU, the port taken), 2 usage or input error.\n",
          f);
}

int tb_cmd_serve(int argc, char **argv)
{
    const char *model = NULL, *served = NULL, *host = "127.0.0.1";
    long layers = 0, port = 8000, seqs = 16, max_len = 0, kv = 0, seed = 1, step_us = 0;
    long max_body = (long)TB_SERVER_MAX_BODY_BYTES, max_conns = TB_SERVER_MAX_CONNECTIONS;
    double read_timeout = TB_SERVER_READ_TIMEOUT_S;
    enum tb_batcher_engine engine = TB_BATCHER_CPU;
    static const char *const ENGINE_NAMES[] = {
        [TB_BATCHER_CPU] = "cpu", [TB_BATCHER_INSTANT] = "instant", [TB_BATCHER_CUDA] = "cuda"};
    struct tb_arch arch;
    struct tb_llama m;
    struct tb_gpu g;
    struct tb_batcher *b = NULL;
    struct tb_server *srv = NULL;
    bool have_model = false, have_gpu = false;
    char err[1024], catalogue_name[sizeof arch.name];
    sigset_t sigs;
    int rc, sig;

    /* --engine's values in the usage's order, and the engines they name */
    static const char *const ENGINE_ARGS[] = {"cpu", "cuda", "instant", NULL};
    static const enum tb_batcher_engine ENGINE_OF[] = {TB_BATCHER_CPU, TB_BATCHER_CUDA,
                                                       TB_BATCHER_INSTANT};
    int engine_k = 0;
    const struct tb_opt opts[] = {
        TB_OPT_STR("model", &model),
        TB_OPT_LONG("layers", &layers, 1, 100000),
        TB_OPT_STR("served-model-name", &served),
        TB_OPT_STR("host", &host),
        TB_OPT_LONG("port", &port, 0, 65535),
        TB_OPT_CHOICE("engine", &engine_k, ENGINE_ARGS),
        TB_OPT_LONG("max-num-seqs", &seqs, 1, 4096),
        TB_OPT_LONG("max-model-len", &max_len, 2, INT_MAX / 2),
        TB_OPT_LONG("kv-cache-tokens", &kv, 2, 1L << 40),
        TB_OPT_LONG("seed", &seed, 0, (double)LONG_MAX),
        TB_OPT_LONG("step-us", &step_us, 0, 10000000),
        TB_OPT_LONG("max-body-bytes", &max_body, 1, 1L << 32),
        TB_OPT_DOUBLE("read-timeout", &read_timeout, 0.01, 86400),
        TB_OPT_LONG("max-connections", &max_conns, 1, 100000),
        TB_OPT_END,
    };

    memset(&m, 0, sizeof m);
    memset(&g, 0, sizeof g);
    if ((rc = tb_cli_parse("serve", argc, argv, opts, usage)) != TB_CLI_GO)
        return rc;
    rc = 1;
    engine = ENGINE_OF[engine_k];
    if (optind < argc) {
        fprintf(stderr, "trnbench serve: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (!model) {
        fprintf(stderr, "trnbench serve: --model is required\n");
        usage(stderr);
        return 2;
    }
    if (tb_arch_find(&arch, model, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench serve: %s\n", err);
        return 2;
    }
    snprintf(catalogue_name, sizeof catalogue_name, "%s", arch.name);
    if (layers > 0 && tb_arch_truncate(&arch, (int)layers, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench serve: --layers %ld: %s\n", layers, err);
        return 2;
    }
    if (!served)
        served = catalogue_name;
    if (!*served) {
        fprintf(stderr, "trnbench serve: --served-model-name is empty\n");
        return 2;
    }
    if (max_len == 0)
        max_len = arch.max_context < 4096 ? arch.max_context : 4096;
    if (max_len > arch.max_context) {
        fprintf(stderr, "trnbench serve: --max-model-len %ld: over %s's context of %d tokens\n",
                max_len, arch.name, arch.max_context);
        return 2;
    }
    if (kv == 0)
        kv = seqs * max_len;

    /* the engine: refuse up front what cannot fit in this machine's memory (the
     * parameters are written at set-up, so an overcommitted mapping would be killed) */
    if (engine == TB_BATCHER_CPU) {
        double gib = 1024.0 * 1024 * 1024;
        double params_b = 4 * tb_arch_params_total(&arch);
        double kv_b =
            8.0 * arch.layers * (double)seqs * arch.kv_heads * (double)max_len * arch.head_dim;
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        double phys_b = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
        if (phys_b > 0 && params_b + kv_b > phys_b) {
            fprintf(stderr,
                    "trnbench serve: out of memory: %s needs %.1f GiB of fp32 parameters and "
                    "%.1f GiB of KV cache (%ld sequences of %ld tokens), this machine has %.1f "
                    "GiB: lower --max-num-seqs or --max-model-len, or use --layers\n",
                    arch.name, params_b / gib, kv_b / gib, seqs, max_len, phys_b / gib);
            return 1;
        }
        if (tb_llama_init(&m, &arch, (int)seqs, (int)max_len, 0, (uint64_t)seed, err, sizeof err) !=
            0) {
            fprintf(stderr,
                    "trnbench serve: cannot set up the engine for %ld sequences of %ld tokens: "
                    "%s\n",
                    seqs, max_len, err);
            return 1;
        }
        have_model = true;
    }
    if (engine == TB_BATCHER_CUDA) {
        /* the GPU's memory is the plugin's to refuse (llama_init names what did not fit);
         * the CPU engine only draws the weights: one slot of one position */
        if (tb_gpu_open(&g, 0, 0) != 0) {
            fprintf(stderr, "trnbench serve: --engine cuda: %s\n", g.why);
            tb_gpu_close(&g);
            return 1;
        }
        have_gpu = true;
        if (tb_llama_init(&m, &arch, 1, 1, 0, (uint64_t)seed, err, sizeof err) != 0) {
            fprintf(stderr, "trnbench serve: cannot draw the weights of %s: %s\n", arch.name, err);
            goto out;
        }
        have_model = true;
    }

    /* signals: every thread below inherits the mask; this one waits for them */
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct tb_batcher_opts bo = {.engine = engine,
                                 .model = have_model ? &m : NULL,
                                 .gpu = have_gpu ? &g : NULL,
                                 .vocab = arch.vocab,
                                 .max_num_seqs = (int)seqs,
                                 .max_model_len = (int)max_len,
                                 .kv_cache_tokens = kv,
                                 .eos_id = -1,
                                 .step_s = step_us * 1e-6};
    if (tb_batcher_new(&b, &bo, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench serve: %s\n", err);
        goto out;
    }
    if (engine == TB_BATCHER_CUDA) {
        /* the device has its own copy now */
        tb_llama_release(&m);
        have_model = false;
    }
    struct tb_server_opts so = {.host = host,
                                .port = (int)port,
                                .served_name = served,
                                .vocab = arch.vocab,
                                .max_model_len = (int)max_len,
                                .batcher = b,
                                .max_body_bytes = (size_t)max_body,
                                .read_timeout_s = read_timeout,
                                .max_connections = max_conns};
    if (tb_server_listen(&srv, &so, err, sizeof err) != 0) {
        fprintf(stderr, "trnbench serve: %s\n", err);
        rc = strstr(err, "host '") ? 2 : 1;
        goto out;
    }
    printf("trnbench serve: listening on http://%s%s%s:%d/v1 (model %s, engine %s, "
           "max-num-seqs %ld)\n",
           strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", tb_server_port(srv),
           served, ENGINE_NAMES[engine], seqs);
    fflush(stdout);

    if (sigwait(&sigs, &sig) != 0) {
        fprintf(stderr, "trnbench serve: sigwait failed\n");
        goto out;
    }
    fprintf(stderr, "trnbench serve: %s: stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    {
        long refused, timed_out, too_big;
        tb_server_stats(srv, &refused, &timed_out, &too_big);
        if (refused || timed_out || too_big)
            fprintf(stderr,
                    "trnbench serve: limits: %ld connections refused (503, --max-connections), "
                    "%ld dropped at --read-timeout, %ld bodies over --max-body-bytes (413)\n",
                    refused, timed_out, too_big);
    }
    rc = 0;
out:
    tb_server_free(srv);
    tb_batcher_free(b);
    if (have_model)
        tb_llama_release(&m);
    if (have_gpu)
        tb_gpu_close(&g);
    return rc;
}
