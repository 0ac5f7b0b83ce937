/*
 * harness/serve/tb_server.h: the OpenAI-compatible HTTP front of `trnbench serve`:
 * libmicrohttpd for HTTP (no parsing of our own), jansson for JSON, requests handed to
 * a continuous batcher (tb_batcher.h).
 *
 * Endpoints:
 *   GET  /health               200
 *   GET  /version              {"version": "trnbench <commit>"}
 *   GET  /v1/models            the one served model (OpenAI list, with max_model_len)
 *   POST /v1/completions       prompt: a string or a list of token ids in [0, vocab)
 *   POST /v1/chat/completions  messages: their text contents, concatenated in order
 * Options of both POSTs: model (must be the served name if given: else 404),
 * max_tokens (default 16, in [1, max_model_len]; chat also max_completion_tokens),
 * min_tokens, ignore_eos, stream, stream_options.include_usage, return_token_ids
 * (token_ids in each choice), n (1 only). Others (temperature, top_p, seed, ...) are
 * accepted and ignored: decoding is greedy.
 *
 * Text: the model has random weights and no tokenizer, so text is a fixed scheme. A
 * string is split at white space and each word becomes the token FNV-1a-32(word) %
 * vocab; token id t reads as the text " t<id>" (so " t17 t4" are two tokens).
 *
 * Streams are server-sent events, one chunk per token as the engine produces it; each
 * chunk carries "t_sent_ns", the CLOCK_MONOTONIC nanoseconds when it was queued for
 * sending (a load client measures its own latency against it). The last content chunk
 * has finish_reason "length" (or "stop"); with include_usage a chunk with empty
 * choices and usage {prompt_tokens, completion_tokens, total_tokens} follows; then
 * "data: [DONE]". A client that disconnects cancels its sequence (noticed at the next
 * token written); a non-streaming request runs to its end.
 *
 * Errors are OpenAI's {"error": {"message", "type": "invalid_request_error", "param",
 * "code": null}}: 400 bad JSON, wrong types, ids outside the vocabulary, too long,
 * max_tokens out of range; 404 unknown path or model; 405 wrong method; 413 a body over
 * 16 MiB; 503 when the server is stopping.
 *
 * Threads: libmicrohttpd's internal poll() thread accepts; every connection gets a
 * thread of its own (MHD_USE_THREAD_PER_CONNECTION), which blocks on its request's
 * tokens: simple, and hundreds of concurrent streams cost hundreds of mostly idle
 * threads.
 *
 * Ownership: the server borrows the batcher (it must outlive tb_server_free).
 */
#ifndef TB_SERVER_H
#define TB_SERVER_H

#include <stdbool.h>
#include <stddef.h>

struct tb_batcher;

struct tb_server_opts {
    const char *host;           /* IPv4 or IPv6 address, or "localhost" */
    int port;                   /* 0: a free one (tb_server_port says which) */
    const char *served_name;    /* the model's name in the API */
    int vocab;                  /* token ids in [0, vocab) */
    int max_model_len;          /* prompt + max_tokens limit */
    struct tb_batcher *batcher; /* borrowed */
};

struct tb_server;

/* Listen and serve on threads of its own. Returns 0 with *out, or -1 with a message
 * (a bad host, the port taken). */
int tb_server_listen(struct tb_server **out, const struct tb_server_opts *o, char *err,
                     size_t errlen);
/* The port listened on. */
int tb_server_port(const struct tb_server *s);
/* Stop accepting, stop the batcher (open streams end, new requests get 503), close
 * every connection, free. NULL is fine. */
void tb_server_free(struct tb_server *s);

/* A request body parsed and checked as POST /v1/completions (chat false) or
 * /v1/chat/completions (chat true) does, without a socket (the fuzzer, tests/fuzz/
 * server_request.c): o's vocab, max_model_len and served_name apply. Returns 0 with the
 * prompt's *n token ids in *ids (malloc'ed: the caller frees), or the HTTP status (400,
 * 404) with the message in err and *ids NULL. */
int tb_server_parse_request(const struct tb_server_opts *o, bool chat, const char *body, size_t len,
                            int **ids, int *n, char *err, size_t errlen);

/* The text tokenizer above: up to cap ids of text into ids; returns how many words the
 * text has (may exceed cap). */
int tb_server_tokenize(const char *text, int vocab, int *ids, int cap);

#endif
