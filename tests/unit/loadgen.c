/* tests/unit/loadgen.c: the endpoint load client (tb_loadgen) and the server lifecycle
 * (tb_server_proc) against small HTTP servers of this test's own, on loopback sockets in
 * threads: a good server streaming completions (counts, times, usage, the load it
 * received, the prompts it was sent, checked with jansson), and bad ones (a dropped
 * connection, malformed events, HTTP 500, an endless stream, silence, ids refused,
 * short outputs, nothing listening). tb_argv_split's quoting, and tb_server_start with
 * real children: `sleep`, `false`, and this test binary run as a server
 * (`loadgen.t --serve PORT [GAP_US]`, which also serves the client benchmark). */
#include "tb_loadgen.h"
#include "tb_server_proc.h"
#include "tb_timer.h"

#include "tests/tap/basic.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MODEL "test-model"

/* ---- the test's server ---- */

enum mode {
    GOOD,       /* seq_out chunks with t_sent_ns, usage, [DONE] */
    DROP,       /* three chunks, then the connection closes */
    BAD_JSON,   /* one chunk, then an event that is not JSON */
    HTTP_500,   /* an OpenAI error body */
    ENDLESS,    /* chunks every 5 ms, never [DONE] */
    SILENT,     /* reads the request, never answers */
    REFUSE_IDS, /* 400 to an id array, GOOD to a text */
    SHORT,      /* two tokens fewer than asked, usage saying so */
};

struct srv {
    int fd, port;
    enum mode mode;
    int gap_us;        /* between chunks */
    int seq_in, vocab; /* what a good id prompt is */
    pthread_t th;
    pthread_mutex_t mu; /* guards what follows */
    int stop;
    int live;               /* connection threads running */
    int posts;              /* requests received */
    int id_prompts;         /* with exactly seq_in ids in [0, vocab) */
    int text_prompts;       /* prompts as one text */
    int chat_prompts;       /* messages [{role user, content text}] */
    int bad_prompts;        /* none of the above, or keys missing */
    int active, max_active; /* streams being answered */
    char bad_why[160];
};

