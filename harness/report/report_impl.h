/*
 * harness/report/report_impl.h: the report stage's insides, shared by its files and by
 * nothing else (the API is tb_report.h):
 *
 *   report.c   tb_report_write and the sections of report.md and report.html
 *   charts.c   the charts (gnuplot), kept as SVG for the HTML
 *   publish.c  the scratch folder, then rename: how the files reach the output folder
 *   labels.c   the words and numbers the sections and the charts share, and where a
 *              chart's point labels go so that none overlaps another
 *   serving.c  the section on servers measured under load (the endpoint executor)
 *
 * The report reads three things it does not own the making of: the results
 * (tb_results.h), the price tables (tb_pricing.h) and the cost table (tb_cost.h); it
 * writes nothing back into them.
 */
#ifndef TB_REPORT_IMPL_H
#define TB_REPORT_IMPL_H

#include "tb_cost.h"
#include "tb_doc.h"
#include "tb_model.h"
#include "tb_pricing.h"
#include "tb_report.h"
#include "tb_results.h"
#include "tb_util.h"
#include "tb_validate.h"

#include <stdbool.h>
#include <stddef.h>

/* ---- the report being built ---- */

/* A chart drawn into the scratch folder. */
struct tb_report_chart {
    char name[48];     /* file name without extension: "throughput", "interactivity-1" */
    char caption[600]; /* what it shows, for both documents */
    char fold[160];    /* "": shown; else the HTML folds it away under this line */
    char *svg;         /* owned: the SVG text, inlined into report.html */
    bool png;          /* a PNG copy was drawn beside the SVG */
};
#define TB_REPORT_MAX_CHARTS 16

/* The output folder and the scratch folder inside it (publish.c). */
struct tb_report_scratch {
    char outdir[4096]; /* where the report goes */
    char tmpdir[4200]; /* OUTDIR/.report.tmp.PID: every file is written here first */
    bool made;         /* tmpdir exists: tb_report_scratch_remove removes it */
};

struct report {
    const struct tb_report_opts *o; /* borrowed: the caller's options */
    struct tb_results res;          /* owned: the results files, rows in report order */
    struct tb_pricing pricing;      /* owned when have_pricing */
    bool have_pricing;
    bool borrowed;            /* pricing and model: shallow copies of o's catalogue */
    struct tb_costs cs;       /* owned: the cost stage's table, only read here */
    struct tb_model model;    /* owned when have_val: the performance model, loaded for
                                 its validation error only */
    struct tb_validation val; /* owned when have_val: the model's error per chip family
                                 and phase on reports/validation/published.csv */
    bool have_val;
    char *assess_md, *assess_html; /* owned: the assessment section, or NULL */
    const char *assess_why;        /* borrowed (the options' or a static text): why there
                                      is none */
    struct tb_report_scratch dir;
    struct tb_report_chart charts[TB_REPORT_MAX_CHARTS]; /* ncharts drawn, in order */
    int ncharts;
    char notes[1024]; /* what is missing and why, one per line (tb_report_note) */
    /* the section "Collectives: measured against the model" (collectives.c) */
    struct tb_coll_meas *coll; /* owned: ncoll measured collectives, by sweep then size */
    size_t ncoll;
    double *coll_busbw;     /* owned: ncoll modeled busbw, bytes/s (NAN: not modeled) */
    struct tb_model cmodel; /* owned when have_cmodel: ours with --efficiency's rows */
    bool have_cmodel;
    double *coll_host_bw; /* per measured collective, the host's memory bandwidth, bytes/s
                             (0: not a host link; tb_coll_host_bws) */
    char coll_host[512];  /* how it was had ("" when not needed) */
    size_t coll_nwhy;     /* points not modeled */
    char coll_why[600];   /* the first one's reason */
    char now[32];         /* when the report is written, ISO 8601 UTC */
};

/* A field of a results row by column name (tb_result_field; the report reads many). */
static inline const char *F(const struct tb_result *x, const char *name)
{
    return tb_result_field(x, name);
}

/* ---- labels.c ---- */

/* Append a line to R->notes (dropped when full): what is missing and why. */
void tb_report_note(struct report *R, const char *fmt, ...) TB_PRINTF(2, 3);
/* A number with 4 significant digits, no exponent for ordinary magnitudes; "" for NAN.
 * Returns buf. */
/* The section "Servers measured under load": each serving level's throughput, latency
 * p50 and p99, and the model's figure for it (serving.c). Nothing when there are none. */
void tb_report_write_serving(struct tb_doc *d, const struct report *R);
const char *tb_report_num(double v, char *buf, size_t len);
/* buf = "dir/name"; -1 when it does not fit. */
int tb_report_path_in(char *buf, size_t len, const char *dir, const char *name);
/* A row's shape in words: "b8 in1024 out128", "b1 1024px 28 steps fp8". */
void tb_report_shape(const struct tb_result *x, char *buf, size_t len);
/* Chart labels of a row: "model phase shape" and "target, provenance". */
void tb_report_run_label(const struct tb_result *x, char *buf, size_t len, char *buf2, size_t len2);
/* Whether x was measured elsewhere and imported (trnbench import: provenance measured,
 * executor import), not run by trnbench. */
