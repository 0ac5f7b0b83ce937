/*
 * harness/report/tb_plot.h: charts through gnuplot. A chart is a static script
 * reports/NAME.gp run as `gnuplot -c SCRIPT DATA OUTPUT ARGS...` by fork/execvp with an
 * argv array (no shell), stdin from /dev/null and stderr captured for the message.
 * Because a failing gnuplot can leave a 0-byte output and a missing data file only
 * warns, the output is deleted first, the data file must exist, and success needs exit
 * status 0 and a non-empty output.
 *
 * The program is $TRNBENCH_GNUPLOT when set (tests point it at a missing file), else
 * "gnuplot" from PATH. Nothing here keeps state between calls; the caller owns every
 * buffer it passes.
 */
#ifndef TB_PLOT_H
#define TB_PLOT_H

#include <stdbool.h>
#include <stddef.h>

enum tb_plot_status {
    TB_PLOT_OK = 0,
    TB_PLOT_FAILED = -1, /* gnuplot ran and failed, or the inputs were wrong */
    TB_PLOT_MISSING = -2 /* gnuplot cannot be run at all (not installed) */
};

/* The gnuplot program that tb_plot_run executes. Never NULL. */
const char *tb_plot_program(void);

/* Path of a chart script: script itself when it contains '/', else
 * tb_datadir()/reports/SCRIPT.gp. Returns 0, or -1 when it does not fit in len. */
int tb_plot_script_path(const char *script, char *path, size_t len);

/* Run the script with ARG1 = data, ARG2 = output, then args[0..nargs-1]. Returns
 * TB_PLOT_OK, TB_PLOT_MISSING (err says gnuplot was not found), or TB_PLOT_FAILED with
 * err naming the script and carrying gnuplot's own message (its last stderr lines). */
int tb_plot_run(const char *script, const char *data, const char *output, const char *const *args,
                size_t nargs, char *err, size_t errlen);

/* Whether gnuplot can open the terminal (e.g. "pngcairo", "svg"). Returns true, or
 * false with the reason in why (gnuplot missing, or the terminal unknown to it). */
bool tb_plot_has_terminal(const char *terminal, char *why, size_t whylen);

#endif