struct conn {
    struct srv *s;
    int fd;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_us(int us)
{
    struct timespec ts = {us / 1000000, (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* One server-sent event as one HTTP chunk. */
static int send_event(int fd, const char *data)
{
    char buf[1024];
    size_t n = strlen(data) + 8; /* "data: " + "\n\n" */
    int k = snprintf(buf, sizeof buf, "%zx\r\ndata: %s\n\n\r\n", n, data);
    return k > 0 && (size_t)k < sizeof buf ? send_all(fd, buf, (size_t)k) : -1;
}

static int send_reply(int fd, int code, const char *reason, const char *body)
{
    char buf[2048];
    int k = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s",
                     code, reason, strlen(body), body);
    return send_all(fd, buf, (size_t)k);
}

static const char *str(const json_t *v)
{
    return json_is_string(v) ? json_string_value(v) : "";
}

static void note_bad(struct srv *s, const char *why)
{
    s->bad_prompts++;
    snprintf(s->bad_why, sizeof s->bad_why, "%s", why);
}

/* Check the request's JSON; returns the prompt's length in tokens (ids, or words), with
 * *ids, *chat set; -1 when it is not a request we take. */
static int check_body(struct srv *s, const char *body, size_t len, bool *ids, bool *chat,
                      int *max_tokens)
{
    json_t *o = json_loadb(body, len, 0, NULL), *p, *v;
    int n = -1;
    *ids = *chat = false;
    pthread_mutex_lock(&s->mu);
    s->posts++;
    if (!json_is_object(o)) {
        note_bad(s, "body is not a JSON object");
        goto out;
    }
    *max_tokens = (int)json_integer_value(json_object_get(o, "max_tokens"));
    if (strcmp(MODEL, str(json_object_get(o, "model"))) != 0 ||
        !json_is_true(json_object_get(o, "stream")) ||
        !json_is_true(json_object_get(json_object_get(o, "stream_options"), "include_usage")) ||
        !json_is_true(json_object_get(o, "ignore_eos")) || *max_tokens < 1 ||
        json_integer_value(json_object_get(o, "min_tokens")) != *max_tokens ||
        json_number_value(json_object_get(o, "temperature")) != 0 ||
        !json_is_number(json_object_get(o, "temperature"))) {
        note_bad(s, "a key is missing or wrong");
        goto out;
    }
    p = json_object_get(o, "prompt");
    if (json_is_array(p)) {
        size_t i;
        bool good = (int)json_array_size(p) == s->seq_in;
        json_array_foreach(p, i, v) good = good && json_is_integer(v) &&
                                           json_integer_value(v) >= 0 &&
                                           json_integer_value(v) < s->vocab;
        if (!good) {
            note_bad(s, "ids: wrong count or out of range");
            goto out;
        }
        s->id_prompts++;
        *ids = true;
        n = (int)json_array_size(p);
    } else if (json_is_string(p) || json_is_array(p = json_object_get(o, "messages"))) {
        const char *text;
        if (json_is_string(p)) {
            text = json_string_value(p);
            s->text_prompts++;
        } else {
            json_t *m = json_array_get(p, 0);
            text = json_string_value(json_object_get(m, "content"));
            if (json_array_size(p) != 1 || strcmp("user", str(json_object_get(m, "role"))) != 0 ||
                !text) {
                note_bad(s, "messages: not one user message");
                goto out;
            }
            s->chat_prompts++;
            *chat = true;
        }
        n = *text ? 1 : 0;
        for (const char *c = text; *c; c++)
            n += *c == ' ';
    } else {
        note_bad(s, "no prompt and no messages");
    }
out:
    pthread_mutex_unlock(&s->mu);
    json_decref(o);
    return n;
}

/* Answer one completion request in the server's mode. Returns 0 to keep the
 * connection, -1 to close it. */
static int answer(struct srv *s, int fd, const char *body, size_t len)
{
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    bool ids, chat;
    int max_tokens = 0, n, prompt = check_body(s, body, len, &ids, &chat, &max_tokens), rc = 0;
    char ev[512];

    if (prompt < 0)
        return send_reply(fd, 400, "Bad Request", "{\"error\":{\"message\":\"bad request\"}}");
    if (s->mode == HTTP_500)
        return send_reply(fd, 500, "Internal Server Error",
                          "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}");
    if (s->mode == REFUSE_IDS && ids)
        return send_reply(fd, 400, "Bad Request",
                          "{\"object\":\"error\",\"error\":{\"message\":\"prompt as token ids "
                          "is not supported\",\"type\":\"invalid_request_error\"}}");
    if (s->mode == SILENT) {
        char b[256];
        while (recv(fd, b, sizeof b, 0) > 0)
            ;
        return -1;
    }
    if (send_all(fd, head, sizeof head - 1) != 0)
        return -1;
    pthread_mutex_lock(&s->mu);
    if (++s->active > s->max_active)
        s->max_active = s->active;
    pthread_mutex_unlock(&s->mu);
    n = s->mode == SHORT      ? max_tokens - 2
        : s->mode == DROP     ? 3
        : s->mode == BAD_JSON ? 1
                              : max_tokens;
    if (chat)
        rc |= send_event(fd, "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}");
    for (int i = 0; (i < n || s->mode == ENDLESS) && rc == 0; i++) {
        if (s->gap_us && i)
            sleep_us(s->gap_us);
        snprintf(ev, sizeof ev,
                 chat ? "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w\"}"
                        ",\"finish_reason\":null}],\"t_sent_ns\":%llu}"
                      : "{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
                        "\"text\":\" w\",\"finish_reason\":null}],\"t_sent_ns\":%llu}",
                 (unsigned long long)mono_ns());
        rc = send_event(fd, ev);
        if (s->mode == ENDLESS && rc == 0)
            sleep_us(5000);
    }
    if (rc == 0 && s->mode == BAD_JSON)
        rc = send_event(fd, "{\"choices\": [oops");
    if (rc == 0 && s->mode != DROP) {
        snprintf(ev, sizeof ev,
                 "{\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,"
                 "\"total_tokens\":%d}}",
                 prompt, n, prompt + n);
        rc = send_event(fd, ev);
        rc |= send_event(fd, "[DONE]");
        rc |= send_all(fd, "0\r\n\r\n", 5);
    }
    pthread_mutex_lock(&s->mu);
    s->active--;
    pthread_mutex_unlock(&s->mu);
    return s->mode == DROP ? -1 : rc;
}

/* One connection: requests one after another (keep-alive) until the client closes. */
static void *conn_main(void *arg)
{
    struct conn c = *(struct conn *)arg;
    struct srv *s = c.s;
    size_t cap = 1 << 18, have = 0;
    char *buf = malloc(cap + 1);
    free(arg);
    while (buf) {
        char *end, *cl;
        size_t head, body_len = 0;
        ssize_t k;
        buf[have] = '\0';
        end = strstr(buf, "\r\n\r\n");
        if (!end) {
            if (have == cap)
                break;
            k = recv(c.fd, buf + have, cap - have, 0);
            if (k <= 0)
                break;
            have += (size_t)k;
            continue;
        }
        head = (size_t)(end - buf) + 4;
        cl = strstr(buf, "Content-Length:");
        if (!cl)
            cl = strstr(buf, "content-length:");
        if (cl && cl < end)
            body_len = strtoul(cl + 15, NULL, 10);
        if (head + body_len > cap)
            break;
        while (have < head + body_len) {
            k = recv(c.fd, buf + have, cap - have, 0);
            if (k <= 0)
                goto out;
            have += (size_t)k;
        }
        if (strncmp(buf, "GET /v1/models ", 15) == 0) {
            if (send_reply(c.fd, 200, "OK",
                           "{\"object\":\"list\",\"data\":[{\"id\":\"" MODEL
                           "\",\"object\":\"model\"}]}") != 0)
                break;
        } else if (strncmp(buf, "GET /version ", 13) == 0) {
            if (send_reply(c.fd, 200, "OK", "{\"version\":\"test-1\"}") != 0)
                break;
        } else if (strncmp(buf, "POST /v1/completions ", 21) == 0 ||
                   strncmp(buf, "POST /v1/chat/completions ", 26) == 0) {
            if (answer(s, c.fd, buf + head, body_len) != 0)
                break;
        } else if (send_reply(c.fd, 404, "Not Found", "{\"error\":\"not found\"}") != 0) {
            break;
        }
        memmove(buf, buf + head + body_len, have - head - body_len);
        have -= head + body_len;
    }
out:
    free(buf);
    close(c.fd);
    pthread_mutex_lock(&s->mu);
    s->live--;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    struct srv *s = arg;
    for (;;) {
        int fd = accept(s->fd, NULL, NULL), one = 1, stop;
        struct conn *c;
        pthread_t th;
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (fd < 0 && !stop && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0 || stop) {
            if (fd >= 0)
                close(fd);
            return NULL;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c = malloc(sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        s->live++;
        pthread_mutex_unlock(&s->mu);
        if (pthread_create(&th, NULL, conn_main, c) != 0) {
            close(fd);
            free(c);
            pthread_mutex_lock(&s->mu);
            s->live--;
            pthread_mutex_unlock(&s->mu);
            continue;
        }
        pthread_detach(th);
    }
}

/* A listening loopback socket on port (0: any free one); its port into *got. */
static int listen_on(int port, int *got)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 1024) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) != 0) {
        close(fd);
        return -1;
    }
    *got = ntohs(a.sin_port);
    return fd;
}

/* Start a server thread; bail when it cannot listen. srv_stop frees it. */
static struct srv *srv_start(enum mode mode, int port, int gap_us, int seq_in, int vocab)
{
    struct srv *s = calloc(1, sizeof *s);
    if (!s)
        bail("out of memory");
    s->mode = mode;
    s->gap_us = gap_us;
    s->seq_in = seq_in;
    s->vocab = vocab;
    pthread_mutex_init(&s->mu, NULL);
    s->fd = listen_on(port, &s->port);
    if (s->fd < 0)
        bail("cannot listen on a loopback port: %s", strerror(errno));
    if (pthread_create(&s->th, NULL, accept_main, s) != 0)
        bail("cannot start a server thread");
    return s;
}

/* Stop accepting; wait (at most 2 s) for the connection threads to end, then free s
 * (left allocated when one is still running: it uses s). */
static void srv_stop(struct srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    shutdown(s->fd, SHUT_RDWR);
    pthread_join(s->th, NULL);
    close(s->fd);
    for (int i = 0; i < 200; i++) {
        int live;
        pthread_mutex_lock(&s->mu);
        live = s->live;
        pthread_mutex_unlock(&s->mu);
        if (!live) {
            pthread_mutex_destroy(&s->mu);
            free(s);
            return;
        }
        sleep_us(10000);
    }
}

/* `loadgen.t --serve PORT [GAP_US]`: a GOOD server until killed. */
static int serve_main(int port, int gap_us)
{
    struct srv *s = srv_start(GOOD, port, gap_us, 16, 1000);
    s->seq_in = 16; /* tb_perf_client's prompts */
    pthread_join(s->th, NULL);
    return 0;
}

/* ---- helpers ---- */

static struct tb_load_spec spec(const struct srv *s, char *url, size_t len)
{
    struct tb_load_spec p;
    memset(&p, 0, sizeof p);
    snprintf(url, len, "http://127.0.0.1:%d/v1/", s ? s->port : 1);
    p.base_url = url;
    p.served_model = MODEL;
    p.api = TB_API_COMPLETIONS;
    p.seq_in = s ? s->seq_in : 8;
    p.seq_out = 8;
    p.vocab = s ? s->vocab : 1000;
    p.seed = 42;
    p.concurrency = 2;
    p.requests = 4;
    p.request_timeout_s = 5;
    return p;
}

static double secs_since(uint64_t t0)
{
    return tb_timer_seconds(t0, tb_timer_now_ns());
}

/* A free loopback port (bound, then closed: the child binds it again). */
static int free_port(void)
{
    int port = 0, fd = listen_on(0, &port);
    if (fd < 0)
        bail("cannot find a free port: %s", strerror(errno));
    close(fd);
    return port;
}

/* Whether process pid is gone (kill(pid, 0) fails), within 2 s. */
static bool gone(pid_t pid)
{
    for (int i = 0; i < 200; i++) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            return true;
        sleep_us(10000);
    }
    return false;
}

