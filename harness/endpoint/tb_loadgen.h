/*
 * harness/endpoint/tb_loadgen.h: the load client of the endpoint executor: one load
 * level (a closed-loop concurrency, or open-loop Poisson arrivals at a request rate)
 * against an OpenAI-compatible server (vLLM, vllm-neuron, NxD Inference, TGI, SGLang,
 * TensorRT-LLM, `trnbench serve`), every request streamed and timed.
 *
 * HTTP is libcurl's multi interface on one thread (no thread per request), driven by
 * its sockets in an epoll set (Linux); JSON is jansson; the server-sent events are
 * parsed incrementally (tb_sse.h) as bytes arrive.
 *
 * One request: POST {base_url}/completions (or /chat/completions) with
 *   model = served_model, stream = true, stream_options.include_usage = true,
 *   max_tokens = seq_out, min_tokens = seq_out, ignore_eos = true (the extra keys vLLM,
 *   SGLang and trnbench serve take: exact output lengths), temperature 0, and
 *   prompt = seq_in token ids drawn from the seed in [0, vocab) (completions), or a text
 *   of about seq_in tokens (chat, or a server that refused id arrays: see text_prompts).
 * Times are CLOCK_MONOTONIC seconds from the level's start: sent, first content chunk
 * (TTFT), every later content chunk (ITL), the end of the stream (E2E). Output tokens
 * are the stream's usage.completion_tokens when it sends usage, else the content chunks
 * counted; a count that differs from seq_out (or prompt_tokens from seq_in, when the
 * prompt went as ids: a text's count is only about seq_in) is a mismatch, counted and
 * kept, never corrected. A content chunk is one whose choices[0].text (completions) or
 * choices[0].delta.content (chat) is a non-empty string: the chat stream's first chunk,
 * a role alone, is not one.
 *
 * Failures (each request's reason kept; the level goes on): connection refused or
 * dropped, an HTTP status other than 200 (with the server's error message), a 200 whose
 * Content-Type is not text/event-stream, a malformed event or JSON (invalid UTF-8
 * named as such), a stream that ends without "data: [DONE]" or without any content, the
 * per-request timeout, and the limits below. The level ends when its requests are done
 * or at its own timeout (requests still open then fail with "level timeout"): a bad
 * server costs bounded time. Text from the server in a reason (its error message) is
 * scrubbed to valid UTF-8 without control characters (tb_utf8_scrub).
 *
 * Limits against a hostile or broken server, per request (tb_load_spec; 0 takes the
 * default): an SSE line or event at most max_event_bytes (1 MiB: a 100 MB event without a
 * newline costs 1 MiB); a response at most max_response_bytes (64 MiB: an endless stream
 * ends there, or at the request timeout, whichever comes first); at most 4 x seq_out + 64
 * content chunks (their times are kept: the bound bounds that memory too); the
 * request_timeout_s (120 s: a drip of a byte a second ends there). Memory per request in
 * flight is then at most about 2 x max_event_bytes plus 8 bytes a content chunk. A
 * failed request never stops the others: their figures are recorded as usual.
 *
 * Ownership: a tb_load_result owns its arrays; release with tb_load_result_release,
 * also after a failure. Not thread-safe (curl_global_init is called once, lazily).
 */
#ifndef TB_LOADGEN_H
#define TB_LOADGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TB_LOAD_MAX_RESPONSE_BYTES ((size_t)64 << 20) /* tb_load_spec.max_response_bytes 0 */

enum tb_api {
    TB_API_COMPLETIONS, /* /v1/completions, prompt as token ids */
    TB_API_CHAT,        /* /v1/chat/completions, one user message of text */
};

struct tb_load_spec {
    const char *base_url;     /* "http://HOST:PORT/v1" (a trailing '/' is allowed) */
    const char *served_model; /* the server's name for the model */
    enum tb_api api;
    int seq_in, seq_out; /* prompt tokens, output tokens asked */
    int vocab;           /* prompt ids are drawn in [0, vocab) */
    uint64_t seed;       /* prompts and arrivals */
    /* The load: closed loop when request_rate == 0 (concurrency requests in flight, a
     * new one sent as soon as one ends); open loop otherwise (Poisson arrivals at
     * request_rate per second, INFINITY: all at once), at most concurrency in flight
     * when concurrency > 0. */
    int concurrency;
    double request_rate;
    int requests;              /* counted requests; 0: as many as duration_s allows */
    double duration_s;         /* with requests == 0: send for this long, then drain */
    int warmup_requests;       /* sent first (at the same load), finished, never counted */
    double request_timeout_s;  /* per request (0: 120) */
    size_t max_event_bytes;    /* an SSE line or event (0: TB_SSE_MAX_BYTES, 1 MiB) */
    size_t max_response_bytes; /* a response's body (0: TB_LOAD_MAX_RESPONSE_BYTES) */
    double level_timeout_s;    /* the whole level, warm-up included (0: derived: requests /
                                  concurrency rounds of request_timeout_s, capped at 1 h) */
    bool text_prompts;         /* send text even to /completions (a server that refused ids) */
    /* Client threads: the level's streams split over this many event loops, each a curl
     * multi handle and an epoll set of its own on a thread of its own (a burst of 256
     * chunks at ~15 us each is ~4 ms on one thread). 0: one per 64 streams, at most one
     * per core but one, at least 1; 1: one thread. Concurrency, requests, warm-up and
     * rate are divided among them, each with a seed of its own; the requests are merged
     * on one clock. */
    int threads;
};

