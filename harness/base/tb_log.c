/* harness/base/tb_log.c: the name the library speaks under (tb_log.h). */
#include "tb_log.h"

#include <stdarg.h>
#include <stdio.h>

static char log_name[80] = "trnbench"; /* "trnbench" or "trnbench CMD" */

void tb_log_prefix(const char *cmd)
{
    if (cmd && *cmd)
        snprintf(log_name, sizeof log_name, "trnbench %.63s", cmd);
    else
        snprintf(log_name, sizeof log_name, "trnbench");
}

const char *tb_log_name(void)
{
    return log_name;
}

void tb_logf(const char *fmt, ...)
{
    va_list ap;
    flockfile(stderr);
    fprintf(stderr, "%s: ", log_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    funlockfile(stderr);
}