/* ---- the tests ---- */

static void test_good(void)
{
    struct srv *s = srv_start(GOOD, 0, 1000, 32, 500);
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "", models[128], version[64];
    bool times_ok = true, chunks_ok = true, usage_ok = true;
    uint64_t t0;

    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", s->port);
    IS_INT(0, tb_endpoint_wait_ready(url, 2, err, sizeof err),
           "wait_ready: the server is ready (%s)", err);
    IS_INT(0,
           tb_endpoint_probe(url, models, sizeof models, version, sizeof version, err, sizeof err),
           "probe answers (%s)", err);
    IS_STRING(MODEL, models, "probe: the model ids of /v1/models");
    IS_STRING("test-1", version, "probe: the version of /version at the root");

    /* closed loop: 4 in flight, 40 counted after 4 warm-up requests */
    p = spec(s, url, sizeof url);
    p.concurrency = 4;
    p.requests = 40;
    p.warmup_requests = 4;
    p.seq_out = 16;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "closed loop runs (%s)", err);
    IS_INT(40, (long long)r.nreqs, "exactly the counted requests are recorded");
    IS_INT(40, (long long)r.ok, "all ok (%s)", r.failures);
    IS_INT(0, (long long)r.failed, "none failed");
    IS_INT(0, (long long)r.mismatched, "no mismatch");
    IS_INT(44, s->posts, "the server got the counted and the warm-up requests");
    IS_INT(44, s->id_prompts, "every prompt was exactly seq_in ids in [0, vocab) (%s)", s->bad_why);
    IS_INT(0, s->bad_prompts, "no bad request body");
    for (size_t i = 0; i < r.nreqs; i++) {
        const struct tb_request_rec *q = &r.reqs[i];
        chunks_ok &= q->chunks == 16 && q->output_tokens == 16;
        usage_ok &= q->usage_reported && q->prompt_tokens == 32 && q->http_status == 200;
        times_ok &= q->t_sent >= 0 && q->t_first > q->t_sent && q->t_end >= q->t_first &&
                    q->chunk_t[0] == q->t_first && q->chunk_t[15] <= q->t_end &&
                    /* the server sends the last chunk 15 gaps of 1 ms after the request
                     * came in, so it arrives at least 15 ms after it was sent; the gap
                     * from the first chunk's arrival is no bound: on a loaded machine the
                     * client may read the first chunk late, with the others behind it */
                    q->chunk_t[15] - q->t_sent >= 0.015 && q->lag_max_s >= 0 && q->lag_max_s < 30 &&
                    (i == 0 || q->t_sent >= r.reqs[i - 1].t_sent);
    }
    OK(chunks_ok, "16 content chunks and 16 output tokens in every request");
    OK(usage_ok, "usage parsed: prompt_tokens 32, usage_reported, HTTP 200");
    OK(times_ok, "sent < first < end, chunk times in order, 15 gaps of 1 ms, lag finite");
    IS_INT(40 * 16, (long long)r.nlags, "a lag for every chunk of the counted requests");
    OK(r.achieved_concurrency > 3.4 && r.achieved_concurrency <= 4.01,
       "achieved concurrency %.2f is about 4", r.achieved_concurrency);
    OK(r.reqs[0].t_sent > 0.014, "warm-up came first (first counted send at %.3f s)",
       r.reqs[0].t_sent);
    IS_STRING("token ids", r.prompt_note, "prompt note: token ids");
    OK(!r.text_prompts, "not text prompts");
    OK(r.client_cpu_s > 0 && r.client_cpu_s < r.window_s + 0.5, "client_cpu_s %.3f measured",
       r.client_cpu_s);
    IS_STRING("", r.failures, "no failures");
    IS_INT(1, r.threads, "one client thread unless asked (auto on this machine's cores)");
    tb_load_result_release(&r);

    /* the same level split over 3 client threads: 5 in flight (2 + 2 + 1), 40 counted */
    {
        int posts0 = s->posts;
        bool ordered = true, chunks = true;
        p = spec(s, url, sizeof url);
        p.concurrency = 5;
        p.requests = 40;
        p.warmup_requests = 3;
        p.seq_out = 16;
        p.threads = 3;
        IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "3 client threads run (%s)", err);
        IS_INT(3, r.threads, "on 3 threads");
        IS_INT(40, (long long)r.nreqs, "exactly the counted requests, merged");
        IS_INT(40, (long long)r.ok, "all ok (%s)", r.failures);
        IS_INT(43, s->posts - posts0, "the server got 40 counted and 3 warm-up requests");
        for (size_t i = 0; i < r.nreqs; i++) {
            ordered &= i == 0 || r.reqs[i].t_sent >= r.reqs[i - 1].t_sent;
            chunks &= r.reqs[i].chunks == 16 && r.reqs[i].chunk_t[0] == r.reqs[i].t_first;
        }
        OK(ordered, "merged in send order on one clock");
        OK(chunks, "every request kept its own chunk times");
        IS_INT(40 * 16, (long long)r.nlags, "every thread's lags merged");
        OK(r.achieved_concurrency > 4 && r.achieved_concurrency <= 5.01,
           "achieved concurrency %.2f is about 5", r.achieved_concurrency);
        tb_load_result_release(&r);
    }

    /* open loop: Poisson arrivals at 1000/s, no cap */
    p = spec(s, url, sizeof url);
    p.request_rate = 1000;
    p.concurrency = 0;
    p.requests = 400;
    p.seq_out = 2;
    s->gap_us = 0;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "open loop runs (%s)", err);
    IS_INT(400, (long long)r.ok, "all 400 ok (%s)", r.failures);
    OK(fabs(r.achieved_rate - 1000) < 150, "Poisson rate achieved: %.0f/s for 1000/s",
       r.achieved_rate);
    tb_load_result_release(&r);

    /* all at once, capped at 3 in flight */
    pthread_mutex_lock(&s->mu);
    s->max_active = 0;
    pthread_mutex_unlock(&s->mu);
    s->gap_us = 2000;
    p = spec(s, url, sizeof url);
    p.request_rate = INFINITY;
    p.concurrency = 3;
    p.requests = 12;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "infinite rate runs (%s)", err);
    IS_INT(12, (long long)r.ok, "all 12 ok (%s)", r.failures);
    IS_INT(3, s->max_active, "the server never saw more than the cap of 3 streams");
    OK(r.achieved_concurrency > 2.5 && r.achieved_concurrency <= 3.01,
       "achieved concurrency %.2f is about 3", r.achieved_concurrency);
    /* with the cap reached, the client sleeps until an answer comes: it once spun on the
     * overdue arrivals, a core busy the whole level (client CPU = the window), taken from
     * the server it measures (a lone TTFT 1.8x, first requests of a level 25x) */
    OK(r.client_cpu_s < 0.25 * r.window_s,
       "the capped client sleeps: %.1f ms of CPU in a %.1f ms window", r.client_cpu_s * 1e3,
       r.window_s * 1e3);
    tb_load_result_release(&r);

    /* chat: one user message of text; the role-only first chunk is not content */
    p = spec(s, url, sizeof url);
    p.api = TB_API_CHAT;
    p.seq_in = 20;
    s->gap_us = 0;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "chat runs (%s)", err);
    IS_INT(4, (long long)r.ok, "chat: all ok (%s)", r.failures);
    IS_INT(8, r.reqs[0].chunks, "chat: 8 content chunks, the role chunk not counted");
    IS_INT(20, r.reqs[0].prompt_tokens, "chat: a text of 20 words");
    IS_INT(4, s->chat_prompts, "chat: the server saw 4 user messages");
    OK(r.text_prompts, "chat prompts are text");
    IS_STRING("text of about 20 tokens", r.prompt_note, "chat: prompt note");
    tb_load_result_release(&r);

    /* duration mode: send for 0.3 s, then drain */
    p = spec(s, url, sizeof url);
    p.requests = 0;
    p.duration_s = 0.3;
    p.seq_out = 4;
    s->gap_us = 5000;
    t0 = tb_timer_now_ns();
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "duration mode runs (%s)", err);
    OK(r.nreqs >= 10 && r.ok == r.nreqs, "duration: %zu requests, all ok (%s)", r.nreqs,
       r.failures);
    OK(r.nreqs && r.reqs[r.nreqs - 1].t_sent < 0.31, "duration: the last was sent at %.3f s",
       r.nreqs ? r.reqs[r.nreqs - 1].t_sent : -1);
    OK(secs_since(t0) < 0.6, "duration: sent for 0.3 s then drained (%.2f s)", secs_since(t0));
    tb_load_result_release(&r);
    srv_stop(s);
}

