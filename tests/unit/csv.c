/* tests/unit/csv.c: the libcsv table reader, quoting, line numbers, and the results
 * writer's atomic append. */
#include "tb_csv.h"
#include "tb_results.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

int main(void)
{
    struct tb_csv_table t;
    char err[512] = "";
    char *p = test_tmp_path("t.csv");
    char *r = test_tmp_path("results.csv");
    plan_lazy();

    write_file(p, "a,b,c\n1,\"x, \"\"quoted\"\"\",3\n\n4,\"two\nlines\",6\n7,8,9");
    IS_INT(0, tb_csv_load(&t, p, err, sizeof err),
           "load a file with quotes, blanks, no final newline");
    IS_INT(3, (long long)t.nrows, "three data rows");
    IS_STRING("x, \"quoted\"", tb_csv_field(&t, 0, "b"), "quoted field with comma and quotes");
    IS_STRING("two\nlines", tb_csv_field(&t, 1, "b"), "embedded newline");
    IS_INT(2, t.lines[0], "first row on line 2");
    IS_INT(4, t.lines[1], "second row starts on line 4");
    IS_INT(6, t.lines[2], "last row on line 6");
    IS_STRING("9", tb_csv_field(&t, 2, "c"), "last field without newline");
    IS_STRING("", tb_csv_field(&t, 0, "zzz"), "absent column reads empty");
    {
        const char *need[] = {"a", "nope", NULL};
        IS_INT(-1, tb_csv_require(&t, need, err, sizeof err), "missing column found");
        OK(strstr(err, "missing column 'nope'") != NULL, "message names it: %s", err);
    }
    tb_csv_release(&t);

    write_file(p, "a,b\n1,2\n3,4,5\n");
    IS_INT(-1, tb_csv_load(&t, p, err, sizeof err), "ragged row refused");
    OK(strstr(err, "line 3") && strstr(err, "3 fields"), "message names line: %s", err);
    write_file(p, "a,b\n1,\"open\n");
    IS_INT(-1, tb_csv_load(&t, p, err, sizeof err), "unterminated quote refused");
    OK(strstr(err, "t.csv") != NULL, "message names the file: %s", err);
    IS_INT(-1, tb_csv_load(&t, "/nonexistent/x.csv", err, sizeof err), "missing file refused");

    /* the same parser over text in memory (a child's output) */
    {
        const char text[] = "a,b\n\"x,y\",2\n3,4";
        IS_INT(0, tb_csv_parse(&t, "peer output", text, sizeof text - 1, err, sizeof err),
               "parse text in memory");
        IS_INT(2, (long long)t.nrows, "two rows from memory");
        IS_STRING("x,y", tb_csv_field(&t, 0, "a"), "quoted field from memory");
        IS_INT(3, t.lines[1], "its line numbers");
        tb_csv_release(&t);
        IS_INT(-1, tb_csv_parse(&t, "peer output", "a,b\n1\n", 7, err, sizeof err),
               "a short row in memory refused");
        IS_STRING("peer output: line 2: 1 fields where the header has 2", err, "named by line");
        IS_INT(-1, tb_csv_parse(&t, "peer output", "", 0, err, sizeof err), "no text refused");
        IS_STRING("peer output: line 1: no header row", err, "as no header");
    }

    /* results: append twice, read back, resume key */
    remove(r);
    {
        struct tb_result_row rows[2];
        memset(rows, 0, sizeof rows);
        rows[0].col[TB_COL_RUN_ID] = "m/prefill/b1/in8/fp32";
        rows[0].col[TB_COL_METRIC] = "ttft_ms";
        rows[0].col[TB_COL_VALUE] = "1.5";
        rows[0].col[TB_COL_NOTES] = "a note, with a comma";
        rows[1] = rows[0];
        rows[1].col[TB_COL_METRIC] = "gflop_per_s";
        IS_INT(0, tb_results_append(r, rows, 2, err, sizeof err), "first append");
        IS_INT(0, tb_results_has_run(r, "m/decode/b1/in8/out4/fp32", err, sizeof err),
               "other run absent");
        rows[0].col[TB_COL_RUN_ID] = "m/decode/b1/in8/out4/fp32";
        IS_INT(0, tb_results_append(r, rows, 1, err, sizeof err), "second append");
        IS_INT(1, tb_results_has_run(r, "m/decode/b1/in8/out4/fp32", err, sizeof err), "run found");
    }
    IS_INT(0, tb_csv_load(&t, r, err, sizeof err), "results read back");
    IS_INT(3, (long long)t.nrows, "three rows, none lost or repeated");
    IS_STRING("a note, with a comma", tb_csv_field(&t, 2, "notes"), "quoting survives");
    IS_STRING("gflop_per_s", tb_csv_field(&t, 1, "metric"), "order kept");
    IS_INT(TB_RESULTS_NCOLS, (long long)t.ncols, "all columns");
    tb_csv_release(&t);
    write_file(p, "x,y\n1,2\n");
    IS_INT(-1, tb_results_append(p, NULL, 0, err, sizeof err), "foreign file is not appended to");
    OK(strstr(err, "t.csv: line 1: column 1 is 'x', expected 'run_id'") != NULL,
       "message says why: %s", err);
    write_file(p, "run_id,value\nx,1\n");
    IS_INT(-1, tb_results_has_run(p, "x", err, sizeof err), "results columns are not enough");
    OK(strstr(err, "t.csv: line 1: column 2 is 'value', expected 'provenance'") != NULL, "%s", err);
    {
        /* every column, then one more */
        char head[1024] = "";
        for (int c = 0; c < TB_RESULTS_NCOLS; c++)
            snprintf(head + strlen(head), sizeof head - strlen(head), "%s,", TB_RESULTS_COLUMNS[c]);
        strcat(head, "extra\n");
        write_file(p, head);
        IS_INT(-1, tb_results_has_run(p, "x", err, sizeof err), "a column past the last refused");
        OK(strstr(err, "column 52 is 'extra', after the last") != NULL, "%s", err);
        /* the first version's columns, cut short */
        write_file(p, "run_id,provenance,target\n");
        IS_INT(-1, tb_results_has_run(p, "x", err, sizeof err), "a cut header refused");
        OK(strstr(err, "t.csv: line 1: 3 columns, no 'host'") != NULL, "%s", err);
    }

    /* chips_used: written and read back; a GPU run on 1 of 8 GPUs */
    remove(r);
    {
        struct tb_result_row row;
        memset(&row, 0, sizeof row);
        row.col[TB_COL_RUN_ID] = "cuda:m/prefill/b1/in8/bf16";
        row.col[TB_COL_TARGET] = "p5.48xlarge";
        row.col[TB_COL_INSTANCES] = "1";
        row.col[TB_COL_CHIPS_USED] = "1";
        IS_INT(0, tb_results_append(r, &row, 1, err, sizeof err), "a row with chips_used");
    }
    IS_INT(0, tb_csv_load(&t, r, err, sizeof err), "read back");
    IS_STRING("chips_used", t.header[TB_COL_CHIPS_USED], "chips_used where it was");
    IS_STRING("device", t.header[TB_COL_DEVICE], "device after config");
    IS_STRING("p99", t.header[TB_COL_P99], "p99 after p90");
    IS_STRING("accelerators_unused", t.header[TB_COL_ACCEL_UNUSED],
              "accelerators_unused after p99");
    IS_STRING("slurm_job", t.header[TB_COL_SLURM_JOB], "slurm_job after node");
    IS_STRING("bytes", t.header[TB_COL_BYTES], "bytes after link");
    IS_STRING("engine", t.header[t.ncols - 1], "engine is the last column");
    /* workload and config filled from the run id when the writer leaves them empty */
    IS_STRING("cuda:m/prefill/b1/in8/bf16", tb_csv_field(&t, 0, "config"),
              "config: the run's id less its target");
    IS_STRING("cuda:m/prefill/in8/bf16", tb_csv_field(&t, 0, "workload"),
              "workload: the config less its batch");
    {
        /* the one place a run id is taken apart: every id form the writers make */
        static const char *const cases[][5] = {
            /* run_id, target, model, config, workload */
            {"llama-tiny@L2/decode/b2/in8/out4/fp32", "host", "llama-tiny@L2",
             "llama-tiny@L2/decode/b2/in8/out4/fp32", "llama-tiny@L2/decode/in8/out4/fp32"},
            {"model:trn2.48xlarge/llama-3.1-70b/serve/bmax/in2048/out512/bf16/x4", "trn2.48xlarge",
             "llama-3.1-70b", "llama-3.1-70b/serve/bmax/in2048/out512/bf16",
             "llama-3.1-70b/serve/in2048/out512/bf16"},
            {"model:p5.48xlarge/llama-3.2-1b/prefill/b1/in128/bf16/chips1", "p5.48xlarge",
             "llama-3.2-1b", "llama-3.2-1b/prefill/b1/in128/bf16/chips1",
             "llama-3.2-1b/prefill/in128/bf16/chips1"},
            {"model:p5.48xlarge/sdxl/denoise/b4/r1024/s20/bf16", "p5.48xlarge", "sdxl",
             "sdxl/denoise/b4/r1024/s20/bf16", "sdxl/denoise/r1024/s20/bf16"},
            {"mlperf-llama2-70b@p5.48xlarge", "p5.48xlarge", "llama-2-70b", "mlperf-llama2-70b",
             "mlperf-llama2-70b"},
            {"", "host", "llama-tiny", "llama-tiny", "llama-tiny"},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char config[192], workload[192];
            tb_results_config(cases[i][0], cases[i][1], cases[i][2], config, sizeof config,
                              workload, sizeof workload);
            OK(!strcmp(config, cases[i][3]) && !strcmp(workload, cases[i][4]),
               "'%s' on %s: config '%s', workload '%s'", cases[i][0], cases[i][1], config,
               workload);
        }
    }
    IS_STRING("1", tb_csv_field(&t, 0, "chips_used"), "chips_used round-trips");
    IS_STRING("1", tb_csv_field(&t, 0, "instances"), "beside instances");
    tb_csv_release(&t);

    /* a file of the previous version (no chips_used) still reads, and an append
     * rewrites it with the current header, its rows' chips_used empty */
    write_file(r, "run_id,provenance,target,instances,host,executor,model,layers,phase,precision,"
                  "batch,seq_in,seq_out,steps,resolution,metric,value,unit,n,warmup,min,max,mean,"
                  "stddev,flops,timestamp,commit,compiler,cflags,blas,counters,source,notes\n"
                  "old/decode,measured,host,1,cpu,cpu,m,2,decode,fp32,1,8,4,,,decode_tokens_per_s,"
                  "12.5,tokens/s,5,1,12,13,12.5,0.3,1e6,2026-01-01T00:00:00Z,abc,gcc,-O2,,,"
                  "trnbench,\"an old note, quoted\"\n");
    err[0] = '\0';
    IS_INT(1, tb_results_has_run(r, "old/decode", err, sizeof err),
           "an older file's run is found (%s)", err);
    {
        struct tb_result_row row;
        memset(&row, 0, sizeof row);
        row.col[TB_COL_RUN_ID] = "cuda:new";
        row.col[TB_COL_CHIPS_USED] = "1";
        IS_INT(0, tb_results_append(r, &row, 1, err, sizeof err), "appended to an older file: %s",
               err);
    }
    IS_INT(0, tb_csv_load(&t, r, err, sizeof err), "read back");
    IS_INT(TB_RESULTS_NCOLS, (long long)t.ncols, "rewritten with every column");
    IS_INT(2, (long long)t.nrows, "the old row kept, the new one added");
    IS_STRING("an old note, quoted", tb_csv_field(&t, 0, "notes"), "old fields moved by name");
    IS_STRING("12.5", tb_csv_field(&t, 0, "value"), "old value kept");
    IS_STRING("", tb_csv_field(&t, 0, "chips_used"),
              "the old row: chips_used empty (the whole target)");
    IS_STRING("1", tb_csv_field(&t, 1, "chips_used"), "the new row: 1");
    tb_csv_release(&t);
    {
        /* the first version's header (no instances, steps, resolution; a report fixture) */
        char *v1 = test_src_path("tests/data/report_results.csv");
        IS_INT(1, tb_results_has_run(v1, "llama-small/decode/b1/in128/out32/fp32", err, sizeof err),
               "a first-version file reads (%s)", err);
        free(v1);
    }
    /* hostile text (issue 19): a NUL byte is refused naming its column, a BOM stripped */
    {
        const char text[] = "id,value\nS1,1\00032416\n";
        IS_INT(-1, tb_csv_parse(&t, "r.csv", text, sizeof text - 1, err, sizeof err),
               "a NUL byte in a field refused, not read as '1'");
        IS_STRING("r.csv: line 2: field 'value': a NUL byte", err, "named by line and column");
        IS_INT(-1, tb_csv_parse(&t, "r.csv", "i\000d,v\n", 7, err, sizeof err),
               "a NUL in the header refused");
        IS_STRING("r.csv: line 1: field 1: a NUL byte", err, "named by position");
        IS_INT(0, tb_csv_parse(&t, "r.csv", "\xef\xbb\xbfid,v\nx,1\n", 12, err, sizeof err),
               "a BOM read");
        IS_STRING("x", tb_csv_field(&t, 0, "id"), "and stripped from the first column's name");
        tb_csv_release(&t);
    }
    {
        char line1[] = "\xef\xbb\xbfname = x\n", kv[] = "hidden = 40\00096\n",
             suite[] = "run model=m seq_in=5\00012 reps=1\n", word[] = "suite a\000b\n";
        IS_INT(9, tb_text_line("m.model", 1, line1, sizeof line1 - 1, err, sizeof err),
               "a BOM on line 1 stripped");
        IS_STRING("name = x\n", line1, "the line without it");
        IS_INT(-1, tb_text_line("m.model", 4, kv, sizeof kv - 1, err, sizeof err),
               "a NUL in a key = value line refused");
        IS_STRING("m.model: line 4: field 'hidden': a NUL byte (byte 12 of the line)", err,
                  "the key named");
        IS_INT(-1, tb_text_line("s.suite", 2, suite, sizeof suite - 1, err, sizeof err),
               "a NUL in a suite's key=value word refused");
        OK(strstr(err, "s.suite: line 2: field 'seq_in'") != NULL, "its key named: %s", err);
        IS_INT(-1, tb_text_line("s.suite", 1, word, sizeof word - 1, err, sizeof err),
               "a NUL after a directive refused");
        OK(strstr(err, "field 'suite'") != NULL, "the directive named: %s", err);
    }
    {
        /* formula injection (OWASP): text cells neutralised, numbers kept */
        static const char *const cases[][2] = {
            {"=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\","},
            {"+cmd", "'+cmd,"},
            {"-2+3", "'-2+3,"},
            {"@SUM(A1)", "'@SUM(A1),"},
            {"\tx", "'\tx,"},
            {"\rx", "\"'\rx\","},
            {"-", "'-,"},
            {"-1.5", "-1.5,"},
            {"+3e5", "+3e5,"},
            {"-12.5%", "'-12.5%,"},
            {"llama-3.1-8b", "llama-3.1-8b,"},
            {"", ","},
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            char *buf = NULL;
            size_t len = 0;
            FILE *m = open_memstream(&buf, &len);
            int rc = m ? tb_csv_put_text(m, cases[i][0], ',') : -1;
            if (m)
                fclose(m);
            OK(rc == 0 && buf && !strcmp(buf, cases[i][1]), "put_text '%s' -> '%s' (want '%s')",
               cases[i][0], buf ? buf : "", cases[i][1]);
            free(buf);
        }
    }
    free(p);
    free(r);
    return 0;
}
