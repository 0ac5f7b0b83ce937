/* harness/endpoint/tb_loadgen.c: see tb_loadgen.h. One thread drives every request
 * through one libcurl multi handle, event-driven (curl_multi_socket_action): curl tells
 * us its sockets, which go into an epoll set (Linux), and its timer; the loop sends what
 * the load allows now, sleeps in epoll_wait until a socket is ready, the timer is due or
 * the next arrival is, hands curl the ready sockets, and finishes the transfers curl
 * reports done. (curl_multi_poll and curl_multi_perform look at every transfer on every
 * wake-up: at 256 streams that cost a third of the client's CPU and the lag with it.) Bytes of a
 * 200 response go straight into the request's SSE parser; each event is one small JSON object
 * parsed with jansson and dropped at once. */
#include "tb_loadgen.h"

#include "tb_sbuf.h"
#include "tb_sse.h"
#include "tb_stats.h"
#include "tb_utf8.h"
#include "tb_util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define REQUEST_TIMEOUT_S   120.0             /* when the spec says 0 */
#define LEVEL_TIMEOUT_CAP_S 3600.0            /* the derived level timeout at most */
#define POLL_MAX_MS         100               /* the loop looks at the clock at least this often */
#define READY_TRY_S         1.0               /* one readiness try at most */
#define READY_EVERY_S       0.2               /* between readiness tries */
#define GET_MAX_BYTES       ((size_t)1 << 20) /* a /models or /version answer at most */
#define FAILED_LISTED       4                 /* request numbers listed per failure reason */

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* curl_global_init once (not thread-safe, as the header says). */
static int curl_ready(char *err, size_t errlen)
{
    static int done;
    if (!done) {
        CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
        if (rc != CURLE_OK)
            return tb_err(err, errlen, "cannot initialise libcurl: %s", curl_easy_strerror(rc));
        done = 1;
    }
    return 0;
}

/* ---- prompts and arrivals ---- */

/* splitmix64 (Steele, Lea and Flood, 2014): a seeded 64-bit stream. */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An exponential gap of mean 1/rate seconds: Poisson arrivals. */
static double exp_gap(uint64_t *s, double rate)
{
    double u = (double)(splitmix64(s) >> 11) * 0x1.0p-53; /* [0, 1) */
    return -log1p(-u) / rate;
}

/* Short common English words: about one token each in the usual tokenizers. */
static const char *const WORDS[] = {
    "the",   "of",    "and",   "to",    "in",    "is",   "that",  "for",   "it",    "as",
    "was",   "with",  "be",    "by",    "on",    "not",  "he",    "this",  "are",   "or",
    "his",   "from",  "at",    "which", "but",   "have", "an",    "had",   "they",  "you",
    "were",  "their", "one",   "all",   "we",    "can",  "her",   "has",   "there", "been",
    "if",    "more",  "when",  "will",  "would", "who",  "so",    "no",    "time",  "people",
    "water", "world", "house", "light", "river", "city", "paper", "music", "green", "small",
    "large", "night", "story", "field",
};
#define NWORDS (sizeof WORDS / sizeof WORDS[0])

/* ---- one level ---- */

struct run;

/* One request in flight. */
struct flight {
    struct run *run; /* borrowed */
    CURL *h;         /* owned */
    char *body;      /* owned: the request's JSON */
    struct tb_sse sse;
    long rec;            /* index into run->r->reqs; -1: a warm-up request */
    size_t slot;         /* index in run->flights */
    uint64_t arrival_ns; /* when the bytes being parsed came */
    long status;         /* the HTTP status, once the body began; 0 before */
    size_t received;     /* bytes of the body so far */
    size_t max_chunks;   /* content chunks allowed */
    bool done;           /* "data: [DONE]" came */
    bool usage;          /* the stream sent usage.completion_tokens */
    int prompt_tokens, completion_tokens;
    int chunks;      /* content chunks */
    double t_first;  /* first content chunk, seconds from the level's start */
    double *chunk_t; /* owned: [chunks] of [chunk_cap], counted requests only */
    size_t chunk_cap;
    double lag_max;     /* NAN until a chunk carried t_sent_ns */
    char why[160];      /* our own reason to fail it (a malformed event, ...) */
    char errbody[1024]; /* the body of a non-200 answer, truncated */
    size_t errbody_len;
};

struct run {
    const struct tb_load_spec *s; /* borrowed */
    struct tb_load_result *r;     /* borrowed: filled */
    bool text;                    /* prompts as text */
    CURLM *m;                     /* owned */
    struct curl_slist *headers;   /* owned */
    char *url;                    /* owned */
    uint64_t t0_ns;               /* the level's start */
    uint64_t prompt_rng, arrival_rng;
    double req_timeout_s, deadline_s;
    size_t max_response;     /* bytes of a response's body at most */
    int ep;                  /* owned: the epoll set of curl's sockets */
    int ep_errno;            /* an epoll_ctl failure, else 0 */
    double timer_due_s;      /* curl's timer; INFINITY: none */
    struct flight **flights; /* owned: [nflights] in flight */
    size_t nflights, flights_cap;
    size_t reqs_cap, lags_cap;
    size_t finished; /* requests finished, warm-up included */
    bool refused;    /* the first request was refused a 4xx: try text */
    char refused_why[160];
    size_t warm_done, warm_failed;
    bool warm_same; /* every warm-up failure had the reason of the first */
    char warm_why[160];
    bool oom;
};

static double since_s(const struct run *run, uint64_t ns)
{
    return (double)(int64_t)(ns - run->t0_ns) * 1e-9;
}

static double now_s(const struct run *run)
{
    return since_s(run, mono_ns());
}