/* A bad server: every request fails with why (exactly, or as a prefix when exact is
 * false), within max_s. */
static void test_bad(enum mode mode, const char *name, const char *expect, bool exact,
                     double timeout_s, double max_s)
{
    struct srv *s = srv_start(mode, 0, 0, 8, 1000);
    struct tb_load_spec p = {0};
    struct tb_load_result r;
    char url[64], err[256] = "";
    uint64_t t0 = tb_timer_now_ns();
    double took;
    int rc;

    p = spec(s, url, sizeof url);
    p.request_timeout_s = timeout_s;
    rc = tb_load_run(&p, &r, err, sizeof err);
    took = secs_since(t0);
    IS_INT(0, rc, "%s: the level ran (%s)", name, err);
    IS_INT(4, (long long)r.failed, "%s: all 4 failed", name);
    if (exact)
        IS_STRING(expect, r.failures, "%s: failures say why", name);
    else
        OK(strncmp(r.failures, expect, strlen(expect)) == 0, "%s: failures '%s' start '%s'", name,
           r.failures, expect);
    OK(took < max_s, "%s: over in %.2f s (bound %.1f s)", name, took, max_s);
    tb_load_result_release(&r);
    srv_stop(s);
}

static void test_level_timeout(void)
{
    struct srv *s = srv_start(ENDLESS, 0, 0, 8, 1000);
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "";
    uint64_t t0 = tb_timer_now_ns();

    p = spec(s, url, sizeof url);
    p.request_timeout_s = 30;
    p.level_timeout_s = 0.4;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "level timeout: ran (%s)", err);
    IS_STRING("2 x level timeout (requests 1, 2)", r.failures,
              "level timeout: the 2 in flight failed");
    IS_INT(2, (long long)r.nreqs, "level timeout: the 2 never sent are not counted");
    OK(secs_since(t0) < 1.0, "level timeout: over in %.2f s", secs_since(t0));
    OK(r.reqs[0].chunks > 10, "level timeout: chunks came until then (%d)", r.reqs[0].chunks);
    tb_load_result_release(&r);
    srv_stop(s);
}