/* One counted request. */
struct tb_request_rec {
    double t_sent;       /* seconds from the level's start */
    double t_first;      /* first content chunk; NAN when none came */
    double t_end;        /* stream end or failure */
    int prompt_tokens;   /* usage.prompt_tokens; -1 when the server sent no usage */
    int output_tokens;   /* usage.completion_tokens, else content chunks counted */
    bool usage_reported; /* output_tokens came from usage */
    int chunks;          /* content chunks (events carrying text or token ids) */
    double *chunk_t;     /* owned: [chunks] arrival time of each content chunk */
    double lag_max_s;    /* chunks that carry the server's send time ("t_sent_ns",
                            CLOCK_MONOTONIC, trnbench serve --engine instant): the largest
                            arrival minus send; NAN when none did */
    bool ok;
    int http_status; /* 0 when no response */
    char error[160]; /* why not ok: "HTTP 500: <message>", "connection dropped", ... */
};

struct tb_load_result {
    struct tb_request_rec *reqs; /* owned: [nreqs] the counted requests, in send order */
    size_t nreqs;
    size_t ok, failed;           /* of them */
    size_t mismatched;           /* ok requests whose token counts differ from those asked */
    double window_s;             /* first counted send to last counted end */
    double achieved_concurrency; /* time-average requests in flight over the window */
    double achieved_rate;        /* counted requests sent per second of sending */
    bool text_prompts;           /* prompts went as text (asked, chat, or ids refused) */
    char prompt_note[160];       /* how prompts went: "token ids" or "text of about N tokens
                                    (the server refused id arrays: <reason>)" */
    char failures[512];          /* reasons grouped, with the requests' numbers (1 is the
                                    first counted one sent): "3 x HTTP 500: boom (requests
                                    2, 5, 9); 1 x request timeout (2 s) (request 4)" */
    double *lags;                /* owned: [nlags] arrival minus send of every chunk that
                                    carried t_sent_ns (seconds) */
    size_t nlags;
    double client_cpu_s; /* CPU time the client's threads spent over the level
                            (CLOCK_THREAD_CPUTIME_ID: getrusage(RUSAGE_THREAD)'s
                            figure, without _GNU_SOURCE), summed over them */
    int threads;         /* client threads the level ran on */
};

/* Run one level. Returns 0 when it ran (failed requests are counted in r, not an
 * error), or -1 with a message when it could not run at all (a bad spec, out of
 * memory, every warm-up request failing for the same reason: "connection refused").
 * Without warm-up requests a server that cannot be reached gives 0 and every counted
 * request failed ("N x connection refused" in r->failures).
 * A server that refuses id arrays with a 4xx (400 or 422: a request it cannot read) on
 * the first warm-up (or counted) request to finish is retried once with text prompts,
 * and r says so. */
int tb_load_run(const struct tb_load_spec *s, struct tb_load_result *r, char *err, size_t errlen);
void tb_load_result_release(struct tb_load_result *r);

/* GET {base_url}/models until it answers 200 with JSON (or, for servers that lack it,
 * {root}/health answers 200), every 0.2 s, at most timeout_s (<= 0: one try). Returns 0
 * when ready, -1 with the last reason otherwise. {root} is base_url without its
 * trailing "/v1". */
int tb_endpoint_wait_ready(const char *base_url, double timeout_s, char *err, size_t errlen);

/* What the server says about itself: the model ids of {base_url}/models (comma
 * separated) and, when it has one, the version from {root}/version (vLLM:
 * {"version": ...}). Either left "" when absent. Returns 0, or -1 with a message when
 * the server cannot be reached. */
int tb_endpoint_probe(const char *base_url, char *models, size_t mlen, char *version, size_t vlen,
                      char *err, size_t errlen);

/* The client's own speed, for `trnbench perf`: one closed-loop level of `requests`
 * streams of seq_out tokens (16-id prompts, no warm-up) at `concurrency` on `threads`
 * client threads (0: as tb_load_spec.threads says) against
 * base_url, printed to out: chunks received, chunks per second of wall (the window),
 * chunks per client CPU-second (client_cpu_s), and the p50, p99 and max of the
 * per-chunk lag in ms when the server puts "t_sent_ns" in its chunks (`trnbench serve
 * --engine instant` does). Returns 0, or -1 with a message when the level could not run
 * or a request failed (the figures are printed first). */
int tb_perf_client(FILE *out, const char *base_url, const char *served_model, int concurrency,
                   int requests, int seq_out, int threads, char *err, size_t errlen);

#endif