/* The request's JSON (malloc'ed), or NULL when memory ran out. */
static char *build_body(struct run *run)
{
    const struct tb_load_spec *s = run->s;
    json_t *o = json_object(), *prompt = NULL, *opts = json_object();
    char *text = NULL, *out = NULL;
    int bad = !o || !opts;

    if (run->text) {
        size_t cap = (size_t)s->seq_in * 8 + 1, len = 0;
        text = malloc(cap);
        if (!text)
            goto out;
        for (int i = 0; i < s->seq_in; i++) {
            const char *w = WORDS[splitmix64(&run->prompt_rng) % NWORDS];
            size_t wl = strlen(w);
            if (len + wl + 2 > cap)
                break; /* cannot happen: no word is longer than 6 */
            if (i)
                text[len++] = ' ';
            memcpy(text + len, w, wl);
            len += wl;
        }
        text[len] = '\0';
        if (s->api == TB_API_CHAT) {
            json_t *msg = json_object(), *msgs = json_array();
            bad |= !msg || !msgs;
            bad |= json_object_set_new(msg, "role", json_string("user"));
            bad |= json_object_set_new(msg, "content", json_string(text));
            bad |= json_array_append_new(msgs, msg);
            bad |= json_object_set_new(o, "messages", msgs);
        } else {
            prompt = json_string(text);
        }
    } else {
        prompt = json_array();
        bad |= !prompt;
        for (int i = 0; i < s->seq_in && !bad; i++) {
            /* [0, vocab) by multiply-shift of the high 32 bits: no modulo bias to speak of */
            uint64_t x = splitmix64(&run->prompt_rng) >> 32;
            bad |= json_array_append_new(
                prompt, json_integer((json_int_t)((x * (uint64_t)s->vocab) >> 32)));
        }
    }
    bad |= json_object_set_new(o, "model", json_string(s->served_model));
    if (prompt) {
        bad |= json_object_set_new(o, "prompt", prompt);
        prompt = NULL;
    }
    bad |= json_object_set_new(o, "max_tokens", json_integer(s->seq_out));
    bad |= json_object_set_new(o, "min_tokens", json_integer(s->seq_out));
    bad |= json_object_set_new(o, "ignore_eos", json_true());
    bad |= json_object_set_new(o, "temperature", json_real(0.0));
    bad |= json_object_set_new(o, "stream", json_true());
    bad |= json_object_set_new(opts, "include_usage", json_true());
    bad |= json_object_set_new(o, "stream_options", opts);
    opts = NULL;
    if (!bad)
        out = json_dumps(o, JSON_COMPACT);
out:
    json_decref(prompt);
    json_decref(opts);
    json_decref(o);
    free(text);
    return out;
}

/* ---- the stream of one request ---- */

static int add_chunk_time(struct flight *f, double t)
{
    if ((size_t)f->chunks == f->chunk_cap) {
        size_t cap = f->chunk_cap ? 2 * f->chunk_cap : 64;
        double *p = realloc(f->chunk_t, cap * sizeof *p);
        if (!p)
            return -1;
        f->chunk_t = p;
        f->chunk_cap = cap;
    }
    f->chunk_t[f->chunks] = t;
    return 0;
}

static int add_lag(struct run *run, double lag)
{
    struct tb_load_result *r = run->r;
    if (r->nlags == run->lags_cap) {
        size_t cap = run->lags_cap ? 2 * run->lags_cap : 4096;
        double *p = realloc(r->lags, cap * sizeof *p);
        if (!p)
            return -1;
        r->lags = p;
        run->lags_cap = cap;
    }
    r->lags[r->nlags++] = lag;
    return 0;
}

/* Whether a string-valued member is a non-empty string. */
static bool nonempty_string(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) && json_string_length(v) > 0;
}

/* The error message of an OpenAI error object ({"error": {"message": ...}}), of vLLM's
 * older {"message": ...}, TGI's {"error": "..."} or FastAPI's {"detail": "..."}; NULL
 * when o has none. */
static const char *error_message(const json_t *o)
{
    const json_t *e = json_object_get(o, "error"), *v;
    if (json_is_string(e))
        return json_string_value(e);
    if (json_is_object(e) && json_is_string(v = json_object_get(e, "message")))
        return json_string_value(v);
    if (json_is_string(v = json_object_get(o, "message")))
        return json_string_value(v);
    if (json_is_string(v = json_object_get(o, "detail")))
        return json_string_value(v);
    return e ? "an error without a message" : NULL;
}

/* One event of the stream: "[DONE]", or a JSON chunk with content, usage or both. */
static int on_event(void *ctx, const char *data, size_t len)
{
    struct flight *f = ctx;
    struct run *run = f->run;
    json_t *o, *v, *choice;
    const char *msg;
    bool content = false;

    if (len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        f->done = true;
        return 0;
    }
    json_error_t je;
    o = json_loadb(data, len, 0, &je);
    if (!o) {
        if (json_error_code(&je) == json_error_invalid_utf8)
            snprintf(f->why, sizeof f->why, "malformed event %zu: invalid UTF-8 (%.40s)",
                     f->sse.events, je.text);
        else
            snprintf(f->why, sizeof f->why, "malformed event %zu: not JSON (%.40s)", f->sse.events,
                     je.text);
        return 1;
    }
    if (!json_is_object(o)) {
        snprintf(f->why, sizeof f->why, "malformed event %zu: data is not a JSON object",
                 f->sse.events);
        json_decref(o);
        return 1;
    }
    if (json_object_get(o, "error") && (msg = error_message(o)) != NULL) {
        snprintf(f->why, sizeof f->why, "error in the stream: %s", msg);
        json_decref(o);
        return 1;
    }
    choice = json_array_get(json_object_get(o, "choices"), 0);
    if (json_is_object(choice)) {
        if (run->s->api == TB_API_CHAT) {
            /* the first chunk carries only the role: not content */
            json_t *delta = json_object_get(choice, "delta");
            content =
                nonempty_string(delta, "content") || nonempty_string(delta, "reasoning_content");
        } else {
            content = nonempty_string(choice, "text") ||
                      json_array_size(json_object_get(choice, "token_ids")) > 0;
        }
    }
    if (content && (size_t)f->chunks >= f->max_chunks) {
        snprintf(f->why, sizeof f->why, "over %zu content chunks for %d tokens", f->max_chunks,
                 run->s->seq_out);
        json_decref(o);
        return 1;
    }
    if (content) {
        double t = since_s(run, f->arrival_ns);
        if (f->chunks == 0)
            f->t_first = t;
        if (f->rec >= 0 && add_chunk_time(f, t) != 0)
            goto oom;
        f->chunks++;
    }
    v = json_object_get(o, "usage");
    if (json_is_object(v) && json_is_integer(json_object_get(v, "completion_tokens"))) {
        json_t *pt = json_object_get(v, "prompt_tokens");
        f->usage = true;
        f->completion_tokens = (int)json_integer_value(json_object_get(v, "completion_tokens"));
        f->prompt_tokens = json_is_integer(pt) ? (int)json_integer_value(pt) : -1;
    }
    v = json_object_get(o, "t_sent_ns");
    if (json_is_integer(v)) {
        double lag = (double)(int64_t)(f->arrival_ns - (uint64_t)json_integer_value(v)) * 1e-9;
        if (isnan(f->lag_max) || lag > f->lag_max)
            f->lag_max = lag;
        if (f->rec >= 0 && add_lag(run, lag) != 0)
            goto oom;
    }
    json_decref(o);
    return 0;
oom:
    json_decref(o);
    run->oom = true;
    snprintf(f->why, sizeof f->why, "out of memory");
    return 1;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct flight *f = ud;
    size_t n = size * nmemb;
    int rc;
    if (f->status == 0) {
        long code = 0;
        const char *type = NULL;
        curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &code);
        f->status = code ? code : -1;
        curl_easy_getinfo(f->h, CURLINFO_CONTENT_TYPE, &type);
        if (f->status == 200 && (!type || strncasecmp(type, "text/event-stream", 17) != 0)) {
            snprintf(f->why, sizeof f->why,
                     "HTTP 200 with Content-Type %s%.60s%s, not text/event-stream", type ? "'" : "",
                     type ? type : "none", type ? "'" : "");
            return 0;
        }
    }
    if (n > f->run->max_response - f->received) {
        snprintf(f->why, sizeof f->why, "a response over %zu bytes (max_response_bytes)",
                 f->run->max_response);
        return 0;
    }
    f->received += n;
    if (f->status != 200) { /* keep the start of the error's body for its message */
        size_t room = sizeof f->errbody - 1 - f->errbody_len;
        size_t k = n < room ? n : room;
        memcpy(f->errbody + f->errbody_len, ptr, k);
        f->errbody_len += k;
        f->errbody[f->errbody_len] = '\0';
        return n;
    }
    f->arrival_ns = mono_ns();
    rc = tb_sse_feed(&f->sse, ptr, n, on_event, f);
    if (rc == 0)
        return n;
    if (rc == -1 && !f->why[0])
        snprintf(f->why, sizeof f->why, "malformed event %zu: %s (max_event_bytes)",
                 f->sse.events + 1, f->sse.err);
    return 0; /* stops the transfer: CURLE_WRITE_ERROR, f->why says why */
}