static void test_refuse_ids(void)
{
    struct srv *s = srv_start(REFUSE_IDS, 0, 0, 8, 1000);
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "";

    p = spec(s, url, sizeof url);
    p.concurrency = 1;
    p.warmup_requests = 1;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "ids refused: ran (%s)", err);
    OK(r.text_prompts, "ids refused: retried with text prompts");
    IS_STRING("text of about 8 tokens (the server refused id arrays: HTTP 400: prompt as token "
              "ids is not supported)",
              r.prompt_note, "ids refused: the prompt note says why");
    IS_INT(4, (long long)r.ok, "ids refused: all ok with text (%s)", r.failures);
    IS_INT(5, s->text_prompts, "ids refused: 4 counted and 1 warm-up text prompts");
    IS_INT(0, (long long)r.mismatched, "text prompts: prompt_tokens not held to seq_in");
    tb_load_result_release(&r);
    srv_stop(s);
}

static void test_short(void)
{
    struct srv *s = srv_start(SHORT, 0, 0, 8, 1000);
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "";

    p = spec(s, url, sizeof url);
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "short outputs: ran (%s)", err);
    IS_INT(4, (long long)r.ok, "short outputs: ok (%s)", r.failures);
    IS_INT(4, (long long)r.mismatched, "short outputs: all 4 counted as mismatched");
    IS_INT(6, r.reqs[0].output_tokens, "short outputs: 6 tokens kept, not corrected");
    tb_load_result_release(&r);
    srv_stop(s);
}

