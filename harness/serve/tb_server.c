/*
 * harness/serve/tb_server.c: the OpenAI-compatible HTTP server (tb_server.h): request
 * bodies gathered under a limit, validated into a generation request, handed to the
 * batcher; answers as one JSON document or as server-sent events read from the
 * request's token queue.
 */
#include "tb_server.h"
#include "tb_batcher.h"
#include "tb_utf8.h"
#include "tb_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

#define TAKE_MAX       64                /* tokens taken from the queue per wake-up */
#define SPARE_CONNS    64                /* connections over the limit answered 503 */
#define THREAD_STACK   ((size_t)1 << 20) /* a connection thread's stack */
#define WATCH_EVERY_NS 100000000         /* the watchdog looks at the connections */

/* One open connection (MHD's socket context), in the server's list while open. */
struct conn {
    struct conn *prev, *next;
    MHD_socket fd;
    int64_t since_ns;        /* when it began to wait for its request (accept, or the last
                                answer on a kept-alive connection) */
    bool reading;            /* a request is due or arriving: the read timeout runs */
    bool streaming;          /* answering with a stream: the pull timeout runs */
    atomic_bool engine_wait; /* the stream waits for tokens: the engine's time, not
                                the client's */
    atomic_llong pulled_ns;  /* when libmicrohttpd last asked the stream for bytes (it
                                asks when the client has taken the last ones) */
    bool over;               /* opened beyond max_connections: every request gets 503 */
    bool dropped;            /* the watchdog shut it down */
};

struct tb_server {
    struct MHD_Daemon *d;
    struct tb_server_opts o; /* the limits resolved: no 0 left */
    char *name;              /* owned copy of o.served_name */
    int port;
    atomic_long next_id;
    pthread_mutex_t mu;  /* guards conns, nconns and stop */
    pthread_cond_t wake; /* the watchdog's sleep */
    struct conn *conns;  /* open connections, newest first */
    long nconns;
    bool stop;
    pthread_t watchdog;
    bool have_watchdog;
    atomic_long refused, timed_out, too_big; /* counts, for the log at the end */
};

static struct conn *conn_of(struct MHD_Connection *c);

/* One connection's request body (MHD's per-request context). */
struct body {
    char *data; /* owned, NUL-terminated */
    size_t len, cap;
    bool too_big;
};

/* A validated generation request. */
struct gen {
    bool chat;
    int *ids; /* owned */
    int n;
    int max_tokens, min_tokens;
    bool ignore_eos, stream, include_usage, token_ids;
};

/* ---- small helpers ---- */

int tb_server_tokenize(const char *text, int vocab, int *ids, int cap)
{
    int n = 0;
    const unsigned char *p = (const unsigned char *)text;
    while (*p) {
        while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
            p++;
        if (!*p)
            break;
        uint32_t h = 2166136261u; /* FNV-1a, 32 bits */
        while (*p && !(*p == ' ' || (*p >= '\t' && *p <= '\r'))) {
            h ^= *p++;
            h *= 16777619u;
        }
        if (n < cap)
            ids[n] = (int)(h % (uint32_t)vocab);
        n++;
    }
    return n;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static mhd_result send_text(struct MHD_Connection *c, unsigned status, const char *type,
                            const char *text)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (status == 413 || status == 503) /* a body not read, a connection not wanted */
        MHD_add_response_header(r, "Connection", "close");
    mhd_result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Send j (stolen) as JSON. */
static mhd_result send_json(struct MHD_Connection *c, unsigned status, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s)
        return send_text(c, 500, "text/plain", "out of memory\n");
    mhd_result rc = send_text(c, status, "application/json", s);
    free(s);
    return rc;
}

static json_t *error_json(const char *msg, const char *param)
{
    return json_pack("{s:{s:s, s:s, s:s?, s:n}}", "error", "message", msg, "type",
                     "invalid_request_error", "param", param, "code");
}

static mhd_result send_error(struct MHD_Connection *c, unsigned status, const char *param,
                             const char *fmt, ...) TB_PRINTF(4, 5);
static mhd_result send_error(struct MHD_Connection *c, unsigned status, const char *param,
                             const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tb_utf8_scrub(msg); /* a request's text, cut or not, must not make the JSON invalid */
    return send_json(c, status, error_json(msg, param));
}