/* Why a request failed, from its HTTP status and body. */
static void http_reason(const struct flight *f, long code, char *why, size_t len)
{
    json_t *o = json_loadb(f->errbody, f->errbody_len, 0, NULL);
    const char *msg = json_is_object(o) ? error_message(o) : NULL;
    if (msg) {
        snprintf(why, len, "HTTP %ld: %s", code, msg);
    } else if (f->errbody_len) {
        char line[96];
        size_t k = strcspn(f->errbody, "\r\n");
        snprintf(line, sizeof line, "%.*s", (int)k, f->errbody);
        snprintf(why, len, "HTTP %ld: %s", code, tb_trim(line));
    } else {
        snprintf(why, len, "HTTP %ld", code);
    }
    json_decref(o);
}

static void curl_reason(const struct flight *f, CURLcode rc, double timeout_s, char *why,
                        size_t len)
{
    long oserr = 0;
    switch (rc) {
    case CURLE_COULDNT_CONNECT:
        curl_easy_getinfo(f->h, CURLINFO_OS_ERRNO, &oserr);
        if (oserr == ECONNREFUSED || oserr == 0)
            snprintf(why, len, "connection refused");
        else
            snprintf(why, len, "cannot connect: %s", strerror((int)oserr));
        break;
    case CURLE_OPERATION_TIMEDOUT:
        snprintf(why, len, "request timeout (%g s)", timeout_s);
        break;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
        snprintf(why, len, "connection dropped");
        break;
    default:
        snprintf(why, len, "%s", curl_easy_strerror(rc));
    }
}

static void flight_free(struct flight *f)
{
    if (!f)
        return;
    if (f->h)
        curl_easy_cleanup(f->h);
    free(f->body);
    free(f->chunk_t);
    tb_sse_release(&f->sse);
    free(f);
}

/* The transfer ended (rc from curl, or CURLE_ABORTED_BY_CALLBACK with f->why set):
 * record it, take it off the multi handle, free it. */
static void finish(struct run *run, struct flight *f, CURLcode rc)
{
    const struct tb_load_spec *s = run->s;
    double t = now_s(run);
    long code = 0;
    char why[160] = "";
    bool first = run->finished++ == 0;

    curl_easy_getinfo(f->h, CURLINFO_RESPONSE_CODE, &code);
    if (f->why[0])
        snprintf(why, sizeof why, "%s", f->why);
    else if (code != 0 && code != 200)
        http_reason(f, code, why, sizeof why);
    else if (rc != CURLE_OK)
        curl_reason(f, rc, run->req_timeout_s, why, sizeof why);
    else if (!f->done)
        snprintf(why, sizeof why, "stream ended without data: [DONE]");
    else if (f->chunks == 0)
        snprintf(why, sizeof why, "no content in the stream");
    tb_utf8_scrub(why); /* the server's words: printed, and recorded in a CSV note */

    if (first && !run->text && s->api == TB_API_COMPLETIONS && (code == 400 || code == 422)) {
        run->refused = true;
        snprintf(run->refused_why, sizeof run->refused_why, "%s", why);
    }
    if (f->rec >= 0) {
        struct tb_request_rec *q = &run->r->reqs[f->rec];
        q->t_first = f->chunks ? f->t_first : NAN;
        q->t_end = t;
        q->usage_reported = f->usage;
        q->prompt_tokens = f->usage ? f->prompt_tokens : -1;
        q->output_tokens = f->usage ? f->completion_tokens : f->chunks;
        q->chunks = f->chunks;
        q->chunk_t = f->chunk_t; /* handed over */
        f->chunk_t = NULL;
        q->lag_max_s = f->lag_max;
        q->ok = why[0] == '\0';
        q->http_status = (int)code;
        snprintf(q->error, sizeof q->error, "%s", why);
    } else {
        run->warm_done++;
        if (why[0]) {
            if (run->warm_failed++ == 0) {
                snprintf(run->warm_why, sizeof run->warm_why, "%s", why);
                run->warm_same = true;
            } else if (strcmp(why, run->warm_why) != 0) {
                run->warm_same = false;
            }
        }
    }
    curl_multi_remove_handle(run->m, f->h);
    run->flights[f->slot] = run->flights[--run->nflights];
    run->flights[f->slot]->slot = f->slot;
    flight_free(f);
}

/* End every request in flight with reason why. */
static void abort_all(struct run *run, const char *why)
{
    while (run->nflights) {
        struct flight *f = run->flights[run->nflights - 1];
        snprintf(f->why, sizeof f->why, "%s", why);
        finish(run, f, CURLE_ABORTED_BY_CALLBACK);
    }
}