static void test_refused(void)
{
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "";
    int port = free_port();
    uint64_t t0 = tb_timer_now_ns();
    int rc;

    p = spec(NULL, url, sizeof url);
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    p.warmup_requests = 1;
    rc = tb_load_run(&p, &r, err, sizeof err);
    IS_INT(-1, rc, "nothing listening, with warm-up: -1");
    OK(strstr(err, "every warm-up request") && strstr(err, "connection refused"),
       "and the message says so: '%s'", err);
    OK(secs_since(t0) < 1, "at once (%.2f s)", secs_since(t0));
    tb_load_result_release(&r);
    p.warmup_requests = 0;
    IS_INT(0, tb_load_run(&p, &r, err, sizeof err), "without warm-up: the level runs");
    IS_STRING("4 x connection refused (requests 1, 2, 3, 4)", r.failures,
              "without warm-up: every request failed");
    tb_load_result_release(&r);
    t0 = tb_timer_now_ns();
    IS_INT(-1, tb_endpoint_wait_ready(url, 0.5, err, sizeof err), "wait_ready: nothing listens");
    OK(secs_since(t0) < 1.0 && strstr(err, "not ready within 0.5 s"),
       "wait_ready: gave up in %.2f s: '%s'", secs_since(t0), err);
    IS_INT(-1, tb_endpoint_probe(url, url, 0, err, 0, err, sizeof err) == 0 ? 0 : -1,
           "probe: nothing listens is an error");
}