/* ---- request validation ---- */

/* An optional integer field into *out (kept when absent or null). 0, or -1 with the
 * message. */
static int get_int(json_t *root, const char *key, long lo, long hi, int *out, char *err,
                   size_t errlen)
{
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v))
        return tb_err(err, errlen, "'%s' must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return tb_err(err, errlen, "'%s' is %lld, outside [%ld, %ld]", key, (long long)x, lo, hi);
    *out = (int)x;
    return 0;
}

static int get_bool(json_t *obj, const char *key, bool *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_boolean(v))
        return tb_err(err, errlen, "'%s' must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

/* Append the tokens of text to g->ids (grown as needed), at most max_len in all. */
static int add_text(struct gen *g, const char *text, char *err, size_t errlen, int vocab,
                    int max_len)
{
    int k = tb_server_tokenize(text, vocab, NULL, 0);
    if (k > max_len - g->n)
        return tb_err(err, errlen,
                      "the prompt has over %d tokens, the maximum model length (--max-model-len)",
                      max_len);
    int *p = realloc(g->ids, ((size_t)g->n + (size_t)k + 1) * sizeof *p);
    if (!p)
        return tb_err(err, errlen, "out of memory for %d prompt tokens", g->n + k);
    g->ids = p;
    tb_server_tokenize(text, vocab, g->ids + g->n, k);
    g->n += k;
    return 0;
}

/* Parse and check a completion (chat false) or chat completion body. Returns 0, or an
 * HTTP status (400, 404) with the message and the offending parameter in *param. */
static unsigned parse_gen(const struct tb_server *s, const struct body *b, bool chat, struct gen *g,
                          const char **param, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = NULL, *v;
    unsigned status = 400;
    int V = s->o.vocab, nchoices = 1;

    memset(g, 0, sizeof *g);
    g->chat = chat;
    g->max_tokens = 16;
    *param = NULL;
    root = json_loadb(b->data ? b->data : "", b->len, 0, &je);
    if (!root) {
        tb_err(err, errlen, "the body is not JSON: %s%s (line %d, column %d)",
               json_error_code(&je) == json_error_invalid_utf8 ? "invalid UTF-8: " : "", je.text,
               je.line, je.column);
        goto out;
    }
    if (!json_is_object(root)) {
        tb_err(err, errlen, "the body must be a JSON object");
        goto out;
    }
    v = json_object_get(root, "model");
    if (v && !json_is_null(v)) {
        *param = "model";
        if (!json_is_string(v)) {
            tb_err(err, errlen, "'model' must be a string");
            goto out;
        }
        if (strcmp(json_string_value(v), s->name) != 0) {
            tb_err(err, errlen, "the model '%s' does not exist (this server serves '%s')",
                   json_string_value(v), s->name);
            status = 404;
            goto out;
        }
    }
    *param = "max_tokens";
    if (get_int(root, "max_tokens", 1, s->o.max_model_len, &g->max_tokens, err, errlen))
        goto out;
    if (chat) {
        *param = "max_completion_tokens";
        if (get_int(root, "max_completion_tokens", 1, s->o.max_model_len, &g->max_tokens, err,
                    errlen))
            goto out;
    }
    *param = "min_tokens";
    if (get_int(root, "min_tokens", 0, g->max_tokens, &g->min_tokens, err, errlen))
        goto out;
    *param = "n";
    if (get_int(root, "n", 1, 1, &nchoices, err, errlen))
        goto out;
    *param = "ignore_eos";
    if (get_bool(root, "ignore_eos", &g->ignore_eos, err, errlen))
        goto out;
    *param = "stream";
    if (get_bool(root, "stream", &g->stream, err, errlen))
        goto out;
    *param = "return_token_ids";
    if (get_bool(root, "return_token_ids", &g->token_ids, err, errlen))
        goto out;
    *param = "stream_options";
    v = json_object_get(root, "stream_options");
    if (v && !json_is_null(v)) {
        if (!json_is_object(v)) {
            tb_err(err, errlen, "'stream_options' must be an object");
            goto out;
        }
        if (get_bool(v, "include_usage", &g->include_usage, err, errlen))
            goto out;
    }

    if (!chat) {
        *param = "prompt";
        v = json_object_get(root, "prompt");
        if (json_is_string(v)) {
            if (add_text(g, json_string_value(v), err, errlen, V, s->o.max_model_len))
                goto out;
        } else if (json_is_array(v)) {
            size_t i, n = json_array_size(v);
            json_t *x;
            if (n > (size_t)s->o.max_model_len) {
                tb_err(err, errlen,
                       "the prompt has %zu tokens, over the maximum model length %d "
                       "(--max-model-len)",
                       n, s->o.max_model_len);
                goto out;
            }
            g->ids = tb_alloc_array(n + 1, sizeof *g->ids);
            if (!g->ids) {
                tb_err(err, errlen, "out of memory for %zu prompt tokens", n);
                goto out;
            }
            json_array_foreach(v, i, x)
            {
                if (!json_is_integer(x)) {
                    tb_err(err, errlen, "prompt[%zu] is not a token id (an integer)", i);
                    goto out;
                }
                json_int_t id = json_integer_value(x);
                if (id < 0 || id >= V) {
                    tb_err(err, errlen, "prompt[%zu] = %lld is outside the vocabulary [0, %d)", i,
                           (long long)id, V);
                    goto out;
                }
                g->ids[g->n++] = (int)id;
            }
        } else {
            tb_err(err, errlen, "'prompt' must be a string or a list of token ids");
            goto out;
        }
    } else {
        size_t i;
        json_t *m;
        *param = "messages";
        v = json_object_get(root, "messages");
        if (!json_is_array(v) || json_array_size(v) == 0) {
            tb_err(err, errlen, "'messages' must be a non-empty list");
            goto out;
        }
        json_array_foreach(v, i, m)
        {
            json_t *content = json_object_get(m, "content");
            if (!json_is_object(m)) {
                tb_err(err, errlen, "messages[%zu] is not an object", i);
                goto out;
            }
            if (json_is_string(content)) {
                if (add_text(g, json_string_value(content), err, errlen, V, s->o.max_model_len))
                    goto out;
            } else if (json_is_array(content)) {
                size_t k;
                json_t *part;
                json_array_foreach(content, k, part)
                {
                    json_t *t = json_object_get(part, "text");
                    if (!json_is_string(t)) {
                        tb_err(err, errlen, "messages[%zu].content[%zu] has no 'text'", i, k);
                        goto out;
                    }
                    if (add_text(g, json_string_value(t), err, errlen, V, s->o.max_model_len))
                        goto out;
                }
            } else if (content && !json_is_null(content)) {
                tb_err(err, errlen, "messages[%zu].content must be a string or a list of parts", i);
                goto out;
            }
        }
    }
    if (g->n == 0) {
        tb_err(err, errlen, "the prompt is empty");
        goto out;
    }
    if ((long)g->n + g->max_tokens > s->o.max_model_len) {
        *param = "max_tokens";
        tb_err(err, errlen,
               "the prompt's %d tokens plus max_tokens %d make %ld, over the maximum model length "
               "%d",
               g->n, g->max_tokens, (long)g->n + g->max_tokens, s->o.max_model_len);
        goto out;
    }
    status = 0;
    *param = NULL;
out:
    json_decref(root);
    if (status != 0) {
        free(g->ids);
        g->ids = NULL;
    }
    return status;
}

unsigned tb_server_parse_body(const struct tb_server_opts *o, const char *body, size_t len,
                              bool chat, int *ntokens, const char **param, char *err, size_t errlen)
{
    struct tb_server s; /* what parse_gen reads of a server: its options and name */
    struct body b = {.data = (char *)body, .len = len};
    struct gen g;
    unsigned status;
    memset(&s, 0, sizeof s);
    s.o = *o;
    s.name = (char *)o->served_name;
    status = parse_gen(&s, &b, chat, &g, param, err, errlen);
    *ntokens = status == 0 ? g.n : 0;
    free(g.ids);
    return status;
}

/* ---- answers ---- */

static void token_text(char *buf, size_t len, int id)
{
    snprintf(buf, len, " t%d", id);
}

static json_t *usage_json(int prompt, int completion)
{
    return json_pack("{s:i, s:i, s:i}", "prompt_tokens", prompt, "completion_tokens", completion,
                     "total_tokens", prompt + completion);
}

/* A streamed connection: its request and the bytes formatted but not yet sent. */
struct stream {
    struct tb_server *s;
    struct tb_request *r; /* the submitter's share */
    struct gen g;         /* ids freed after submit */
    char id[48];
    long created;
    char *pend; /* owned: formatted events */
    size_t len, off, cap;
    int sent;       /* content chunks sent */
    bool ended;     /* [DONE] formatted */
    struct conn *k; /* borrowed: its connection (valid while MHD asks for bytes) */
};

/* The stream waits for the engine (on), or for the client (off, and from now). */
static void stream_engine_wait(struct stream *st, bool on)
{
    if (!st->k)
        return;
    atomic_store(&st->k->engine_wait, on);
    if (!on)
        atomic_store(&st->k->pulled_ns, (long long)mono_ns());
}

static int pend_add(struct stream *st, const char *a, const char *b, const char *c)
{
    size_t la = strlen(a), lb = strlen(b), lc = strlen(c), need = st->len + la + lb + lc;
    if (need > st->cap) {
        size_t cap = st->cap ? st->cap : 4096;
        while (cap < need)
            cap *= 2;
        char *p = realloc(st->pend, cap);
        if (!p)
            return -1;
        st->pend = p;
        st->cap = cap;
    }
    memcpy(st->pend + st->len, a, la);
    memcpy(st->pend + st->len + la, b, lb);
    memcpy(st->pend + st->len + la + lb, c, lc);
    st->len = need;
    return 0;
}

/* Format j (stolen) as one "data: ..." event. */
static int pend_event(struct stream *st, json_t *j)
{
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!s)
        return -1;
    int rc = pend_add(st, "data: ", s, "\n\n");
    free(s);
    return rc;
}