static int send_one(struct run *run, bool counted, char *err, size_t errlen)
{
    const struct tb_load_spec *s = run->s;
    struct tb_load_result *r = run->r;
    struct flight *f = calloc(1, sizeof *f);
    long timeout_ms = (long)ceil(run->req_timeout_s * 1000);
    CURLMcode mc;

    if (!f)
        goto oom;
    f->run = run;
    f->rec = -1;
    f->lag_max = NAN;
    tb_sse_init(&f->sse, s->max_event_bytes);
    f->max_chunks = 4 * (size_t)s->seq_out + 64;
    f->body = build_body(run);
    f->h = curl_easy_init();
    if (!f->body || !f->h)
        goto oom;
    curl_easy_setopt(f->h, CURLOPT_URL, run->url);
    curl_easy_setopt(f->h, CURLOPT_POSTFIELDS, f->body);
    curl_easy_setopt(f->h, CURLOPT_POSTFIELDSIZE, (long)strlen(f->body));
    curl_easy_setopt(f->h, CURLOPT_HTTPHEADER, run->headers);
    curl_easy_setopt(f->h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(f->h, CURLOPT_WRITEDATA, f);
    curl_easy_setopt(f->h, CURLOPT_PRIVATE, f);
    curl_easy_setopt(f->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(f->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(f->h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(f->h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    if (run->nflights == run->flights_cap) {
        size_t cap = run->flights_cap ? 2 * run->flights_cap : 64;
        struct flight **p = realloc(run->flights, cap * sizeof *p);
        if (!p)
            goto oom;
        run->flights = p;
        run->flights_cap = cap;
    }
    if (counted) {
        struct tb_request_rec *q;
        if (r->nreqs == run->reqs_cap) {
            size_t cap = run->reqs_cap ? 2 * run->reqs_cap : 256;
            struct tb_request_rec *p = realloc(r->reqs, cap * sizeof *p);
            if (!p)
                goto oom;
            r->reqs = p;
            run->reqs_cap = cap;
        }
        q = &r->reqs[r->nreqs];
        memset(q, 0, sizeof *q);
        q->t_sent = now_s(run);
        q->t_first = q->t_end = q->lag_max_s = NAN;
        q->prompt_tokens = -1;
        f->rec = (long)r->nreqs++;
        f->chunk_cap = (size_t)s->seq_out + 1;
        f->chunk_t = tb_alloc_array(f->chunk_cap, sizeof *f->chunk_t);
        if (!f->chunk_t)
            goto oom;
    }
    mc = curl_multi_add_handle(run->m, f->h);
    if (mc != CURLM_OK) {
        flight_free(f);
        return tb_err(err, errlen, "cannot start a request: %s", curl_multi_strerror(mc));
    }
    f->slot = run->nflights;
    run->flights[run->nflights++] = f;
    return 0;
oom:
    flight_free(f);
    return tb_err(err, errlen, "out of memory for a request");
}

/* Whether the phase still has requests to send at time t. */
static bool more_to_send(const struct run *run, bool counted, long sent, double t_start, double t)
{
    const struct tb_load_spec *s = run->s;
    if (counted && s->requests == 0)
        return t - t_start < s->duration_s;
    return sent < (counted ? s->requests : s->warmup_requests);
}

/* ---- the event loop: curl's sockets in an epoll set ---- */

/* curl says which sockets to watch for what (CURLMOPT_SOCKETFUNCTION). */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct run *run = userp;
    struct epoll_event ev;
    (void)easy;
    (void)socketp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(run->ep, EPOLL_CTL_DEL, fd, NULL); /* it may be closed already: no matter */
        return 0;
    }
    memset(&ev, 0, sizeof ev);
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0u) | (what & CURL_POLL_OUT ? EPOLLOUT : 0u);
    ev.data.fd = fd;
    if (epoll_ctl(run->ep, EPOLL_CTL_MOD, fd, &ev) != 0 &&
        (errno != ENOENT || epoll_ctl(run->ep, EPOLL_CTL_ADD, fd, &ev) != 0))
        run->ep_errno = errno;
    return 0;
}

/* curl's one timer (CURLMOPT_TIMERFUNCTION): -1 none, else due in timeout_ms. */
static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    struct run *run = userp;
    (void)m;
    run->timer_due_s = timeout_ms < 0 ? INFINITY : now_s(run) + (double)timeout_ms * 1e-3;
    return 0;
}

/* Finish the transfers curl has done with. */
static void take_done(struct run *run)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(run->m, &left)) != NULL) {
        struct flight *f = NULL;
        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&f);
        finish(run, f, msg->data.result);
    }
}

/* Send one phase's requests (the warm-up, or the counted ones) at the spec's load and
 * wait for all of them. Returns 0, or -1 with a message. The level timeout ends the
 * requests in flight and returns 0. Each turn: send what the load allows now, run
 * curl's timer when due, wait in epoll_wait for a ready socket, the timer, the next
 * arrival or POLL_MAX_MS, and hand curl the ready sockets one by one (an epoll set, not
 * curl_multi_poll: a wake-up then costs the sockets ready, not all 256 in flight). */