static void test_spec(void)
{
    struct tb_load_spec p;
    struct tb_load_result r;
    char url[64], err[256] = "";
    p = spec(NULL, url, sizeof url);
    p.concurrency = 0;
    IS_INT(-1, tb_load_run(&p, &r, err, sizeof err), "a closed loop without concurrency");
    OK(strstr(err, "concurrency") != NULL, "is refused: '%s'", err);
    p = spec(NULL, url, sizeof url);
    p.requests = 0;
    IS_INT(-1, tb_load_run(&p, &r, err, sizeof err), "neither requests nor duration");
    OK(strstr(err, "duration_s") != NULL, "is refused: '%s'", err);
    tb_load_result_release(&r);
}

static void test_argv(void)
{
    char **argv = NULL, err[256] = "";
    int argc = 0;
    IS_INT(0,
           tb_argv_split("  vllm serve 'my model' --x \"a \\\"b\\\" c\" $HOME ~ `id` a\\ b '' ",
                         &argv, &argc, err, sizeof err),
           "argv: split (%s)", err);
    IS_INT(10, argc, "argv: 10 words");
    if (argc == 10) {
        IS_STRING("vllm", argv[0], "argv: a plain word");
        IS_STRING("my model", argv[2], "argv: single quotes group");
        IS_STRING("a \"b\" c", argv[4], "argv: double quotes with escaped quotes");
        IS_STRING("$HOME", argv[5], "argv: $HOME stays literal");
        IS_STRING("~", argv[6], "argv: ~ stays literal");
        IS_STRING("`id`", argv[7], "argv: backquotes stay literal");
        IS_STRING("a b", argv[8], "argv: a backslash escapes a space");
        IS_STRING("", argv[9], "argv: '' is an empty word");
    }
    OK(argv && argv[argc] == NULL, "argv: NULL-terminated");
    tb_argv_free(argv);
    IS_INT(0, tb_argv_split("a'b c'\"d\"\\'", &argv, &argc, err, sizeof err), "argv: joined");
    IS_STRING("ab cd'", argc == 1 ? argv[0] : "", "argv: quotes join into one word");
    tb_argv_free(argv);
    IS_INT(0, tb_argv_split("'a\\b'", &argv, &argc, err, sizeof err), "argv: backslash in '");
    IS_STRING("a\\b", argc == 1 ? argv[0] : "", "argv: a backslash is literal inside '...'");
    tb_argv_free(argv);
    IS_INT(-1, tb_argv_split("serve 'model", &argv, &argc, err, sizeof err),
           "argv: an unterminated quote fails");
    OK(strstr(err, "unterminated") != NULL && argv == NULL, "argv: says so: '%s'", err);
    IS_INT(-1, tb_argv_split("serve \"model", &argv, &argc, err, sizeof err),
           "argv: an unterminated double quote fails");
    IS_INT(-1, tb_argv_split("   ", &argv, &argc, err, sizeof err), "argv: no words fails");
    OK(strstr(err, "no words") != NULL, "argv: says so: '%s'", err);
}

