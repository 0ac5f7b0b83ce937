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
 * "code": null}}: 400 bad JSON (invalid UTF-8 included), wrong types, numbers out of
 * range, ids outside the vocabulary, a prompt over max_model_len tokens, max_tokens out
 * of range; 404 unknown path or model; 405 wrong method; 413 a body over max_body_bytes;
 * 503 when the server is stopping or has max_connections open.
 *
 * Limits against hostile or broken clients (tb_server_opts; 0 takes the default):
 *   max_body_bytes   a request body at most (16 MiB): a Content-Length over it is
 *                    answered 413 at once, before any of the body is read; a chunked
 *                    body is answered (or, where MHD takes no answer mid-upload, the
 *                    connection closed) as soon as it passes the limit: memory stays
 *                    bounded by the limit per connection.
 *   read_timeout_s   a request's headers and body must arrive whole within this time
 *                    of the connection's start (or of the previous answer on a kept-
 *                    alive connection) (30 s), and a stream's client must take its bytes
 *                    within this time of their being ready (time waiting for the engine
 *                    does not count); else a watchdog thread shuts the socket down. It
 *                    bounds slow senders (a byte a second never trips an idle timeout),
 *                    readers that stop reading, and idle kept-alive connections; the
 *                    generation itself takes as long as it takes.
 *   max_connections  open connections at most (1024); up to 64 more are accepted only to
 *                    be answered 503 with "Connection: close", beyond that libmicrohttpd
 *                    closes them unanswered.
 *   max_model_len    the prompt (ids, or words of a text) plus max_tokens, checked
 *                    before anything is allocated for the prompt.
 * A refused request never reaches the batcher: other requests go on unharmed.
 *
 * Threads: libmicrohttpd's internal poll() thread accepts; every connection gets a
 * thread of its own (MHD_USE_THREAD_PER_CONNECTION, 1 MiB of stack), which blocks on its
 * request's tokens: simple, and hundreds of concurrent streams cost hundreds of mostly
 * idle threads; max_connections bounds them. A watchdog thread enforces read_timeout_s.
 *
 * Ownership: the server borrows the batcher (it must outlive tb_server_free).
 */
#ifndef TB_SERVER_H
#define TB_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#define TB_SERVER_MAX_BODY_BYTES  ((size_t)16 << 20) /* tb_server_opts.max_body_bytes 0 */
#define TB_SERVER_READ_TIMEOUT_S  30.0               /* tb_server_opts.read_timeout_s 0 */
#define TB_SERVER_MAX_CONNECTIONS 1024               /* tb_server_opts.max_connections 0 */

struct tb_batcher;

struct tb_server_opts {
    const char *host;           /* IPv4 or IPv6 address, or "localhost" */
    int port;                   /* 0: a free one (tb_server_port says which) */
    const char *served_name;    /* the model's name in the API */
    int vocab;                  /* token ids in [0, vocab) */
    int max_model_len;          /* prompt + max_tokens limit */
    struct tb_batcher *batcher; /* borrowed */
    size_t max_body_bytes;      /* 0: TB_SERVER_MAX_BODY_BYTES */
    double read_timeout_s;      /* 0: TB_SERVER_READ_TIMEOUT_S */
    long max_connections;       /* 0: TB_SERVER_MAX_CONNECTIONS */
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

/* What the limits refused so far: connections answered 503, connections dropped at
 * the read timeout, bodies answered 413. */
void tb_server_stats(struct tb_server *s, long *refused, long *timed_out, long *too_big);

/* The request-body check the POST paths run, without a server or a socket (for tests
 * and fuzzing): body of len bytes (need not be NUL-terminated) as a completion, or a
 * chat completion when chat, against o's served_name, vocab and max_model_len. Returns
 * 0 with the prompt's token count in *ntokens, or the HTTP status (400, 404) with the
 * message in err and the offending field in *param (NULL when none). */
unsigned tb_server_parse_body(const struct tb_server_opts *o, const char *body, size_t len,
                              bool chat, int *ntokens, const char **param, char *err,
                              size_t errlen);

/* The text tokenizer above: up to cap ids of text into ids; returns how many words the
 * text has (may exceed cap). */
int tb_server_tokenize(const char *text, int vocab, int *ids, int cap);

#endif
