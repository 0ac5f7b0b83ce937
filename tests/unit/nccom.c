/* tests/unit/nccom.c: nccom-test's results as tb_nccom.h reads them, from the NCCOM-TEST
 * User Guide's examples (tests/data/neuron/nccom-test/README.md): the older table
 * (time(us), GiB/s), the current one (time:avg(us), 10^9 B/s) with --stats, with
 * --show-algorithm and --show-input-output-size columns, and the --report-to-json-file
 * report; the columns found by name, the unit of algbw found and recorded, the time's
 * statistic recorded as what it is, and tables that are not nccom-test's refused. */
#include "tb_nccom.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tb_coll_result r;
static struct tb_nccom_format f;
static char err[1024];

/* Parse the fixture tests/data/neuron/nccom-test/<name> (a .json through the report's
 * parser) for op over nranks; its return code. */
static int parse_fixture(const char *name, enum tb_coll_op op, int nranks)
{
    char rel[256], *path, *text = NULL;
    size_t len = 0;
    int rc;

    snprintf(rel, sizeof rel, "tests/data/neuron/nccom-test/%s", name);
    path = test_src_path(rel);
    if (tb_read_file(path, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    err[0] = '\0';
    tb_coll_result_release(&r);
    if (strstr(name, ".json"))
        rc = tb_nccom_parse_json(name, text, len, op, nranks, true, &r, &f, err, sizeof err);
    else
        rc = tb_nccom_parse(name, text, len, op, nranks, true, &r, &f, err, sizeof err);
    free(text);
    free(path);
    return rc;
}

static int parse_text(const char *text)
{
    err[0] = '\0';
    tb_coll_result_release(&r);
    return tb_nccom_parse("t", text, strlen(text), TB_COLL_ALL_REDUCE, 2, false, &r, &f, err,
                          sizeof err);
}

static int parse_json(const char *text)
{
    err[0] = '\0';
    tb_coll_result_release(&r);
    return tb_nccom_parse_json("j", text, strlen(text), TB_COLL_ALL_REDUCE, 2, false, &r, &f, err,
                               sizeof err);
}

static void ops(void)
{
    IS_STRING("allr", tb_nccom_op(TB_COLL_ALL_REDUCE), "all-reduce: allr");
    IS_STRING("redsct", tb_nccom_op(TB_COLL_REDUCE_SCATTER), "reduce-scatter: redsct");
    IS_STRING("alltoall", tb_nccom_op(TB_COLL_ALL_TO_ALL),
              "all-to-all: alltoall (the guide's operation list at Neuron 2.32)");
}

/* The guide's older 2-rank all-reduce: time(us), GiB/s. */
static void older_table(void)
{
    IS_INT(0, parse_fixture("allr-2r.txt", TB_COLL_ALL_REDUCE, 2), "time(us) table parsed (%s)",
           err);
    IS_INT(11, (long long)r.nsizes, "  11 sizes");
    IS_STRING("time(us)", f.time_col, "  the time column");
    IS_STRING("GiB/s", f.unit, "  its algbw found in GiB/s (1 GiB in 18930 us: 52.83)");
    IS_INT(TB_COLL_STAT_UNLABELLED, r.time_stat, "  the time recorded as unlabelled, not a P50");
    OK(strstr(r.time_how, "P50 by nccom-test's guide up to Neuron 2.27, the mean from 2.28") !=
           NULL,
       "  and the notes say why (%s)", r.time_how);
    IS_DOUBLE(18930, r.sizes[10].time_us[0], 0, "  1 GiB: 18930 us");
    IS_REL(1073741824 / 18930e3, r.sizes[10].algbw_gbs[0], 1e-12, "  algbw size / time in GB/s");
    IS_REL(1073741824 / 18930e3, r.sizes[10].busbw_gbs[0], 1e-12, "  busbw x 2(n-1)/n = 1");
    OK(isnan(r.sizes[10].stddev_us[0]) && r.sizes[10].min_us[0] <= 0 &&
           r.sizes[10].max_us[0] <= 0 && r.sizes[10].p90_us[0] <= 0,
       "  no stddev, min, max, p90: not printed");
    OK(f.stand_in && !f.json, "  a stand-in's table");
}

/* The guide's --report-to-json-file example: the table and the report. */
static void current_table_and_report(void)
{
    IS_INT(0, parse_fixture("allg-32r-json.txt", TB_COLL_ALL_GATHER, 32),
           "time:avg(us) table parsed (%s)", err);
    IS_INT(4, (long long)r.nsizes, "  4 sizes");
    IS_STRING("time:avg(us)", f.time_col, "  the time column found by name");
    IS_STRING("GB/s", f.unit, "  its algbw found in 10^9 B/s (512 KiB in 23.11 us: 22.69)");
    IS_INT(TB_COLL_STAT_MEAN, r.time_stat, "  the time recorded as a mean");
    IS_DOUBLE(23.11, r.sizes[3].time_us[0], 1e-12, "  512 KiB: 23.11 us");
    IS_REL(524288 / 23.11e3 * 31 / 32, r.sizes[3].busbw_gbs[0], 1e-12, "  busbw x (n-1)/n");

    IS_INT(0, parse_fixture("allg-32r-json.json", TB_COLL_ALL_GATHER, 32),
           "the JSON report parsed (%s)", err);
    OK(f.json && f.stand_in, "  read as a report, a stand-in's");
    IS_INT(4, (long long)r.nsizes, "  4 sizes");
    IS_STRING("time:avg(us)", f.time_col, "  its time key");
    IS_STRING("GB/s", f.unit, "  its unrounded algbw in 10^9 B/s at every size");
    IS_INT(TB_COLL_STAT_MEAN, r.time_stat, "  a mean");
    IS_DOUBLE(6.19, r.sizes[0].time_us[0], 1e-12, "  1 KiB: 6.19 us");
    IS_INT(1024, (long long)r.sizes[0].bytes, "  1 KiB first");
    OK(strstr(r.time_how, "JSON report") != NULL, "  the notes name the report (%s)", r.time_how);
}

static void stats_and_extra_columns(void)
{
    IS_INT(0, parse_fixture("allg-8r-stats.txt", TB_COLL_ALL_GATHER, 8),
           "--stats avg p25 p50 p90 p99 parsed (%s)", err);
    IS_STRING("time:avg(us)", f.time_col, "  the mean recorded, of five statistics");
    IS_DOUBLE(14.83, r.sizes[3].time_us[0], 1e-12, "  512 KiB: 14.83 us");
    IS_DOUBLE(16, r.sizes[3].p90_us[0], 0, "  its p90");
    IS_DOUBLE(17, r.sizes[3].p99_us[0], 0, "  its p99");
    IS_STRING("GB/s", f.unit, "  GB/s");

    IS_INT(0, parse_fixture("allr-16r-algorithm.txt", TB_COLL_ALL_REDUCE, 16),
           "--show-algorithm's column read past (%s)", err);
    IS_INT(8, (long long)r.nsizes, "  8 sizes");
    IS_DOUBLE(9689.51, r.sizes[7].time_us[0], 1e-9, "  512 MiB: 9689.51 us");
    IS_STRING("GB/s", f.unit, "  GB/s (512 MiB in 9689.51 us: 55.41)");

    IS_INT(0, parse_fixture("allg-32r-inout.txt", TB_COLL_ALL_GATHER, 32),
           "--show-input-output-size's columns read past (%s)", err);
    IS_INT(131072, (long long)r.sizes[3].count, "  count(elems) by name, not position");
    IS_DOUBLE(23.16, r.sizes[3].time_us[0], 1e-12, "  time by name");

    IS_INT(0,
           parse_text("size(B) count(elems) type time:p50(us) time:p90(us) algbw(GB/s) "
                      "busbw(GB/s)\n1048576 262144 fp32 50 70 20.97 20.97\n"),
           "a median without a mean parses (%s)", err);
    IS_INT(TB_COLL_STAT_PERCENTILE, r.time_stat, "  recorded as a percentile");
    IS_INT(50, r.time_pct, "  the P50");
    IS_STRING("time:p50(us)", f.time_col, "  from time:p50(us)");
    IS_DOUBLE(70, r.sizes[0].p90_us[0], 0, "  p90 kept");
    IS_STRING("GB/s", f.unit, "  GB/s");
}

static void refused(void)
{
    IS_INT(TB_EINPUT, parse_fixture("garbled.txt", TB_COLL_ALL_REDUCE, 2),
           "an algbw that is not size / time: refused");
    OK(strstr(err, "line 4: algbw 41.36 is not size / time") != NULL, "  naming the line (%s)",
       err);
    IS_INT(TB_EINPUT,
           parse_text("size(B) count(elems) type time(us) algbw(GB/s) busbw(GB/s)\n"
                      "1048576 262144 fp32 68 14.36 14.36\n4194304 1048576 fp32 107 39.20 "
                      "39.20\n"),
           "GiB/s on one line, GB/s on the next: refused");
    IS_STRING("t: line 3's algbw is in GB/s, line 2's in GiB/s: not one table's", err,
              "  naming both");
    IS_INT(TB_EINPUT,
           parse_text("size(B) count(elems) type algbw(GB/s) busbw(GB/s)\n1024 256 fp32 1 1\n"),
           "a header without a time: refused");
    IS_STRING("t: line 1: nccom-test's header without a 'time(us) or time:<stat>(us)' column", err,
              "  naming the column");
    IS_INT(TB_EINPUT,
           parse_text("size(B) count(elems) type time:avg(us) algbw(GB/s) busbw(GB/s)\n"
                      "1024 256 fp32 6.19 0.17\n"),
           "a row short of a field: refused");
    IS_STRING("t: line 2: 5 fields under a header of 6: '1024 256 fp32 6.19 0.17'", err, "  said");
    IS_INT(TB_EINPUT,
           parse_text("size(B) count(elems) type time:avg(us) algbw(GB/s) busbw(GB/s)\n"
                      "1024 256 fp32 nan 0.17 0.16\n"),
           "a time 'nan': refused");
    IS_INT(TB_EINPUT,
           parse_text("size(B) count(elems) type time(us) algbw(GB/s) busbw(GB/s)\n"
                      "1024 256 fp32 6 0.17 0.16\nAvg bus bandwidth: 0.16GB/s\n"
                      "size(B) count(elems) type time(us) algbw(GB/s) busbw(GB/s)\n"),
           "a second table (--streams-json): refused");
    IS_INT(TB_EINPUT, parse_text("nothing\n"), "no header: refused");
    IS_INT(TB_EINPUT, parse_json("[1]"), "a report that is a list: refused");
    IS_STRING("j: not nccom-test's report: no \"results\" list", err, "  said");
    IS_INT(TB_EINPUT, parse_json("{\"results\": [{\"size(B)\": 1024}]}"),
           "a report entry without its fields: refused");
    OK(strstr(err, "j: results[0]: needs integers") != NULL, "  naming the entry (%s)", err);
    IS_INT(TB_EINPUT,
           parse_json("{\"results\": [{\"size(B)\": 1024, \"count(elems)\": 256, \"type\": "
                      "\"fp32\", \"algbw(GB/s)\": 0.5, \"busbw(GB/s)\": 0.5, "
                      "\"time:avg(us)\": 6.19}]}"),
           "a report whose algbw is not size / time: refused");
    IS_INT(TB_EINPUT, parse_json("{\"results\": []}"), "an empty report: refused");
    IS_INT(TB_EINPUT, parse_json("{\"results\": "), "a cut report: refused");
    OK(!strncmp(err, "j: not JSON: line 1", 19), "  said (%s)", err);
}

int main(void)
{
    plan(68);
    ops();
    older_table();
    current_table_and_report();
    stats_and_extra_columns();
    refused();
    tb_coll_result_release(&r);
    return 0;
}
