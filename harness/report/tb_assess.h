/*
 * harness/report/tb_assess.h: the migration assessment. A team describes its workloads in an
 * assessment file (CSV, format in reports/examples/README.md): model, phase, load,
 * latency targets, the instance type it runs on now and how it buys it, and what moving
 * would cost in engineering time. For every workload and every candidate instance type
 * with a price, the assessment sizes the fleet that carries the load within the
 * targets (performance model, tb_model.h), prices it (tb_pricing.h), and compares it
 * with the current fleet: monthly cost, saving, break-even on the engineering cost, the
 * saving's sensitivity to prices (+-20%) and to the model's validation error for the
 * chip family, and the risks to check before moving (pricing/risks.csv).
 *
 * tb_assess.c computes; harness/report/assess_doc.c writes the results as
 * CSV and, through tb_doc, as Markdown and HTML.
 *
 * Ownership: a struct tb_assessment owns its rows and tables; release frees them.
 */
#ifndef TB_ASSESS_H
#define TB_ASSESS_H

#include "tb_csv.h"
#include "tb_model.h"
#include "tb_pricing.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Decision thresholds from practice: inputs with defaults, never hidden constants. */
struct tb_assess_opts {
    double min_monthly_usd; /* migration rarely pays below this spend (default 10000) */
    double claim_low;       /* savings claims to test: low end (default 0.30) */
    double claim_high;      /* and high end (default 0.50) */
    double price_swing;     /* price sensitivity, fraction (default 0.20) */
    double hours_per_month; /* 730 */
    const char *validation; /* published.csv for the model's error per family (NULL: the
                               data folder's reports/validation/published.csv) */
};

void tb_assess_opts_init(struct tb_assess_opts *o);

/* One workload against one candidate. */
struct tb_assess_row {
    size_t workload;       /* index into the file's rows */
    const char *candidate; /* instance type (borrowed from the catalogue) */
    bool current;          /* the workload's current instance type */
    bool ok;               /* sized and priced; else why */
    char why[512];
    long fleet;          /* instances */
    double capacity;     /* load one instance carries (tokens/s, images/s) */
    double need;         /* the load (same unit) */
    const char *unit;    /* "tokens/s" or "images/s" */
    double usd_per_hour; /* one instance */
    char price[600];     /* price row used: region, purchase, date, source */
    double monthly_usd;
    double saving_usd; /* current - this (NAN without a current cost) */
    double saving_frac;
    double break_even_months; /* engineering cost / monthly saving; INFINITY when none */
    double saving_lo_price, saving_hi_price; /* candidate price +-swing */
    double model_err;                        /* the family's median validation error (fraction) */
    double saving_lo_model, saving_hi_model; /* capacity +-model_err */
    char layout[512];                        /* the model's assumptions for one instance */
    char verdict[256];
    const char *family; /* the candidate's chip family (borrowed from the model) */
    char risks[2048];   /* "topic: text; ..." for the candidate's family */
};

struct tb_assessment {
    struct tb_csv_table csv;    /* owned: the assessment file */
    struct tb_assess_row *rows; /* owned */
    size_t nrows;
    double *current_monthly;   /* owned: per workload, NAN when unknown */
    struct tb_csv_table risks; /* owned: pricing/risks.csv (empty when absent) */
    bool have_risks;
    char (*current_why)[256]; /* owned: per workload */
};

/* Read and check the file (a missing or bad field: TB_EINPUT, "file: line N: field 'x':
 * ..."; an unknown instance, region or purchase model is an input error too), then
 * assess. Returns TB_OK, TB_EINPUT on input errors, TB_EFAIL on other failures (memory,
 * an unreadable pricing/risks.csv), with the message in err. */
int tb_assess_run(struct tb_assessment *as, const char *path, const struct tb_model *m,
                  const struct tb_assess_opts *o, char *err, size_t errlen);
void tb_assess_release(struct tb_assessment *as);

/* Whether a risk of pricing/risks.csv listed for risk_family ("nvidia", "neuron", "all")
 * applies to a chip family ("neuron-v2" is a "neuron"). */
bool tb_assess_risk_applies(const char *risk_family, const char *family);

/* ---- outputs: harness/report/assess_doc.c ---- */

struct tb_doc;

/* Append the assessment to both documents of d (tb_doc.h): its title a heading of
 * `level` (1-5), each workload one level below, with its candidates, verdicts and risks.
 * Returns TB_OK, or TB_EFAIL when memory ran out (d is then incomplete). */
int tb_assess_doc(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                  struct tb_doc *d);

/* Write the rows as CSV (assessment.csv); the Markdown document (assessment.md); the
 * HTML page (assessment.html: self-contained, the report's stylesheet and sortable
 * tables). Each returns TB_OK, or TB_EFAIL on a write or memory failure. */
int tb_assess_write_csv(const struct tb_assessment *as, FILE *f);
int tb_assess_write_md(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f);
int tb_assess_write_html(const struct tb_assessment *as, const struct tb_assess_opts *o, FILE *f);
/* The same as a section of another document (tb_assess_doc at `level`): the Markdown
 * text, or the HTML without a page around it. */
int tb_assess_write_md_at(const struct tb_assessment *as, const struct tb_assess_opts *o, int level,
                          FILE *f);
int tb_assess_write_html_at(const struct tb_assessment *as, const struct tb_assess_opts *o,
                            int level, FILE *f);

#endif