bool tb_report_imported(const struct tb_result *x);
/* A row's provenance in words: "measured (imported)" for an imported row, else its
 * provenance ("measured", "modeled", "published"). */
const char *tb_report_prov_label(const struct tb_result *x);
/* The rows a summary of "who ran it" speaks for: prov -1 all rows, TB_PROV_MEASURED the
 * rows measured here (imported ones are not), TB_REPORT_IMPORTED the imported rows,
 * else the rows of that provenance. */
#define TB_REPORT_IMPORTED TB_NPROV
bool tb_report_selects(const struct tb_result *x, int prov);
/* Distinct values of column col over the rows prov selects (tb_report_selects), joined
 * by "; ", at most four and "; ...". */
void tb_report_distinct(const struct report *R, int prov, const char *col, char *buf, size_t len);
/* The first to the last timestamp of the rows prov selects, or "not recorded". */
void tb_report_time_span(const struct report *R, int prov, char *buf, size_t len);
/* How many rows prov selects. */
size_t tb_report_count(const struct report *R, int prov);
/* The counters column of the measured rows: the events read, or why there are none. */
void tb_report_counters(const struct report *R, char *buf, size_t len);
/* The models of the report for a title: their names, or how many when they would not
 * fit on the line. */
void tb_report_models(const struct report *R, char *buf, size_t len);
/* The results files' paths as the documents name them: no machine's path. An absolute
 * path becomes relative to the report's folder when inside it ("results.csv"), else to
 * the working folder when inside that, else the file's name; relative ones stay. Call
 * once the inputs are checked and cost.csv written (its results_file keeps the path as
 * given): the paths are shortened in place. */
void tb_report_short_paths(struct report *R);
/* A token count in words: "1 trillion", "300 billion", "5e+06". Returns buf. */
const char *tb_report_tokens_text(double n, char *buf, size_t len);

/* Point labels of a chart that never overlap: a box in pixels, y down. */
struct tb_label_box {
    double x0, y0, x1, y1;
};
struct tb_label {
    double ax, ay; /* in: the point it labels, pixels */
    double w, h;   /* in: its text's size, pixels; w 0 for a point without a label */
    bool placed;   /* out: a place was found (else the label is left out) */
    double x, y;   /* out, when placed: its text's left edge and vertical centre */
};
/* The width in pixels of s in a sans font of font_px pixels, erring wide (browsers draw
 * gnuplot's "Helvetica" with whatever sans font they have). */
double tb_report_text_width(const char *s, double font_px);
/* Place the labels in order, each beside its point (right, left, above or below, near
 * first), inside area, clear of every point's marker (marker pixels each side) and of
 * the labels placed before it, pad pixels apart; a label with no such place is left out
 * (placed false). Returns how many were placed. */
size_t tb_report_place_labels(struct tb_label *l, size_t n, double marker, double pad,
                              struct tb_label_box area);

/* ---- collectives.c ---- */

/* Read the measured collectives of R->res and predict each with the model (ours, and
 * R->o->efficiency's rows over it; the host's memory bandwidth given or measured now).
 * 0 (nothing when there are none), or -1 with a message (a bad collective row, a bad
 * efficiency file). */
int tb_report_coll_load(struct report *R, char *err, size_t errlen);
void tb_report_coll_release(struct report *R);
/* The section; nothing when R has no collectives. */
void tb_report_write_collectives(struct tb_doc *d, const struct report *R);
/* A size in words: "8 B", "2 KiB", "32 MiB" (binary units where exact). Returns buf. */
const char *tb_report_coll_size(double bytes, char *buf, size_t len);

/* ---- charts.c ---- */

/* Draw every chart the results and costs allow into R->dir.tmpdir and R->charts, with a
 * note for each one that cannot be drawn and why. Returns 0 (gnuplot missing is a
 * note, not a failure), or -1 when gnuplot or a file failed. */
int tb_report_draw_charts(struct report *R, char *err, size_t errlen);

/* ---- publish.c ---- */

/* Create outdir (mkdir -p) and a scratch folder inside it. Returns 0 or -1. */
int tb_report_scratch_open(struct tb_report_scratch *s, const char *outdir, char *err,
                           size_t errlen);
/* Write b into the scratch folder as name. Returns 0 or -1. */
int tb_report_scratch_write(const struct tb_report_scratch *s, const char *name,
                            const struct tb_sbuf *b, char *err, size_t errlen);
/* Move the finished files into place (report.html last) and remove the outputs of an
 * older report that this one did not make. Returns 0 or -1. */
int tb_report_scratch_publish(const struct tb_report_scratch *s, char *err, size_t errlen);
/* Remove the scratch folder and what is left in it (nothing once published). */
void tb_report_scratch_remove(struct tb_report_scratch *s);

#endif
