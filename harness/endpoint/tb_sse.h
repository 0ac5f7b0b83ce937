/*
 * harness/endpoint/tb_sse.h: an incremental parser of server-sent events (the
 * text/event-stream of the WHATWG HTML standard, section 9.2), as OpenAI-compatible
 * servers stream completions: bytes go in as they arrive, split anywhere; every event
 * comes out whole through a callback.
 *
 * Lines end in LF, CRLF or CR. A line starting with ':' is a comment. "data:" lines
 * append their value (one leading space dropped) to the event's data, joined by '\n';
 * other fields (event, id, retry) are ignored. A blank line ends the event, which is
 * passed on when it had data. A line, or an event's data, longer than max_bytes is an
 * error, so a stream that never ends its line costs bounded memory.
 *
 * Ownership: a tb_sse owns its buffers; release with tb_sse_release. The data passed
 * to the callback is borrowed, valid during the call only. Pure: no I/O, no globals.
 */
#ifndef TB_SSE_H
#define TB_SSE_H

#include <stdbool.h>
#include <stddef.h>

#define TB_SSE_MAX_BYTES ((size_t)1 << 20) /* the default bound on a line and on an event */

/* Called once per event with its data (NUL-terminated, len bytes, no final '\n').
 * Return 0 to go on; anything else stops tb_sse_feed, which returns it. */
typedef int (*tb_sse_event_fn)(void *ctx, const char *data, size_t len);

struct tb_sse {
    size_t max_bytes; /* bound on a line and on an event's data */
    char *line;       /* owned: the line being read [line_len], not terminated */
    size_t line_len, line_cap;
    char *data; /* owned: the event's data so far [data_len] (each line + '\n') */
    size_t data_len, data_cap;
    bool has_data; /* a data field was seen in this event (it may be empty) */
    bool after_cr; /* the last byte was CR: an LF right after it ends nothing more */
    size_t events; /* events passed on so far */
    char err[96];  /* why tb_sse_feed returned -1 */
};

/* Initialise; max_bytes 0 means TB_SSE_MAX_BYTES. Allocates nothing. */
void tb_sse_init(struct tb_sse *p, size_t max_bytes);
void tb_sse_release(struct tb_sse *p);

/* Parse n more bytes, calling fn for each event they complete. Returns 0; -1 when a line
 * or an event grew past max_bytes or memory ran out (p->err says which; the parser is
 * then unusable); or fn's non-zero return. */
int tb_sse_feed(struct tb_sse *p, const char *buf, size_t n, tb_sse_event_fn fn, void *ctx);

#endif