static json_t *chunk_base(const struct stream *st)
{
    return json_pack("{s:s, s:s, s:I, s:s}", "id", st->id, "object",
                     st->g.chat ? "chat.completion.chunk" : "text_completion", "created",
                     (json_int_t)st->created, "model", st->s->name);
}

static int pend_token(struct stream *st, int id, const char *finish)
{
    char text[32];
    json_t *j = chunk_base(st), *choice;
    token_text(text, sizeof text, id);
    if (st->g.chat) {
        json_t *delta = st->sent == 0
                            ? json_pack("{s:s, s:s}", "role", "assistant", "content", text)
                            : json_pack("{s:s}", "content", text);
        choice = json_pack("{s:i, s:o, s:s?}", "index", 0, "delta", delta, "finish_reason", finish);
    } else {
        choice = json_pack("{s:i, s:s, s:n, s:s?}", "index", 0, "text", text, "logprobs",
                           "finish_reason", finish);
    }
    if (!j || !choice) {
        json_decref(j);
        json_decref(choice);
        return -1;
    }
    if (st->g.token_ids)
        json_object_set_new(choice, "token_ids", json_pack("[i]", id));
    json_object_set_new(j, "choices", json_pack("[o]", choice));
    json_object_set_new(j, "t_sent_ns", json_integer((json_int_t)mono_ns()));
    st->sent++;
    return pend_event(st, j);
}

