/*
 * harness/base/tb_log.h: the name the library speaks under. The plan, the recorder and
 * the executors print progress and notes on stderr as "trnbench CMD: ...", where CMD is
 * the command that called them: the dispatcher (cli.c) sets it once, before the command
 * runs, so the plan that `compare` executes says "trnbench compare:", not "trnbench run:".
 *
 * State: one process-wide name, set before any thread starts and read after; until it is
 * set the name is "trnbench". Lines are written whole (the stream is locked around each).
 */
#ifndef TB_LOG_H
#define TB_LOG_H

#include "tb_util.h"

/* The command the library speaks for ("compare"); NULL or "" for none. Copied (cut at 63
 * bytes). */
void tb_log_prefix(const char *cmd);
/* "trnbench compare", or "trnbench" when none is set: the prefix without its colon (a
 * progress line's `who`). Valid until the next tb_log_prefix. */
const char *tb_log_name(void);
/* "trnbench CMD: " and the formatted text on stderr; fmt ends the line itself ("\n"). */
void tb_logf(const char *fmt, ...) TB_PRINTF(1, 2);

#endif
