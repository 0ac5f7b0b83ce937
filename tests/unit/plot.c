/* tests/unit/plot.c: gnuplot charts through fork/exec: a real chart, byte-identical
 * reruns, the stale output removed, a script error, a missing data file, gnuplot
 * missing, and PNG where pngcairo exists. */
#include "tb_plot.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *path, const char *text)
{
    char err[512];
    if (tb_write_file_atomic(path, text, strlen(text), err, sizeof err) != 0)
        bail("%s", err);
}

static char *slurp(const char *path, size_t *len)
{
    char err[512], *data = NULL;
    if (tb_read_file(path, &data, len, err, sizeof err) != 0)
        return NULL;
    return data;
}

int main(void)
{
    char err[1024] = "", why[512] = "";
    char *src = test_src_path(".");
    char *data = test_tmp_path("plot_data.tsv");
    char *svg = test_tmp_path("plot_chart.svg");
    char *png = test_tmp_path("plot_chart.png");
    char *badgp = test_tmp_path("plot_bad.gp");
    const char *title = "Throughput by run: llama-tiny (plot test)";
    const char *args[] = {"svg", title, "prefill decode", "", "linear"};
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;

    /* the scripts come from this source tree */
    setenv("TRNBENCH_DATADIR", src, 1);
    if (!tb_plot_has_terminal("svg", why, sizeof why))
        skip_all("gnuplot with the svg terminal is needed: %s", why);
    plan_lazy();

    write_file(data,
               "llama-tiny prefill b1 in64\tprefill\t2048.5\t1990\t2101\thost, measured\n"
               "llama-tiny decode b1 in64 out16\tdecode\t410\t395.2\t418\thost, measured\n"
               "llama-tiny decode b4 in64 out16\tdecode\t1280\tNaN\tNaN\ttrn1.32xlarge, modeled\n");
    IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "throughput chart drawn %s", err);
    a = slurp(svg, &alen);
    OK(a && alen > 1000, "SVG exists and is not empty (%zu bytes)", alen);
    OK(a && strstr(a, "<svg") != NULL, "it is an SVG");
    OK(a && strstr(a, title) != NULL, "it carries the title");
    OK(a && strstr(a, "trn1.32xlarge, modeled") != NULL, "second label line drawn");
    OK(a && strstr(a, "prefill") && strstr(a, "decode"), "legend names the phases");
    OK(a && !strstr(a, "scale(0"), "no zero-size point markers (some renderers reject them)");

    IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "drawn again");
    b = slurp(svg, &blen);
    OK(a && b && alen == blen && !memcmp(a, b, alen), "byte-identical on a rerun");
    free(b);

    {
        const char *cargs[] = {"svg", "Cost per million tokens: plot test",
                               "usd_per_mtok_in usd_per_mtok_out", "", "log"};
        write_file(
            data,
            "llama-tiny prefill b1 in64\tusd_per_mtok_in\t0.0136\t0.0132\t0.014\thost, measured\n"
            "llama-tiny decode b1 in64 out16\tusd_per_mtok_out\t2.5\t2.45\t2.61\thost, measured\n");
        IS_INT(TB_PLOT_OK, tb_plot_run("cost", data, svg, cargs, 5, err, sizeof err),
               "cost chart drawn on a log scale %s", err);
        b = slurp(svg, &blen);
        OK(b && strstr(b, "log scale") && strstr(b, "USD per million tokens"),
           "cost axis says USD and log scale");
        free(b);
    }

    /* failures */
    write_file(svg, "stale");
    write_file(badgp, "set terminal svg\nset output ARG2\nplot ARG1 using 1:2 with nosuchstyle\n");
    IS_INT(TB_PLOT_FAILED, tb_plot_run(badgp, data, svg, NULL, 0, err, sizeof err),
           "a script error fails");
    OK(strstr(err, "plot_bad.gp") && strstr(err, "exit status"), "message names the script: %s",
       err);
    b = slurp(svg, &blen);
    OK(!b || !strstr(b, "stale"), "the stale output was removed first");
    free(b);
    IS_INT(TB_PLOT_FAILED,
           tb_plot_run("throughput", "/nonexistent/data.tsv", svg, args, 5, err, sizeof err),
           "a missing data file fails before gnuplot runs");
    OK(strstr(err, "no data file '/nonexistent/data.tsv'") != NULL, "%s", err);
    IS_INT(TB_PLOT_FAILED, tb_plot_run("no_such_chart", data, svg, args, 5, err, sizeof err),
           "a missing script fails");
    OK(strstr(err, "no_such_chart.gp") != NULL, "%s", err);
    {
        const char *few[] = {"svg"};
        IS_INT(TB_PLOT_FAILED, tb_plot_run("throughput", data, svg, few, 1, err, sizeof err),
               "too few arguments: the script's usage check fails it");
        OK(strstr(err, "usage") != NULL, "gnuplot's message is passed on: %s", err);
    }
    OK(!tb_plot_has_terminal("nosuchterminal", why, sizeof why), "an unknown terminal is absent");
    OK(strstr(why, "no 'nosuchterminal' terminal") != NULL, "%s", why);

    setenv("TRNBENCH_GNUPLOT", "/nonexistent/gnuplot", 1);
    IS_INT(TB_PLOT_MISSING, tb_plot_run("throughput", data, svg, args, 5, err, sizeof err),
           "gnuplot missing is told apart");
    OK(strstr(err, "cannot run '/nonexistent/gnuplot'") != NULL, "%s", err);
    OK(!tb_plot_has_terminal("svg", why, sizeof why), "and has no terminals");
    unsetenv("TRNBENCH_GNUPLOT");

    if (!tb_plot_has_terminal("pngcairo", why, sizeof why)) {
        skip("no PNG: %s", why);
    } else {
        const char *pargs[] = {"png", title, "usd_per_mtok_in usd_per_mtok_out"};
        IS_INT(TB_PLOT_OK, tb_plot_run("throughput", data, png, pargs, 3, err, sizeof err),
               "PNG drawn with pngcairo %s", err);
        b = slurp(png, &blen);
        OK(b && blen > 8 && !memcmp(b, "\x89PNG", 4), "it is a PNG (%zu bytes)", blen);
        free(b);
    }

    free(a);
    free(src);
    free(data);
    free(svg);
    free(png);
    free(badgp);
    return 0;
}
