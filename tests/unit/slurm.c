/* tests/unit/slurm.c: what tb_slurm.h lets into a batch script (names, times, paths), the
 * quoting, the job id sbatch prints, a task from Slurm's environment, the split of a
 * suite between tasks, and the assembly of rank files (each run once, results.csv
 * first). The end-to-end job is tests/cli/slurm.t. */
#include "tb_results.h"
#include "tb_slurm.h"
#include "tb_suite.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* One results row of run id with metric and value, rank written into the rank column. */
static int put(const char *path, const char *id, const char *metric, const char *rank)
{
    struct tb_result_row row;
    char err[512];
    memset(&row, 0, sizeof row);
    row.col[TB_COL_RUN_ID] = id;
    row.col[TB_COL_PROVENANCE] = "measured";
    row.col[TB_COL_METRIC] = metric;
    row.col[TB_COL_VALUE] = "1";
    row.col[TB_COL_RANK] = rank;
    return tb_results_append(path, &row, 1, err, sizeof err);
}

int main(void)
{
    char err[1024] = "", q[256], id[32];
    plan_lazy();

    /* ---- names ---- */
    IS_INT(0, tb_slurm_check_name("--partition", "gpu-p5.48x_a", false, err, sizeof err),
           "a partition of letters, digits, '.', '_', '-'");
    IS_INT(0, tb_slurm_check_name("--partition", "a,b", true, err, sizeof err),
           "a list of partitions");
    IS_INT(-1, tb_slurm_check_name("--account", "a,b", false, err, sizeof err),
           "no list for an account");
    IS_INT(-1, tb_slurm_check_name("--partition", "a;rm -rf /", true, err, sizeof err),
           "a ';' refused");
    IS_STRING("option '--partition': 'a;rm -rf /': character ';' at 2 is not allowed (a Slurm "
              "name: letters, digits, '.', '_', '-', names separated by ',')",
              err, "the message names option, value, character and place");
    IS_INT(-1, tb_slurm_check_name("--partition", "$(id)", true, err, sizeof err), "'$' refused");
    IS_INT(-1, tb_slurm_check_name("--partition", "a b", true, err, sizeof err), "a space refused");
    IS_INT(-1, tb_slurm_check_name("--partition", "a\nb", true, err, sizeof err),
           "a newline refused");
    OK(strstr(err, "byte 0x0a at 2") != NULL, "a control byte named by its value: %s", err);
    IS_INT(-1, tb_slurm_check_name("--partition", "-x", true, err, sizeof err),
           "a leading '-' (an option to sbatch) refused");
    IS_INT(-1, tb_slurm_check_name("--partition", "a,", true, err, sizeof err),
           "a trailing ',' refused");
    IS_INT(-1, tb_slurm_check_name("--partition", "", true, err, sizeof err), "empty refused");
    {
        char longname[80];
        memset(longname, 'a', 65);
        longname[65] = '\0';
        IS_INT(-1, tb_slurm_check_name("--account", longname, false, err, sizeof err),
               "65 characters refused");
    }

    /* ---- times: sbatch's formats ---- */
    {
        static const char *const good[] = {"10",     "0:30",    "1:02:03",   "2-0",
                                           "2-23:5", "1-2:3:4", "UNLIMITED", "INFINITE"};
        static const char *const bad[] = {"",     "x",     "1:60",   "1:2:3:4",  "2-24",
                                          "1-",   "-1",    "1:2:60", "1-2:3:60", "1 ",
                                          "1;id", "1-2-3", ":30",    "12345678"};
        for (size_t i = 0; i < sizeof good / sizeof *good; i++)
            IS_INT(0, tb_slurm_check_time(good[i], err, sizeof err), "time '%s' taken", good[i]);
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
            IS_INT(-1, tb_slurm_check_time(bad[i], err, sizeof err), "time '%s' refused", bad[i]);
    }

    /* ---- paths and quoting ---- */
    IS_INT(0, tb_slurm_check_path("--out", "/fsx/team/run-1/out", err, sizeof err),
           "an absolute path");
    IS_INT(-1, tb_slurm_check_path("--out", "out", err, sizeof err), "a relative path refused");
    IS_INT(-1, tb_slurm_check_path("--out", "/a/slurm-%j", err, sizeof err),
           "'%%' (sbatch's patterns) refused");
    IS_INT(-1, tb_slurm_check_path("--out", "/a/$(id)", err, sizeof err), "'$' refused");
    IS_INT(0, tb_slurm_quote("plain", q, sizeof q), "quote");
    IS_STRING("'plain'", q, "single quotes around");
    IS_INT(0, tb_slurm_quote("it's $(x)", q, sizeof q), "quote a quote");
    IS_STRING("'it'\\''s $(x)'", q, "a quote closed, escaped, reopened");
    IS_INT(-1, tb_slurm_quote("abcdef", q, 7), "a short buffer refused");

    /* ---- the script ---- */
    {
        struct tb_slurm_job j = {.nodes = 2,
                                 .ntasks_per_node = 8,
                                 .partition = "p5",
                                 .time = "1:00:00",
                                 .account = "ml"};
        char *s = tb_slurm_script(&j, "/opt/bin/trnbench", "/fsx/s.suite", "/fsx/out", "cpu", err,
                                  sizeof err);
        OK(s != NULL, "a script");
        OK(s && !strncmp(s, "#!/bin/bash\n", 12), "bash");
        OK(s && strstr(s, "#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n"), "nodes and tasks");
        OK(s && strstr(s, "#SBATCH --partition='p5'\n"), "partition, quoted");
        OK(s && strstr(s, "#SBATCH --time='1:00:00'\n#SBATCH --account='ml'\n"), "time, account");
        OK(s && strstr(s, "#SBATCH --output=/fsx/out/slurm-%j.out\n"),
           "the job's log in the folder");
        OK(s &&
               strstr(s, "\nsrun --kill-on-bad-exit=0 '/opt/bin/trnbench' run --slurm-rank --suite "
                         "'/fsx/s.suite' --out '/fsx/out' --executor 'cpu'\n"),
           "one srun line, every value quoted");
        OK(s && strstr(s, "\n'/opt/bin/trnbench' run --slurm-assemble --out '/fsx/out' || rc=$?\n"),
           "the assembly after srun");
        free(s);
        j.partition = j.time = j.account = NULL;
        s = tb_slurm_script(&j, "/b/trnbench", "/s", "/o", NULL, err, sizeof err);
        OK(s && !strstr(s, "--partition") && !strstr(s, "--time") && !strstr(s, "--account") &&
               !strstr(s, "--executor"),
           "no line for a value not given");
        free(s);
    }

    /* ---- a script of any words: options bare, every value quoted ---- */
    {
        struct tb_slurm_job j = {.nodes = 4, .ntasks_per_node = 1, .exclusive = true};
        const char *words[] = {"--slurm-node", "--model", "it's $(x)", "--out", "/o", NULL};
        char *s = tb_slurm_script_words(&j, "/b/trnbench", "/o", words, "the training",
                                        "# a comment\n", err, sizeof err);
        OK(s && strstr(s, "#SBATCH --exclusive\n#SBATCH --wait-all-nodes=1\n"),
           "whole nodes, all up first");
        OK(s && strstr(s, "\n# a comment\nsrun --kill-on-bad-exit=0 '/b/trnbench' run "
                          "--slurm-node --model 'it'\\''s $(x)' --out '/o'\n"),
           "the step's comment, then srun: options bare, a hostile value quoted");
        OK(s && strstr(s, "`trnbench run --slurm`: the training on 4 nodes, 1 task each"),
           "the header names the work");
        free(s);
    }
    IS_INT(29401, tb_slurm_rdzv_port("1"), "rendezvous port: 29400 + job id mod 1000");
    IS_INT(29856, tb_slurm_rdzv_port("123456"), "  (123456: 29856)");

    /* ---- a node's task of a training: the rendezvous from scontrol (a stand-in) ---- */
    {
        char *bin = test_tmp_path("slurm_bin"), path[8192], sc[4096];
        struct tb_slurm_task t;
        struct tb_torch_opts o = {.nproc_per_node = 4, .nnodes = 1};
        FILE *f;
        tb_mkdir_p(bin, err, sizeof err);
        snprintf(sc, sizeof sc, "%s/scontrol", bin);
        f = fopen(sc, "w");
        OK(f != NULL, "a stand-in scontrol");
        if (f) {
            fputs("#!/bin/sh\n"
                  "case \"$*\" in\n"
                  "'show hostnames q1-dy-p5-[1-2]') printf 'q1-dy-p5-1\\nq1-dy-p5-2\\n' ;;\n"
                  "'-o show node q1-dy-p5-1') echo \"NodeName=q1-dy-p5-1 Arch=x86_64 "
                  "NodeAddr=${FAKE_ADDR:-10.0.3.7} NodeHostName=ip-10-0-3-7 Version=22.05\" ;;\n"
                  "*) echo \"unexpected: $*\" >&2; exit 1 ;;\n"
                  "esac\n",
                  f);
            fclose(f);
            chmod(sc, 0755);
        }
        snprintf(path, sizeof path, "%s:%s", bin, getenv("PATH") ? getenv("PATH") : "/usr/bin");
        setenv("PATH", path, 1);
        setenv("SLURM_JOB_ID", "1234", 1);
        setenv("SLURM_NTASKS", "2", 1);
        setenv("SLURM_PROCID", "1", 1);
        setenv("SLURM_NNODES", "2", 1);
        setenv("SLURM_NODEID", "1", 1);
        setenv("SLURMD_NODENAME", "q1-dy-p5-2", 1);
        setenv("SLURM_JOB_NODELIST", "q1-dy-p5-[1-2]", 1);
        IS_INT(0, tb_slurm_task_from_env(&t, err, sizeof err), "a node's task: %s", err);
        IS_INT(0, tb_slurm_torch_node(&t, &o, err, sizeof err), "its torchrun: %s", err);
        IS_STRING("10.0.3.7:29634", o.rdzv_endpoint,
                  "endpoint: the first node's NodeAddr, the job's port");
        IS_STRING("1234", o.rdzv_id, "rendezvous id: the job id");
        OK(o.nnodes == 2 && o.node_rank == 1, "nnodes 2, node_rank SLURM_NODEID");
        IS_STRING("8", t.s_ranks, "rows: ranks 2 nodes x 4");
        IS_STRING("0", t.s_rank, "rows: rank 0 (the script's rank that reports)");
        IS_STRING("4", t.s_ranks_per_node, "rows: ranks_per_node 4");
        IS_STRING("2", t.s_instances, "rows: instances 2");
        IS_INT(1, t.rank, "its rank file stays the task's");
        OK(tb_slurm_mine(&t, 0) && tb_slurm_mine(&t, 1), "every run is every node's");
        setenv("FAKE_ADDR", "10.0.3.7;x", 1);
        IS_INT(-1, tb_slurm_torch_node(&t, &o, err, sizeof err), "a NodeAddr with ';' refused");
        OK(strstr(err, "NodeAddr") != NULL, "  said: %s", err);
        unsetenv("FAKE_ADDR");
        setenv("SLURM_JOB_NODELIST", "other[1-2]", 1);
        IS_INT(-1, tb_slurm_torch_node(&t, &o, err, sizeof err), "scontrol failing: refused");
        OK(strstr(err, "unexpected: show hostnames other[1-2]") != NULL, "  with its words: %s",
           err);
        setenv("SLURM_NTASKS", "4", 1);
        setenv("SLURM_PROCID", "0", 1);
        IS_INT(0, tb_slurm_task_from_env(&t, err, sizeof err), "4 tasks on 2 nodes");
        IS_INT(-1, tb_slurm_torch_node(&t, &o, err, sizeof err), "  refused: one task a node");
        unsetenv("SLURM_JOB_NODELIST");
        unsetenv("SLURM_JOB_ID");
        free(bin);
    }

    /* ---- sbatch --parsable ---- */
    IS_INT(0, tb_slurm_parse_jobid("1234\n", id, sizeof id, err, sizeof err), "a job id");
    IS_STRING("1234", id, "its digits");
    IS_INT(0, tb_slurm_parse_jobid("77;cluster-a\n", id, sizeof id, err, sizeof err), "id;cluster");
    IS_STRING("77", id, "the id without the cluster");
    IS_INT(-1, tb_slurm_parse_jobid("Submitted batch job 5", id, sizeof id, err, sizeof err),
           "not --parsable's output refused");
    IS_INT(-1, tb_slurm_parse_jobid("", id, sizeof id, err, sizeof err), "nothing refused");

    /* ---- a task from the environment ---- */
    {
        struct tb_slurm_task t;
        setenv("SLURM_JOB_ID", "42", 1);
        setenv("SLURM_NTASKS", "4", 1);
        setenv("SLURM_PROCID", "3", 1);
        setenv("SLURM_NNODES", "2", 1);
        setenv("SLURM_NODEID", "1", 1);
        setenv("SLURMD_NODENAME", "queue1-dy-p5-2", 1);
        OK(tb_slurm_inside(), "inside with SLURM_JOB_ID");
        IS_INT(0, tb_slurm_task_from_env(&t, err, sizeof err), "a task: %s", err);
        IS_INT(3, t.rank, "rank");
        IS_INT(4, t.ranks, "ranks");
        IS_STRING("queue1-dy-p5-2", t.node, "node");
        IS_STRING("42", t.job, "job");
        IS_STRING("2", t.s_nodes, "nodes as written");
        OK(tb_slurm_mine(&t, 3) && tb_slurm_mine(&t, 7) && !tb_slurm_mine(&t, 0) &&
               !tb_slurm_mine(&t, 4),
           "rank 3 of 4 takes items 3, 7, ...");
        setenv("SLURM_PROCID", "4", 1);
        IS_INT(-1, tb_slurm_task_from_env(&t, err, sizeof err), "a rank past the ranks refused");
        OK(strstr(err, "SLURM_PROCID") != NULL, "naming the variable: %s", err);
        setenv("SLURM_PROCID", "0", 1);
        setenv("SLURMD_NODENAME", "a;b", 1);
        IS_INT(-1, tb_slurm_task_from_env(&t, err, sizeof err), "a node name with ';' refused");
        unsetenv("SLURMD_NODENAME");
        IS_INT(-1, tb_slurm_task_from_env(&t, err, sizeof err), "no node name refused");
        unsetenv("SLURM_JOB_ID");
        OK(!tb_slurm_inside(), "outside without SLURM_JOB_ID");
    }

    /* ---- assembly ---- */
    {
        char *dir = test_tmp_path("slurm_out"), rank[4096], results[4096], sub[4096];
        size_t added, files, runs;
        struct tb_csv_table t;
        snprintf(results, sizeof results, "%s/results.csv", dir);
        snprintf(sub, sizeof sub, "%s/ranks", dir);
        tb_mkdir_p(sub, err, sizeof err);
        remove(results);
        for (int r = 0; r < 3; r++) {
            tb_slurm_rank_results(dir, r, rank, sizeof rank);
            remove(rank);
        }
        IS_INT(0, tb_slurm_assemble(dir, &added, &files, &runs, err, sizeof err),
               "no rank files: nothing to do");
        IS_INT(0, (long long)added, "nothing added");
        OK(!tb_file_exists(results), "no results.csv made");
        put(results, "a", "m1", NULL); /* an earlier job's run */
        tb_slurm_rank_results(dir, 0, rank, sizeof rank);
        put(rank, "a", "m1", "0"); /* again: already in results.csv */
        put(rank, "b", "m1", "0");
        put(rank, "b", "m2", "0");
        tb_slurm_rank_results(dir, 2, rank, sizeof rank);
        put(rank, "b", "m1", "2"); /* another job split differently: b is rank 0's */
        put(rank, "c", "m1", "2");
        IS_INT(0, tb_slurm_assemble(dir, &added, &files, &runs, err, sizeof err), "assembled: %s",
               err);
        IS_INT(3, (long long)added, "3 rows added (b twice, c)");
        IS_INT(2, (long long)runs, "2 runs");
        IS_INT(2, (long long)files, "2 rank files");
        IS_INT(0, tb_csv_load(&t, results, err, sizeof err), "read back");
        IS_INT(4, (long long)t.nrows, "a, b m1, b m2, c");
        IS_STRING("a", tb_csv_field(&t, 0, "run_id"), "results.csv's rows first");
        IS_STRING("", tb_csv_field(&t, 0, "rank"), "its rank empty");
        IS_STRING("0", tb_csv_field(&t, 1, "rank"), "b from the first file that has it");
        IS_STRING("c", tb_csv_field(&t, 3, "run_id"), "c from rank 2");
        IS_STRING("2", tb_csv_field(&t, 3, "rank"), "with its rank");
        tb_csv_release(&t);
        IS_INT(0, tb_slurm_assemble(dir, &added, &files, &runs, err, sizeof err), "again");
        IS_INT(0, (long long)added, "again adds nothing");
        free(dir);
    }
    return 0;
}
