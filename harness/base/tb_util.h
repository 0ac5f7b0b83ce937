/*
 * harness/base/tb_util.h: small helpers shared by the harness: error buffers, checked
 * allocation sizes, number parsing with range checks, atomic file replacement.
 *
 * Library code never exits: functions return 0 on success and -1 on failure, writing
 * a message into a caller-supplied (err, errlen) buffer, e.g.
 *   "suites/default.suite: line 4: field 'reps': not a positive integer: 'x'"
 */
#ifndef TB_UTIL_H
#define TB_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __GNUC__
#define TB_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TB_PRINTF(f, a)
#endif

/* Always-on assertion for programmer errors (benchmarks must not run on corrupt state). */
#define TB_ASSERT(x)                                                                               \
    do {                                                                                           \
        if (!(x))                                                                                  \
            tb_assert_fail(#x, __FILE__, __LINE__);                                                \
    } while (0)
void tb_assert_fail(const char *expr, const char *file, int line);

/* The status convention of every module: 0 ok, -1 a failure (a run, the disk, memory),
 * -2 bad input (a file, line and field named in the message). Commands map them to
 * exit status 0, 1 and 2. */
enum tb_status {
    TB_OK = 0,
    TB_EFAIL = -1,
    TB_EINPUT = -2,
};
/* "ok", "failed", "bad input". */
const char *tb_status_to_string(enum tb_status s);

/* Format into err (may be NULL). Returns -1 so callers can `return tb_err(...)`. */
int tb_err(char *err, size_t errlen, const char *fmt, ...) TB_PRINTF(3, 4);

/* Append one formatted line ("...\n") to the text in buf (len bytes, NUL-terminated):
 * a list of notes; a line that finds no room is cut, and none is added once buf is
 * full. */
void tb_lines_vadd(char *buf, size_t len, const char *fmt, va_list ap);

/* Parse the whole string as a number. Return 0, or -1 when s is empty, has trailing
 * characters, or is out of [lo, hi]. */
int tb_parse_long(const char *s, long lo, long hi, long *out);
int tb_parse_double(const char *s, double lo, double hi, double *out);
/* "true"/"false"/"yes"/"no"/"1"/"0". */
int tb_parse_bool(const char *s, bool *out);

/* Strip leading and trailing white space in place; returns the first kept character. */
char *tb_trim(char *s);

/* ---- text files from users (catalogue, suite and CSV files) ----
 * One rule for all of them: a UTF-8 byte order mark at the start of the file (what Excel
 * and Notepad write) is stripped, and a NUL byte anywhere is refused, naming file, line
 * and field, since C strings would silently end the field there ("1<NUL>32416" read as
 * 1). */

/* The most bytes a model or suite file may hold: far above any real one (a few KB), a
 * bound on what a wrong path (a device, a log) makes us read. */
#define TB_TEXT_FILE_MAX (1L << 20)

/* Open path for reading as one of those files: a regular file (not a device, FIFO or
 * folder) of at most max bytes. NULL with "cannot open 'path': ..." or "'path' is not a
 * regular file" or "'path' holds N bytes, more than ..." in err. The caller fcloses. */
FILE *tb_text_open(const char *path, long max, char *err, size_t errlen);
/* Strip a UTF-8 BOM from the start of buf (n bytes, as getline read line 1): returns the
 * new length. */
size_t tb_text_strip_bom(char *buf, size_t n);
/* Check line number `line` of path, n bytes in buf as getline read it: strip the BOM
 * when it is line 1, refuse a NUL byte. Returns the new length, or -1 with
 * "path: line N: field 'key': a NUL byte (byte B of the line)" in err; the field is the
 * key of the "key = value" or "key=value" the NUL falls in, else the line's first word. */
long tb_text_line(const char *path, long line, char *buf, size_t n, char *err, size_t errlen);

/* The next "key = value" line of a catalogue file ('#' starts a comment, blank lines
 * skipped; lines checked by tb_text_line). buf and cap are getline's; *line counts lines. Returns 1
 * with *key and *val trimmed and pointing into *buf, 0 at the end of the file, -1 with "path: line
 * N: expected 'key = value', got '...'" or a read error in err. */
int tb_kv_next(FILE *f, const char *path, char **buf, size_t *cap, long *line, char **key,
               char **val, char *err, size_t errlen);

/* malloc(n * size) with overflow check; NULL on overflow or failure. */
void *tb_alloc_array(size_t n, size_t size);
/* strdup that returns NULL on NULL. */
char *tb_strdup(const char *s);

/* Write len bytes to path atomically: path.tmp.PID, fsync, rename; a reader sees the old
 * file or the new one, never a part. On failure (a full disk: "cannot write 'D/x.csv' (as
 * 'D/x.csv.tmp.12'): No space left on device") path is left as it was and no temporary
 * remains. SIGINT, SIGTERM, SIGHUP and SIGQUIT wait until the rename or the removal is
 * done, so only kill -9 or a crash can leave a temporary: the next write of path (or
 * tb_tmp_sweep) removes it. */
int tb_write_file_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* One file of tb_write_files_atomic. */
struct tb_file_out {
    const char *path; /* borrowed */
    const void *data; /* borrowed: len bytes */
    size_t len;
};
/* Replace n files together: every temporary written and synced first, and only when all
 * n are complete renamed over their files, in order. A failure to write any (a full disk)
 * replaces none. Only a crash between the renames (microseconds, no I/O but the renames)
 * or a failed rename (said) can leave some files replaced. Signals as above. */
int tb_write_files_atomic(const struct tb_file_out *f, size_t n, char *err, size_t errlen);
/* Remove the temporaries of path (path.tmp.PID beside it) that a process that no longer
 * runs left behind (kill -9 before its rename). A PID of a running process, ours or
 * another's, keeps its file. The removed files' names go into removed (may be NULL),
 * quoted, comma-separated. Returns how many. (A folder shared between hosts: a PID is
 * only checked on this one.) */
int tb_tmp_sweep(const char *path, char *removed, size_t rlen);
/* Read a whole file into a NUL-terminated malloc'ed buffer. */
int tb_read_file(const char *path, char **data, size_t *len, char *err, size_t errlen);
/* mkdir -p. */
int tb_mkdir_p(const char *path, char *err, size_t errlen);
bool tb_file_exists(const char *path);

/* Data folder holding workloads/, suites/, pricing/, reports/: $TRNBENCH_DATADIR, else
 * the source tree the binary was built in (found from /proc/self/exe), else the
 * installed share folder. Never NULL. */
const char *tb_datadir(void);
/* This program's own path (/proc/self/exe) into buf. Returns 0, or -1 with a message. */
int tb_self_exe(char *buf, size_t len, char *err, size_t errlen);

/* Build facts compiled in by the makefile. */
const char *tb_version_commit(void);
const char *tb_version_compiler(void);
const char *tb_version_cflags(void);
const char *tb_version_installed_datadir(void);
/* Where `make install` puts the CUDA plugin, and whether nvcc built one with this
 * binary (harness/tb_gpu.h). */
const char *tb_version_installed_libdir(void);
int tb_version_cuda_built(void);

/* UTC timestamp "2026-11-22T18:42:00Z". */
void tb_utc_now(char *buf, size_t len);

#endif
