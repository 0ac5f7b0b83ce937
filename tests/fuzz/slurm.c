/* tests/fuzz/slurm.c: what `trnbench run --slurm` reads from the user, sbatch and Slurm's
 * environment (harness/run/tb_slurm.h): the input's parts, split at a line "@@", are
 * --partition (a list), --account, --time and --out (tb_slurm_check_name, _check_time,
 * _check_path), then, when all four pass, the batch script written with them
 * (tb_slurm_script, every value quoted); sbatch --parsable's output
 * (tb_slurm_parse_jobid); and the task's environment SLURM_JOB_ID, SLURM_NTASKS,
 * SLURM_PROCID, SLURM_NNODES, SLURM_NODEID and SLURMD_NODENAME (tb_slurm_task_from_env,
 * a part absent: the variable unset), then which suite items are the task's. */
#include "fz.h"
#include "tb_slurm.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const ENV[] = {"SLURM_JOB_ID", "SLURM_NNODES", "SLURM_NTASKS",
                                  "SLURM_PROCID", "SLURM_NODEID", "SLURMD_NODENAME"};
#define NENV   ((int)(sizeof ENV / sizeof ENV[0]))
#define NPARTS (5 + NENV)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[NPARTS];
    size_t len[NPARTS];
    int n = fz_split(data, size, part, len, NPARTS);
    char *s[NPARTS] = {0}, err[1024], id[32], q[512];
    struct tb_slurm_task t;
    int ok = 0;

    for (int i = 0; i < n; i++)
        s[i] = fz_strndup(part[i], len[i]);
    if (s[0])
        ok += fz_note(tb_slurm_check_name("--partition", s[0], true, err, sizeof err), err) == 0;
    if (s[1])
        ok += fz_note(tb_slurm_check_name("--account", s[1], false, err, sizeof err), err) == 0;
    if (s[2])
        ok += fz_note(tb_slurm_check_time(s[2], err, sizeof err), err) == 0;
    if (s[3])
        ok += fz_note(tb_slurm_check_path("--out", s[3], err, sizeof err), err) == 0;
    for (int i = 0; i < 4 && s[i]; i++)
        tb_slurm_quote(s[i], q, sizeof q);
    if (ok == 4) {
        struct tb_slurm_job j = {2, 4, s[0], s[2], s[1]};
        char *script = tb_slurm_script(&j, "/usr/bin/trnbench", "/opt/suites/default.suite", s[3],
                                       "cpu", err, sizeof err);
        fz_note(script ? 0 : -1, err);
        free(script);
    }
    if (s[4])
        fz_note(tb_slurm_parse_jobid(s[4], id, sizeof id, err, sizeof err), err);
    for (int i = 0; i < NENV; i++) {
        if (s[5 + i])
            setenv(ENV[i], s[5 + i], 1);
        else
            unsetenv(ENV[i]);
    }
    if (fz_note(tb_slurm_task_from_env(&t, err, sizeof err), err) == 0)
        for (size_t i = 0; i < 64; i++)
            tb_slurm_mine(&t, i);
    for (int i = 0; i < NPARTS; i++)
        free(s[i]);
    return 0;
}