static void test_server_proc(void)
{
    struct tb_server_proc p;
    char err[512] = "", how[128] = "", url[64], port_s[16];
    char *log = test_tmp_path("loadgen-server.log");
    uint64_t t0;
    pid_t pid;

    /* not a server: not ready in time, stopped */
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", free_port());
    {
        const char *argv[] = {"sleep", "30", NULL};
        t0 = tb_timer_now_ns();
        IS_INT(-1, tb_server_start(&p, argv, log, url, 0.6, err, sizeof err),
               "server_start: `sleep 30` is not ready");
        OK(strstr(err, "not ready within 0.6 s") != NULL, "and the error says so: '%s'", err);
        OK(secs_since(t0) < 2, "within the ready timeout (%.2f s)", secs_since(t0));
        IS_INT(0, p.pid, "no pid kept");
    }
    /* exits at once */
    {
        const char *argv[] = {"sh", "-c", "echo starting; echo 'no GPU found' >&2; exit 3", NULL};
        IS_INT(-1, tb_server_start(&p, argv, log, url, 5, err, sizeof err),
               "server_start: a child that exits at once");
        OK(strstr(err, "exited with status 3") && strstr(err, "'no GPU found'"),
           "the error names its status and the log's last line: '%s'", err);
    }
    {
        const char *argv[] = {"false", NULL};
        IS_INT(-1, tb_server_start(&p, argv, log, url, 5, err, sizeof err),
               "server_start: `false`");
        OK(strstr(err, "exited with status 1 before it was ready") && !strstr(err, "GPU"),
           "the error names status 1, no earlier run's log line: '%s'", err);
    }
    {
        const char *argv[] = {"/nonexistent/server", NULL};
        IS_INT(-1, tb_server_start(&p, argv, log, url, 5, err, sizeof err),
               "server_start: a program that is not there");
        OK(strstr(err, "cannot run") && strstr(err, "No such file"), "says so: '%s'", err);
    }
    /* this test binary as a real server */
    {
        int port = free_port();
        const char *argv[] = {"/proc/self/exe", "--serve", port_s, NULL};
        snprintf(port_s, sizeof port_s, "%d", port);
        snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
        err[0] = '\0';
        IS_INT(0, tb_server_start(&p, argv, log, url, 5, err, sizeof err),
               "server_start: a real server is ready (%s)", err);
        OK(p.pid > 0 && p.start_s > 0 && p.start_s < 5, "pid %ld, ready in %.3f s", (long)p.pid,
           p.start_s);
        pid = p.pid;
        tb_server_stop(&p, 2, how, sizeof how);
        IS_STRING("killed by signal 15 (Terminated)", how, "server_stop: ended by SIGTERM");
        OK(gone(pid), "server_stop: the child is gone");
        IS_INT(0, p.pid, "server_stop: no pid kept");
        tb_server_stop(&p, 2, how, sizeof how);
        IS_STRING("not running", how, "server_stop: twice is harmless");
    }
    /* a child that ignores SIGTERM gets SIGKILL after the grace */
    pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        signal(SIGTERM, SIG_IGN);
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    sleep_us(50000);
    memset(&p, 0, sizeof p);
    p.pid = pid;
    t0 = tb_timer_now_ns();
    tb_server_stop(&p, 0.3, how, sizeof how);
    IS_STRING("killed by signal 9 after 0.3 s", how, "server_stop: SIGKILL after the grace");
    OK(secs_since(t0) < 1.0, "server_stop: in %.2f s", secs_since(t0));
    OK(gone(pid), "server_stop: the child that ignored SIGTERM is gone");
    free(log);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--serve") == 0)
        return serve_main(atoi(argv[2]), argc >= 4 ? atoi(argv[3]) : 0);
    plan_lazy();
    test_spec();
    test_good();
    test_bad(DROP, "dropped", "4 x connection dropped (requests 1, 2, 3, 4)", true, 5, 2);
    test_bad(BAD_JSON, "bad JSON", "4 x malformed event 2: not JSON (", false, 5, 2);
    test_bad(HTTP_500, "HTTP 500", "4 x HTTP 500: boom (requests 1, 2, 3, 4)", true, 5, 2);
    test_bad(ENDLESS, "endless stream", "4 x request timeout (0.3 s) (requests 1, 2, 3, 4)", true,
             0.3, 1.5);
    test_bad(SILENT, "silent server", "4 x request timeout (0.3 s) (requests 1, 2, 3, 4)", true,
             0.3, 1.5);
    test_level_timeout();
    test_refuse_ids();
    test_short();
    test_refused();
    test_argv();
    test_server_proc();
    return 0;
}