static int run_phase(struct run *run, bool counted, char *err, size_t errlen)
{
    const struct tb_load_spec *s = run->s;
    const bool open = s->request_rate > 0;
    double t_start = now_s(run), next_arrival = t_start;
    struct epoll_event evs[256];
    long sent = 0;

    for (;;) {
        double t = now_s(run), wait_s;
        int running, n, timeout_ms;
        bool more, can_send = false;
        CURLMcode mc;

        if (t >= run->deadline_s) {
            abort_all(run, "level timeout");
            return 0;
        }
        while (!run->refused && more_to_send(run, counted, sent, t_start, t)) {
            if (open ? t < next_arrival ||
                           (s->concurrency > 0 && run->nflights >= (size_t)s->concurrency)
                     : run->nflights >= (size_t)s->concurrency)
                break;
            if (send_one(run, counted, err, errlen) != 0)
                return -1;
            sent++;
            if (open && isfinite(s->request_rate))
                next_arrival += exp_gap(&run->arrival_rng, s->request_rate);
        }
        if (now_s(run) >= run->timer_due_s) {
            run->timer_due_s = INFINITY; /* curl sets the next one from inside the call */
            mc = curl_multi_socket_action(run->m, CURL_SOCKET_TIMEOUT, 0, &running);
            if (mc != CURLM_OK)
                return tb_err(err, errlen, "curl_multi_socket_action: %s", curl_multi_strerror(mc));
            take_done(run);
        }
        if (run->oom)
            return tb_err(err, errlen, "out of memory while reading a stream");
        if (run->ep_errno)
            return tb_err(err, errlen, "cannot watch a socket: %s", strerror(run->ep_errno));
        if (run->refused) {
            abort_all(run, "retried with text prompts");
            return 0;
        }
        t = now_s(run);
        more = more_to_send(run, counted, sent, t_start, t);
        if (!more && run->nflights == 0)
            return 0;
        wait_s = fmin(POLL_MAX_MS * 1e-3, run->deadline_s - t);
        wait_s = fmin(wait_s, run->timer_due_s - t);
        if (more) {
            /* the next arrival, unless the concurrency cap holds it back: then the next
             * answer, however overdue the arrival (a wait of 0 would spin the loop, and
             * take a core from the server it measures) */
            const bool full = s->concurrency > 0 && run->nflights >= (size_t)s->concurrency;
            double until = open && !full ? next_arrival - t : INFINITY;
            if (counted && s->requests == 0)
                until = fmin(until, s->duration_s - (t - t_start));
            can_send = open ? next_arrival <= t &&
                                  (s->concurrency <= 0 || run->nflights < (size_t)s->concurrency)
                            : run->nflights < (size_t)s->concurrency;
            wait_s = fmin(wait_s, until);
        }
        if (can_send)
            continue;
        timeout_ms = wait_s > 0 ? (int)ceil(wait_s * 1000) : 0;
        n = epoll_wait(run->ep, evs, (int)(sizeof evs / sizeof evs[0]), timeout_ms);
        if (n < 0 && errno != EINTR)
            return tb_err(err, errlen, "epoll_wait: %s", strerror(errno));
        for (int i = 0; i < n; i++) {
            int flags = (evs[i].events & EPOLLIN ? CURL_CSELECT_IN : 0) |
                        (evs[i].events & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                        (evs[i].events & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
            mc = curl_multi_socket_action(run->m, evs[i].data.fd, flags, &running);
            if (mc != CURLM_OK)
                return tb_err(err, errlen, "curl_multi_socket_action: %s", curl_multi_strerror(mc));
        }
        take_done(run);
    }
}

/* "3 x HTTP 500: boom; 1 x request timeout (2 s)": the counted failures grouped by
 * reason, most frequent first. */
static void group_failures(struct tb_load_result *r)
{
    size_t n = r->nreqs, ngroups = 0, len = 0;
    size_t *first = tb_alloc_array(n ? n : 1, sizeof *first); /* a group's first request */
    size_t *count = tb_alloc_array(n ? n : 1, sizeof *count);
    r->failures[0] = '\0';
    if (!first || !count) {
        snprintf(r->failures, sizeof r->failures, "%zu failed (no memory to group them)",
                 r->failed);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        size_t g = 0;
        if (r->reqs[i].ok)
            continue;
        while (g < ngroups && strcmp(r->reqs[first[g]].error, r->reqs[i].error) != 0)
            g++;
        if (g == ngroups) {
            first[ngroups] = i;
            count[ngroups++] = 0;
        }
        count[g]++;
    }
    for (size_t k = 0; k < ngroups; k++) {
        size_t best = k;
        for (size_t g = k + 1; g < ngroups; g++)
            if (count[g] > count[best])
                best = g;
        size_t tf = first[k], tc = count[k];
        first[k] = first[best];
        count[k] = count[best];
        first[best] = tf;
        count[best] = tc;
        if (len < sizeof r->failures)
            len += (size_t)snprintf(r->failures + len, sizeof r->failures - len, "%s%zu x %s (%s",
                                    k ? "; " : "", count[k], r->reqs[first[k]].error,
                                    count[k] > 1 ? "requests " : "request ");
        /* the numbers (1: the first counted request sent) of the first few */
        for (size_t i = first[k], listed = 0; i < n && len < sizeof r->failures; i++) {
            if (r->reqs[i].ok || strcmp(r->reqs[i].error, r->reqs[first[k]].error) != 0)
                continue;
            if (listed == FAILED_LISTED) {
                len += (size_t)snprintf(r->failures + len, sizeof r->failures - len, ", ...");
                break;
            }
            len += (size_t)snprintf(r->failures + len, sizeof r->failures - len, "%s%zu",
                                    listed++ ? ", " : "", i + 1);
        }
        if (len < sizeof r->failures)
            len += (size_t)snprintf(r->failures + len, sizeof r->failures - len, ")");
    }
out:
    free(first);
    free(count);
}

static void summarise(const struct tb_load_spec *s, bool ids, struct tb_load_result *r)
{
    double first_sent = INFINITY, last_sent = -INFINITY, last_end = -INFINITY, busy = 0;
    for (size_t i = 0; i < r->nreqs; i++) {
        const struct tb_request_rec *q = &r->reqs[i];
        if (q->ok) {
            r->ok++;
            if ((q->output_tokens != s->seq_out) ||
                (ids && q->prompt_tokens >= 0 && q->prompt_tokens != s->seq_in))
                r->mismatched++;
        } else {
            r->failed++;
        }
        first_sent = fmin(first_sent, q->t_sent);
        last_sent = fmax(last_sent, q->t_sent);
        last_end = fmax(last_end, q->t_end);
        busy += q->t_end - q->t_sent;
    }
    if (r->nreqs) {
        r->window_s = last_end - first_sent;
        r->achieved_concurrency = r->window_s > 0 ? busy / r->window_s : 0;
        if (r->nreqs > 1 && last_sent > first_sent)
            r->achieved_rate = (double)r->nreqs / (last_sent - first_sent);
        else
            r->achieved_rate = r->window_s > 0 ? (double)r->nreqs / r->window_s : 0;
    }
    group_failures(r);
}

/* base_url without its trailing '/'s, then suffix. NULL when memory ran out. */
static char *join_url(const char *base, const char *suffix)
{
    size_t n = strlen(base), k = strlen(suffix);
    char *u;
    while (n && base[n - 1] == '/')
        n--;
    u = malloc(n + k + 1);
    if (u) {
        memcpy(u, base, n);
        memcpy(u + n, suffix, k + 1);
    }
    return u;
}

/* One attempt at the level with prompts as text or ids. Returns 0 when it ran, -1 with a
 * message, 1 when the first request was refused a 4xx (run->refused_why says why). */
static int run_level(const struct tb_load_spec *s, bool text, uint64_t t0_ns,
                     struct tb_load_result *r, char *refused_why, size_t rlen, char *err,
                     size_t errlen)
{
    struct run run;
    double cpu0 = thread_cpu_s();
    long conc, maxconn;
    int rc = -1;

    memset(r, 0, sizeof *r);
    memset(&run, 0, sizeof run);
    run.ep = -1;
    run.timer_due_s = INFINITY;
    run.s = s;
    run.r = r;
    run.text = text;
    run.prompt_rng = s->seed;
    run.arrival_rng = s->seed ^ 0x5eed0fa77a1a5ull;
    run.req_timeout_s = s->request_timeout_s > 0 ? s->request_timeout_s : REQUEST_TIMEOUT_S;
    run.max_response = s->max_response_bytes ? s->max_response_bytes : TB_LOAD_MAX_RESPONSE_BYTES;
    conc = s->concurrency > 0 ? s->concurrency : (long)s->requests + s->warmup_requests;
    if (s->level_timeout_s > 0) {
        run.deadline_s = s->level_timeout_s;
    } else {
        long c = conc > 0 ? conc : 1;
        /* one round more than the load needs: a round starts a little after the one
         * before it ends, so a level of timed-out requests still ends on its own */
        double rounds = ceil((double)s->warmup_requests / (double)c) +
                        ceil((double)s->requests / (double)c) + (s->requests ? 1 : 2);
        run.deadline_s = rounds * run.req_timeout_s + (s->requests ? 0 : s->duration_s);
        if (s->request_rate > 0 && isfinite(s->request_rate))
            run.deadline_s += (s->requests + s->warmup_requests) / s->request_rate;
        run.deadline_s = fmin(run.deadline_s, LEVEL_TIMEOUT_CAP_S);
    }
    run.url = join_url(s->base_url, s->api == TB_API_CHAT ? "/chat/completions" : "/completions");
    run.m = curl_multi_init();
    run.ep = epoll_create1(EPOLL_CLOEXEC);
    if (run.ep < 0) {
        tb_err(err, errlen, "epoll_create1: %s", strerror(errno));
        goto out;
    }
    run.headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (run.headers)
        run.headers = curl_slist_append(run.headers, "Accept: text/event-stream");
    if (run.headers) /* no "Expect: 100-continue" wait on long prompts */
        run.headers = curl_slist_append(run.headers, "Expect:");
    if (!run.url || !run.m || !run.headers) {
        tb_err(err, errlen, "out of memory for the load client");
        goto out;
    }
    maxconn = conc > 0 ? conc : 1;
    curl_multi_setopt(run.m, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    curl_multi_setopt(run.m, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
    curl_multi_setopt(run.m, CURLMOPT_MAXCONNECTS, maxconn + 16);
    curl_multi_setopt(run.m, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(run.m, CURLMOPT_SOCKETDATA, &run);
    curl_multi_setopt(run.m, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(run.m, CURLMOPT_TIMERDATA, &run);
    run.t0_ns = t0_ns;
    if (s->warmup_requests > 0) {
        if (run_phase(&run, false, err, errlen) != 0)
            goto out;
        if (!run.refused && run.warm_done > 0 && run.warm_failed == run.warm_done &&
            run.warm_same) {
            tb_err(err, errlen, "every warm-up request to '%s' failed: %s", run.url, run.warm_why);
            goto out;
        }
    }
    if (!run.refused && now_s(&run) < run.deadline_s && run_phase(&run, true, err, errlen) != 0)
        goto out;
    if (run.refused) {
        if (refused_why)
            snprintf(refused_why, rlen, "%s", run.refused_why);
        rc = 1;
        goto out;
    }
    r->client_cpu_s = thread_cpu_s() - cpu0;
    r->text_prompts = text;
    summarise(s, !text, r);
    rc = 0;
out:
    abort_all(&run, "the level stopped");
    free(run.flights);
    if (run.m)
        curl_multi_cleanup(run.m);
    if (run.ep >= 0)
        close(run.ep);
    curl_slist_free_all(run.headers);
    free(run.url);
    return rc;
}

static int check_spec(const struct tb_load_spec *s, char *err, size_t errlen)
{
    if (!s->base_url || !*s->base_url)
        return tb_err(err, errlen, "load spec: no base_url");
    if (strncmp(s->base_url, "http://", 7) != 0 && strncmp(s->base_url, "https://", 8) != 0)
        return tb_err(err, errlen, "load spec: base_url '%s' is not http:// or https://",
                      s->base_url);
    if (!s->served_model || !*s->served_model)
        return tb_err(err, errlen, "load spec: no served_model");
    if (s->seq_in < 1 || s->seq_out < 1)
        return tb_err(err, errlen, "load spec: seq_in %d and seq_out %d must be at least 1",
                      s->seq_in, s->seq_out);
    if (s->vocab < 1 && s->api == TB_API_COMPLETIONS && !s->text_prompts)
        return tb_err(err, errlen, "load spec: vocab %d: token ids need a vocabulary", s->vocab);
    if (!(s->request_rate >= 0))
        return tb_err(err, errlen, "load spec: request_rate %g is negative", s->request_rate);
    if (s->request_rate == 0 && s->concurrency < 1)
        return tb_err(err, errlen, "load spec: a closed loop needs concurrency >= 1, not %d",
                      s->concurrency);
    if (s->concurrency < 0 || s->requests < 0 || s->warmup_requests < 0)
        return tb_err(err, errlen, "load spec: negative concurrency or request count");
    if (s->requests == 0 && !(s->duration_s > 0 && isfinite(s->duration_s)))
        return tb_err(err, errlen, "load spec: neither requests nor a duration_s");
    if (s->request_rate > 0 && !isfinite(s->request_rate) && s->requests == 0 &&
        s->concurrency == 0)
        return tb_err(err, errlen,
                      "load spec: an infinite rate for a duration needs a concurrency");
    return 0;
}

/* ---- a level over several client threads ---- */

#define STREAMS_PER_THREAD 64

/* One client thread's part of a level. */
struct shard {
    struct tb_load_spec s; /* its share of the load */
    bool text;
    uint64_t t0_ns; /* the level's clock, common to every shard */
    struct tb_load_result r;
    int rc;
    char refused[160], err[512];
};

static void *shard_main(void *arg)
{
    struct shard *x = arg;
    x->rc = run_level(&x->s, x->text, x->t0_ns, &x->r, x->refused, sizeof x->refused, x->err,
                      sizeof x->err);
    return NULL;
}

/* The threads a level runs on (tb_load_spec.threads). */
static int level_threads(const struct tb_load_spec *s)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN), n;
    if (s->threads > 0) {
        n = s->threads;
    } else {
        long streams = s->concurrency > 0 ? s->concurrency : STREAMS_PER_THREAD;
        n = (streams + STREAMS_PER_THREAD - 1) / STREAMS_PER_THREAD;
        n = n < cores - 1 ? n : cores - 1; /* a core left for the rest */
    }
    if (s->concurrency > 0 && n > s->concurrency)
        n = s->concurrency;
    if (s->requests > 0 && n > s->requests)
        n = s->requests;
    return n < 1 ? 1 : (int)n;
}

/* Part k of total split n ways (the first total % n get one more). */
static int share(long total, int n, int k)
{
    return (int)(total / n + (k < total % n ? 1 : 0));
}

/* Part k of total in proportion to part k of weights split n ways, so that each thread
 * runs as many rounds of its streams as the others and they end together. */
static int share_by(long total, long weights, int n, int k)
{
    long before = 0, upto;
    if (weights <= 0)
        return share(total, n, k);
    for (int i = 0; i < k; i++)
        before += share(weights, n, i);
    upto = before + share(weights, n, k);
    return (int)(total * upto / weights - total * before / weights);
}

static int by_send_time(const void *a, const void *b)
{
    const struct tb_request_rec *x = a, *y = b;
    return x->t_sent < y->t_sent ? -1 : x->t_sent > y->t_sent;
}

/* Move every shard's requests and lags into r, in send order, and summarise. */
static int merge_shards(const struct tb_load_spec *s, bool text, struct shard *x, int n,
                        struct tb_load_result *r, char *err, size_t errlen)
{
    size_t nreqs = 0, nlags = 0;
    memset(r, 0, sizeof *r);
    for (int k = 0; k < n; k++) {
        nreqs += x[k].r.nreqs;
        nlags += x[k].r.nlags;
    }
    r->reqs = tb_alloc_array(nreqs + 1, sizeof *r->reqs);
    r->lags = tb_alloc_array(nlags + 1, sizeof *r->lags);
    if (!r->reqs || !r->lags) {
        free(r->reqs);
        free(r->lags);
        r->reqs = NULL;
        r->lags = NULL;
        return tb_err(err, errlen, "out of memory merging the client threads' requests");
    }
    for (int k = 0; k < n; k++) {
        struct tb_load_result *q = &x[k].r;
        if (q->nreqs)
            memcpy(r->reqs + r->nreqs, q->reqs, q->nreqs * sizeof *q->reqs);
        if (q->nlags)
            memcpy(r->lags + r->nlags, q->lags, q->nlags * sizeof *q->lags);
        r->nreqs += q->nreqs;
        r->nlags += q->nlags;
        r->client_cpu_s += q->client_cpu_s;
        free(q->reqs); /* the chunk times moved with the records */
        free(q->lags);
        memset(q, 0, sizeof *q);
    }
    qsort(r->reqs, r->nreqs, sizeof *r->reqs, by_send_time);
    r->text_prompts = text;
    r->threads = n;
    summarise(s, !text, r);
    return 0;
}

/* The level on n client threads, each its share of the load on the level's clock.
 * Returns like run_level, or 2 (nothing run) when a thread would get no request. */
static int run_sharded(const struct tb_load_spec *s, int n, bool text, struct tb_load_result *r,
                       char *refused_why, size_t rlen, char *err, size_t errlen)
{
    struct shard *x = tb_alloc_array((size_t)n, sizeof *x);
    pthread_t *tid = tb_alloc_array((size_t)n, sizeof *tid);
    uint64_t t0 = mono_ns();
    int started = 0, rc = 0;

    memset(r, 0, sizeof *r);
    if (!x || !tid) {
        free(x);
        free(tid);
        return tb_err(err, errlen, "out of memory for %d client threads", n);
    }
    for (int k = 0; k < n; k++) {
        x[k].s = *s;
        x[k].s.concurrency = s->concurrency > 0 ? share(s->concurrency, n, k) : 0;
        x[k].s.requests = s->requests > 0 ? share_by(s->requests, s->concurrency, n, k) : 0;
        x[k].s.warmup_requests = share_by(s->warmup_requests, s->concurrency, n, k);
        x[k].s.request_rate = s->request_rate > 0
                                  ? s->request_rate * share_by(1000000, s->concurrency, n, k) / 1e6
                                  : 0;
        x[k].s.seed = s->seed + 0x9e3779b97f4a7c15ull * (uint64_t)k; /* prompts of its own */
        x[k].text = text;
        x[k].t0_ns = t0;
    }
    for (int k = 0; k < n; k++)
        if (s->requests > 0 && x[k].s.requests == 0) { /* too few requests to split */
            free(x);
            free(tid);
            return 2;
        }
    for (; started < n; started++)
        if (pthread_create(&tid[started], NULL, shard_main, &x[started]) != 0) {
            rc = tb_err(err, errlen, "cannot start client thread %d of %d", started + 1, n);
            break;
        }
    for (int k = 0; k < started; k++)
        pthread_join(tid[k], NULL);
    for (int k = 0; k < started && rc == 0; k++) {
        if (x[k].rc == 1) { /* ids refused: the caller retries the whole level as text */
            if (refused_why)
                snprintf(refused_why, rlen, "%s", x[k].refused);
            rc = 1;
        } else if (x[k].rc != 0) {
            rc = tb_err(err, errlen, "%s", x[k].err);
        }
    }
    if (rc == 0)
        rc = merge_shards(s, text, x, n, r, err, errlen);
    for (int k = 0; k < n; k++)
        tb_load_result_release(&x[k].r);
    free(x);
    free(tid);
    return rc;
}

/* The level on one thread, or on several. */
static int run_attempt(const struct tb_load_spec *s, int threads, bool text,
                       struct tb_load_result *r, char *refused_why, size_t rlen, char *err,
                       size_t errlen)
{
    int rc = threads > 1 ? run_sharded(s, threads, text, r, refused_why, rlen, err, errlen) : 2;
    if (rc != 2)
        return rc;
    rc = run_level(s, text, mono_ns(), r, refused_why, rlen, err, errlen);
    r->threads = 1;
    return rc;
}

int tb_load_run(const struct tb_load_spec *s, struct tb_load_result *r, char *err, size_t errlen)
{
    bool text = s->text_prompts || s->api == TB_API_CHAT;
    char refused[160] = "";
    int rc, threads;

    memset(r, 0, sizeof *r);
    if (check_spec(s, err, errlen) != 0 || curl_ready(err, errlen) != 0)
        return -1;
    threads = level_threads(s);
    rc = run_attempt(s, threads, text, r, refused, sizeof refused, err, errlen);
    if (rc == 1) {
        tb_load_result_release(r);
        text = true;
        rc = run_attempt(s, threads, text, r, NULL, 0, err, errlen);
    }
    if (rc != 0)
        return -1;
    if (!text)
        snprintf(r->prompt_note, sizeof r->prompt_note, "token ids");
    else if (refused[0])
        snprintf(r->prompt_note, sizeof r->prompt_note,
                 "text of about %d tokens (the server refused id arrays: %.96s)", s->seq_in,
                 refused);
    else
        snprintf(r->prompt_note, sizeof r->prompt_note, "text of about %d tokens", s->seq_in);
    return 0;
}

void tb_load_result_release(struct tb_load_result *r)
{
    for (size_t i = 0; r->reqs && i < r->nreqs; i++)
        free(r->reqs[i].chunk_t);
    free(r->reqs);
    free(r->lags);
    memset(r, 0, sizeof *r);
}

/* ---- the endpoint's own pages ---- */

static size_t on_get_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct tb_sbuf *b = ud;
    size_t n = size * nmemb;
    if (b->len + n > GET_MAX_BYTES)
        return 0;
    tb_sb_putn(b, ptr, n);
    return b->failed ? 0 : n;
}

/* GET url within timeout_s: *code and the body (NUL-terminated) into b. Returns 0 when
 * an answer came, -1 with why in err otherwise. */
static int http_get(const char *url, double timeout_s, long *code, struct tb_sbuf *b, char *err,
                    size_t errlen)
{
    CURL *h = curl_easy_init();
    CURLcode rc;
    long ms = (long)ceil(timeout_s * 1000);
    *code = 0;
    if (!h)
        return tb_err(err, errlen, "out of memory for a request");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_get_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, ms > 0 ? ms : 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, ms > 0 ? ms : 1L);
    rc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, code);
    curl_easy_cleanup(h);
    tb_sb_putn(b, "", 0);
    if (rc != CURLE_OK)
        return tb_err(err, errlen, "GET '%s': %s", url, curl_easy_strerror(rc));
    if (b->failed)
        return tb_err(err, errlen, "GET '%s': out of memory", url);
    return 0;
}

/* {root} of base_url: without trailing '/'s and a final "/v1". */
static char *root_url(const char *base, const char *suffix)
{
    size_t n = strlen(base), k = strlen(suffix);
    char *u;
    while (n && base[n - 1] == '/')
        n--;
    if (n >= 3 && memcmp(base + n - 3, "/v1", 3) == 0)
        n -= 3;
    u = malloc(n + k + 1);
    if (u) {
        memcpy(u, base, n);
        memcpy(u + n, suffix, k + 1);
    }
    return u;
}

/* One readiness try: /models answering 200 with JSON, else /health answering 200. */
static int ready_once(const char *base_url, double timeout_s, char *err, size_t errlen)
{
    char *models = join_url(base_url, "/models"), *health = root_url(base_url, "/health");
    struct tb_sbuf b = {0};
    long code = 0;
    int rc = -1;
    if (!models || !health) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (http_get(models, timeout_s, &code, &b, err, errlen) != 0)
        goto out; /* nothing answers: /health would not either */
    if (code == 200) {
        json_t *o = json_loads(b.p ? b.p : "", 0, NULL);
        rc = o ? 0 : -1;
        json_decref(o);
        if (rc == 0)
            goto out;
        tb_err(err, errlen, "GET '%s': HTTP 200 but not JSON", models);
    } else {
        tb_err(err, errlen, "GET '%s': HTTP %ld", models, code);
    }
    tb_sb_release(&b);
    if (http_get(health, timeout_s, &code, &b, NULL, 0) == 0 && code == 200)
        rc = 0;
out:
    tb_sb_release(&b);
    free(models);
    free(health);
    return rc;
}

int tb_endpoint_wait_ready(const char *base_url, double timeout_s, char *err, size_t errlen)
{
    uint64_t t0 = mono_ns();
    char why[256] = "";
    if (curl_ready(err, errlen) != 0)
        return -1;
    for (;;) {
        double left = timeout_s - (double)(mono_ns() - t0) * 1e-9;
        double try_s = timeout_s <= 0 || left > READY_TRY_S ? READY_TRY_S : left;
        if (ready_once(base_url, try_s > 0.05 ? try_s : 0.05, why, sizeof why) == 0)
            return 0;
        left = timeout_s - (double)(mono_ns() - t0) * 1e-9;
        if (left <= READY_EVERY_S)
            break;
        nanosleep(&(struct timespec){.tv_nsec = (long)(READY_EVERY_S * 1e9)}, NULL);
    }
    if (timeout_s <= 0)
        return tb_err(err, errlen, "'%s' is not ready: %s", base_url, why);
    return tb_err(err, errlen, "'%s' not ready within %g s: %s", base_url, timeout_s, why);
}

int tb_endpoint_probe(const char *base_url, char *models, size_t mlen, char *version, size_t vlen,
                      char *err, size_t errlen)
{
    char *murl = join_url(base_url, "/models"), *vurl = root_url(base_url, "/version");
    struct tb_sbuf b = {0};
    json_t *o = NULL, *v;
    long code = 0;
    int rc = -1;

    if (mlen)
        models[0] = '\0';
    if (vlen)
        version[0] = '\0';
    if (curl_ready(err, errlen) != 0)
        goto out;
    if (!murl || !vurl) {
        tb_err(err, errlen, "out of memory");
        goto out;
    }
    if (http_get(murl, 10, &code, &b, err, errlen) != 0)
        goto out;
    if (code == 200 && (o = json_loads(b.p ? b.p : "", 0, NULL)) != NULL) {
        size_t len = 0, i;
        json_array_foreach(json_object_get(o, "data"), i, v)
        {
            const char *id = json_string_value(json_object_get(v, "id"));
            if (id && len < mlen)
                len += (size_t)snprintf(models + len, mlen - len, "%s%s", len ? "," : "", id);
        }
    }
    json_decref(o);
    o = NULL;
    tb_sb_release(&b);
    if (http_get(vurl, 10, &code, &b, NULL, 0) == 0 && code == 200 &&
        (o = json_loads(b.p ? b.p : "", 0, NULL)) != NULL &&
        json_is_string(v = json_object_get(o, "version")) && vlen)
        snprintf(version, vlen, "%s", json_string_value(v));
    rc = 0;
out:
    json_decref(o);
    tb_sb_release(&b);
    free(murl);
    free(vurl);
    return rc;
}

/* ---- the client's own speed ---- */

int tb_perf_client(FILE *out, const char *base_url, const char *served_model, int concurrency,
                   int requests, int seq_out, int threads, char *err, size_t errlen)
{
    struct tb_load_spec s = {
        .base_url = base_url,
        .served_model = served_model,
        .api = TB_API_COMPLETIONS,
        .seq_in = 16,
        .seq_out = seq_out,
        .vocab = 1000,
        .seed = 1,
        .concurrency = concurrency,
        .requests = requests,
        .threads = threads,
    };
    struct tb_load_result r;
    size_t chunks = 0;
    int rc = -1;

    if (tb_load_run(&s, &r, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < r.nreqs; i++)
        chunks += (size_t)r.reqs[i].chunks;
    fprintf(out,
            "client: %d streams on %d thread%s, %zu requests (%zu ok), %d tokens each, prompts "
            "as %s\n",
            concurrency, r.threads, r.threads == 1 ? "" : "s", r.nreqs, r.ok, seq_out,
            r.prompt_note);
    fprintf(out, "  chunks received            %zu in %.3f s\n", chunks, r.window_s);
    fprintf(out, "  chunks per second of wall  %.0f\n", r.window_s > 0 ? chunks / r.window_s : 0);
    fprintf(out, "  chunks per client CPU-s    %.0f (client_cpu_s %.3f, all threads)\n",
            r.client_cpu_s > 0 ? chunks / r.client_cpu_s : 0, r.client_cpu_s);
    if (r.nlags) {
        static const double p[] = {50, 99, 100};
        double q[3];
        if (tb_stats_percentiles(r.lags, r.nlags, p, 3, q, err, errlen) != 0)
            goto out;
        fprintf(out, "  per-chunk lag, ms          p50 %.3f  p99 %.3f  max %.3f (%zu chunks)\n",
                q[0] * 1e3, q[1] * 1e3, q[2] * 1e3, r.nlags);
    } else {
        fprintf(out, "  per-chunk lag              none: the server sent no t_sent_ns\n");
    }
    if (r.failed) {
        tb_err(err, errlen, "%zu of %zu requests failed: %s", r.failed, r.nreqs, r.failures);
        goto out;
    }
    rc = 0;
out:
    tb_load_result_release(&r);
    return rc;
}