/* Wait for the next tokens and format them (and the end). */
static int pend_more(struct stream *st)
{
    int ids[TAKE_MAX];
    enum tb_finish fin;
    stream_engine_wait(st, true);
    int n = tb_request_take(st->r, ids, TAKE_MAX, -1, &fin);
    stream_engine_wait(st, false);
    for (int i = 0; i < n; i++) {
        const char *f = (i == n - 1 && fin != TB_FINISH_ABORT) ? tb_finish_to_string(fin) : NULL;
        if (pend_token(st, ids[i], f) != 0)
            return -1;
    }
    if (fin == TB_FINISH_NONE)
        return 0;
    if (fin == TB_FINISH_ABORT &&
        pend_event(st, error_json("the server stopped before the end of the generation", NULL)))
        return -1;
    if (st->g.include_usage) {
        json_t *j = chunk_base(st);
        if (!j)
            return -1;
        json_object_set_new(j, "choices", json_array());
        json_object_set_new(j, "usage", usage_json(st->g.n, st->sent));
        json_object_set_new(j, "t_sent_ns", json_integer((json_int_t)mono_ns()));
        if (pend_event(st, j))
            return -1;
    }
    st->ended = true;
    return pend_add(st, "data: [DONE]", "", "\n\n");
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *st = cls;
    (void)pos;
    stream_engine_wait(st, false); /* the client took the bytes before */
    while (st->off == st->len) {
        st->off = st->len = 0;
        if (st->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (pend_more(st) != 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = st->len - st->off < max ? st->len - st->off : max;
    memcpy(buf, st->pend + st->off, n);
    st->off += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    struct stream *st = cls;
    tb_request_release(st->r); /* cancels the sequence if the client left early */
    free(st->pend);
    free(st);
}

static mhd_result answer_stream(struct tb_server *s, struct MHD_Connection *c, struct stream *st)
{
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st, stream_free);
    if (!r) {
        stream_free(st);
        return MHD_NO;
    }
    (void)s;
    MHD_add_response_header(r, "Content-Type", "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    mhd_result rc = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return rc;
}

static mhd_result answer_whole(struct tb_server *s, struct MHD_Connection *c, struct stream *st)
{
    json_t *ids = json_array(), *j, *choice;
    char text[32];
    size_t tlen = 0, tcap = 256;
    char *all = malloc(tcap);
    enum tb_finish fin = TB_FINISH_NONE;
    int buf[TAKE_MAX], total = 0;
    mhd_result rc;

    if (!all || !ids) {
        free(all);
        json_decref(ids);
        tb_request_release(st->r);
        free(st);
        return send_error(c, 500, NULL, "out of memory");
    }
    all[0] = '\0';
    while (fin == TB_FINISH_NONE) {
        int n = tb_request_take(st->r, buf, TAKE_MAX, -1, &fin);
        for (int i = 0; i < n; i++) {
            token_text(text, sizeof text, buf[i]);
            size_t l = strlen(text);
            if (tlen + l + 1 > tcap) {
                char *p = realloc(all, tcap * 2 + l);
                if (!p)
                    break;
                all = p;
                tcap = tcap * 2 + l;
            }
            memcpy(all + tlen, text, l + 1);
            tlen += l;
            json_array_append_new(ids, json_integer(buf[i]));
            total++;
        }
    }
    tb_request_release(st->r);
    if (fin == TB_FINISH_ABORT) {
        free(all);
        json_decref(ids);
        free(st);
        return send_error(c, 503, NULL, "the server stopped before the end of the generation");
    }
    if (st->g.chat)
        choice = json_pack("{s:i, s:{s:s, s:s}, s:s}", "index", 0, "message", "role", "assistant",
                           "content", all, "finish_reason", tb_finish_to_string(fin));
    else
        choice = json_pack("{s:i, s:s, s:n, s:s}", "index", 0, "text", all, "logprobs",
                           "finish_reason", tb_finish_to_string(fin));
    if (choice && st->g.token_ids)
        json_object_set(choice, "token_ids", ids);
    j = json_pack("{s:s, s:s, s:I, s:s, s:[o], s:o}", "id", st->id, "object",
                  st->g.chat ? "chat.completion" : "text_completion", "created",
                  (json_int_t)st->created, "model", s->name, "choices", choice, "usage",
                  usage_json(st->g.n, total));
    json_decref(ids);
    free(all);
    free(st);
    rc = send_json(c, 200, j);
    return rc;
}

static mhd_result handle_gen(struct tb_server *s, struct MHD_Connection *c, const struct body *b,
                             bool chat)
{
    struct stream *st;
    const char *param;
    char err[512];
    unsigned status;
    int rc;

    st = calloc(1, sizeof *st);
    if (!st)
        return send_error(c, 500, NULL, "out of memory");
    st->s = s;
    status = parse_gen(s, b, chat, &st->g, &param, err, sizeof err);
    if (status != 0) {
        free(st);
        return send_error(c, status, param, "%s", err);
    }
    rc = tb_batcher_submit(s->o.batcher, st->g.ids, st->g.n, st->g.max_tokens, st->g.min_tokens,
                           st->g.ignore_eos, &st->r, err, sizeof err);
    free(st->g.ids);
    st->g.ids = NULL;
    if (rc != 0) {
        free(st);
        return send_error(c, rc == TB_EINPUT ? 400 : 503, rc == TB_EINPUT ? "prompt" : NULL, "%s",
                          err);
    }
    snprintf(st->id, sizeof st->id, "%s-%ld", chat ? "chatcmpl" : "cmpl",
             atomic_fetch_add(&s->next_id, 1));
    st->created = (long)time(NULL);
    if (st->g.stream && (st->k = conn_of(c)) != NULL) {
        stream_engine_wait(st, false);
        pthread_mutex_lock(&s->mu);
        st->k->streaming = true;
        pthread_mutex_unlock(&s->mu);
    }
    return st->g.stream ? answer_stream(s, c, st) : answer_whole(s, c, st);
}

/* ---- connections: the limits on their number and on the time a request takes ---- */

static struct conn *conn_of(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* MHD_OPTION_NOTIFY_CONNECTION: a connection opened or closed. An opened one beyond
 * max_connections is marked to be refused (503); every one waits for its request under
 * the read timeout from now. */
static void conn_notify(void *cls, struct MHD_Connection *c, void **socket_ctx,
                        enum MHD_ConnectionNotificationCode toe)
{
    struct tb_server *s = cls;
    struct conn *k = *socket_ctx;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!(k = calloc(1, sizeof *k)))
            return; /* not watched: the handler refuses it */
        k->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
        k->since_ns = mono_ns();
        k->reading = true;
        atomic_init(&k->engine_wait, false);
        atomic_init(&k->pulled_ns, (long long)k->since_ns);
        pthread_mutex_lock(&s->mu);
        k->over = ++s->nconns > s->o.max_connections;
        k->next = s->conns;
        if (s->conns)
            s->conns->prev = k;
        s->conns = k;
        pthread_mutex_unlock(&s->mu);
        *socket_ctx = k;
    } else if (k) {
        pthread_mutex_lock(&s->mu); /* before MHD closes the socket: the watchdog may
                                       shut down only sockets still in the list */
        s->nconns--;
        if (k->prev)
            k->prev->next = k->next;
        else
            s->conns = k->next;
        if (k->next)
            k->next->prev = k->prev;
        pthread_mutex_unlock(&s->mu);
        free(k);
        *socket_ctx = NULL;
    }
}

static void conn_set_reading(struct tb_server *s, struct conn *k, bool reading)
{
    if (!k)
        return;
    pthread_mutex_lock(&s->mu);
    k->reading = reading;
    k->streaming = false;
    k->since_ns = mono_ns();
    pthread_mutex_unlock(&s->mu);
}

/* Whether k is too slow at now: its request has not arrived whole within the limit (a
 * byte a second never trips an idle timeout), or its stream has waited that long for
 * the client to take bytes (time waiting for the engine does not count). */
static bool conn_too_slow(struct conn *k, int64_t now, int64_t limit_ns)
{
    if (k->dropped || k->fd == MHD_INVALID_SOCKET)
        return false;
    if (k->reading)
        return now - k->since_ns > limit_ns;
    return k->streaming && !atomic_load(&k->engine_wait) &&
           now - (int64_t)atomic_load(&k->pulled_ns) > limit_ns;
}

/* The watchdog thread: every WATCH_EVERY_NS, shuts down the sockets of the connections
 * too slow (conn_too_slow); their threads then see the end of the stream and MHD closes
 * them. */
static void *watchdog_main(void *arg)
{
    struct tb_server *s = arg;
    const int64_t limit_ns = (int64_t)(s->o.read_timeout_s * 1e9);
    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        struct timespec until;
        int64_t now = mono_ns();
        for (struct conn *k = s->conns; k; k = k->next)
            if (conn_too_slow(k, now, limit_ns)) {
                shutdown(k->fd, SHUT_RDWR);
                k->dropped = true;
                atomic_fetch_add(&s->timed_out, 1);
            }
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_EVERY_NS;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&s->wake, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- routing ---- */

/* The body's first bytes (or its end, upload 0) into b under the limit. Returns MHD_YES
 * to go on, or the answer: 413 as soon as the body is known to be over max_body_bytes. */
static mhd_result take_body(struct tb_server *s, struct MHD_Connection *c, struct body *b,
                            const char *upload, size_t *upload_size)
{
    size_t n = *upload_size;
    if (b->len + n > s->o.max_body_bytes) {
        atomic_fetch_add(&s->too_big, 1);
        free(b->data);
        b->data = NULL;
        b->len = b->cap = 0;
        b->too_big = true;
        *upload_size = 0;
        /* an answer now stops the upload; where MHD takes none mid-upload, the
         * connection is closed instead of reading the rest */
        return send_error(c, 413, NULL,
                          "the body is over %zu bytes (the server's --max-body-bytes)",
                          s->o.max_body_bytes);
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->data, cap);
        if (!p)
            return MHD_NO;
        b->data = p;
        b->cap = cap;
    }
    memcpy(b->data + b->len, upload, n);
    b->len += n;
    b->data[b->len] = '\0';
    *upload_size = 0;
    return MHD_YES;
}

static mhd_result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                         const char *version, const char *upload, size_t *upload_size, void **ctx)
{
    struct tb_server *s = cls;
    struct body *b = *ctx;
    struct conn *k = conn_of(c);
    bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
    (void)version;

    if (!b) { /* the headers are in */
        if (!(b = calloc(1, sizeof *b)))
            return MHD_NO;
        *ctx = b;
        if (!k || k->over) {
            atomic_fetch_add(&s->refused, 1);
            b->too_big = true; /* answered: no body kept */
            return send_error(c, 503, NULL,
                              "the server has %ld connections open, its limit "
                              "(--max-connections); try again later",
                              s->o.max_connections);
        }
        /* libmicrohttpd has checked it is a number (a negative one is its 400) */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl) {
            errno = 0;
            unsigned long long claimed = strtoull(cl, NULL, 10);
            if (errno == ERANGE || claimed > s->o.max_body_bytes) {
                atomic_fetch_add(&s->too_big, 1);
                b->too_big = true;
                return send_error(c, 413, NULL,
                                  "the body of %.24s bytes is over %zu bytes (the server's "
                                  "--max-body-bytes)",
                                  cl, s->o.max_body_bytes);
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (b->too_big) { /* answered already */
            *upload_size = 0;
            return MHD_YES;
        }
        return take_body(s, c, b, upload, upload_size);
    }
    if (b->too_big)
        return MHD_YES;            /* answered already */
    conn_set_reading(s, k, false); /* the request is whole: the read timeout stops */

    if (!strcmp(url, "/health")) {
        if (!get)
            return send_error(c, 405, NULL, "%s /health: only GET", method);
        return send_text(c, 200, "text/plain", "");
    }
    if (!strcmp(url, "/version")) {
        if (!get)
            return send_error(c, 405, NULL, "%s /version: only GET", method);
        char v[128];
        snprintf(v, sizeof v, "trnbench %s", tb_version_commit());
        return send_json(c, 200, json_pack("{s:s}", "version", v));
    }
    if (!strcmp(url, "/v1/models")) {
        if (!get)
            return send_error(c, 405, NULL, "%s /v1/models: only GET", method);
        return send_json(c, 200,
                         json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data",
                                   "id", s->name, "object", "model", "created", (json_int_t)0,
                                   "owned_by", "trnbench", "max_model_len", s->o.max_model_len));
    }
    bool comp = !strcmp(url, "/v1/completions"), chat = !strcmp(url, "/v1/chat/completions");
    if (comp || chat) {
        if (!post)
            return send_error(c, 405, NULL, "%s %s: only POST", method, url);
        return handle_gen(s, c, b, chat);
    }
    return send_error(c, 404, NULL, "no such path: '%s'", url);
}

static void request_done(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode why)
{
    struct tb_server *s = cls;
    struct body *b = *ctx;
    (void)why;
    if (b) {
        free(b->data);
        free(b);
        *ctx = NULL;
    }
    conn_set_reading(s, conn_of(c), true); /* the next request on it, if kept alive */
}

/* ---- lifecycle ---- */

int tb_server_listen(struct tb_server **out, const struct tb_server_opts *o, char *err,
                     size_t errlen)
{
    struct tb_server *s;
    struct sockaddr_storage sa;
    const char *host = o->host && strcmp(o->host, "localhost") ? o->host : "127.0.0.1";
    /* MHD_USE_ITC: MHD_quiesce_daemon needs it with an internal thread */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | MHD_USE_ITC;

    *out = NULL;
    memset(&sa, 0, sizeof sa);
    if (inet_pton(AF_INET, host, &((struct sockaddr_in *)&sa)->sin_addr) == 1) {
        struct sockaddr_in *in = (struct sockaddr_in *)&sa;
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)o->port);
    } else if (inet_pton(AF_INET6, host, &((struct sockaddr_in6 *)&sa)->sin6_addr) == 1) {
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&sa;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)o->port);
        flags |= MHD_USE_IPv6;
    } else {
        return tb_err(err, errlen, "host '%s': not an IPv4 or IPv6 address", o->host);
    }
    if (!(s = calloc(1, sizeof *s)) || !(s->name = tb_strdup(o->served_name))) {
        free(s);
        return tb_err(err, errlen, "cannot allocate the server");
    }
    s->o = *o;
    if (!s->o.max_body_bytes)
        s->o.max_body_bytes = TB_SERVER_MAX_BODY_BYTES;
    if (!(s->o.read_timeout_s > 0))
        s->o.read_timeout_s = TB_SERVER_READ_TIMEOUT_S;
    if (s->o.max_connections <= 0)
        s->o.max_connections = TB_SERVER_MAX_CONNECTIONS;
    atomic_init(&s->next_id, 1);
    atomic_init(&s->refused, 0);
    atomic_init(&s->timed_out, 0);
    atomic_init(&s->too_big, 0);
    pthread_mutex_init(&s->mu, NULL);
    {
        pthread_condattr_t ca; /* the watchdog's deadlines are CLOCK_MONOTONIC */
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&s->wake, &ca);
        pthread_condattr_destroy(&ca);
    }
    if (pthread_create(&s->watchdog, NULL, watchdog_main, s) != 0) {
        tb_server_free(s);
        return tb_err(err, errlen, "cannot start the server's watchdog thread");
    }
    s->have_watchdog = true;
    errno = 0;
    s->d = MHD_start_daemon(
        flags, (uint16_t)o->port, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, request_done, s,
        MHD_OPTION_NOTIFY_CONNECTION, conn_notify, s, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)(s->o.max_connections + SPARE_CONNS), MHD_OPTION_THREAD_STACK_SIZE, THREAD_STACK,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u, MHD_OPTION_END);
    if (!s->d) {
        int e = errno;
        tb_server_free(s);
        return tb_err(err, errlen, "cannot listen on %s port %d%s%s", host, o->port, e ? ": " : "",
                      e ? strerror(e) : "");
    }
    {
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_LISTEN_FD);
        struct sockaddr_storage got;
        socklen_t gl = sizeof got;
        s->port = o->port;
        if (di && getsockname(di->listen_fd, (struct sockaddr *)&got, &gl) == 0)
            s->port = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
                                                : ntohs(((struct sockaddr_in *)&got)->sin_port);
    }
    *out = s;
    return 0;
}

int tb_server_port(const struct tb_server *s)
{
    return s->port;
}

void tb_server_free(struct tb_server *s)
{
    if (!s)
        return;
    if (s->d) {
        MHD_socket fd = MHD_quiesce_daemon(s->d); /* no new connections; the socket is ours */
        tb_batcher_stop(s->o.batcher);            /* open streams end; new requests get 503 */
        MHD_stop_daemon(s->d);                    /* close connections, join their threads */
        if (fd != MHD_INVALID_SOCKET)
            close(fd);
    }
    if (s->have_watchdog) {
        pthread_mutex_lock(&s->mu);
        s->stop = true;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->watchdog, NULL);
    }
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    free(s->name);
    free(s);
}

void tb_server_stats(struct tb_server *s, long *refused, long *timed_out, long *too_big)
{
    *refused = atomic_load(&s->refused);
    *timed_out = atomic_load(&s->timed_out);
    *too_big = atomic_load(&s->too_big);
}
