/* tests/unit/neuron_monitor.c: neuron-monitor sampled beside a run (tb_neuron_monitor):
 * its reports folded from a fixture stream written from the Neuron Monitor User Guide
 * (tests/data/neuron/monitor-trn2.jsonl: several reports, a malformed line, an
 * application's error), the sysfs power percentage (tests/data/neuron/power), and the
 * child's orchestration with stand-in scripts: its configuration file, reading while it
 * runs, stopping it, an early exit, a program that cannot run, and the stand-in's
 * reports refused outside tests. */
#include "tb_neuron_monitor.h"
#include "tb_timer.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* The fixture's expected figures (tests/data/neuron/README.md): utilisation values 40,
 * 60 | 80, 100, 20 | 50, 10 over cores 0, 1, 2 and 8. */
static void check_fixture_sum(const struct tb_neuron_monitor_summary *s, const char *what)
{
    IS_INT(5, s->samples, "%s: 5 reports", what);
    IS_INT(1, s->malformed, "%s: 1 malformed line skipped", what);
    IS_INT(3, s->runtime_samples, "%s: 3 with utilisation", what);
    IS_INT(7, s->nc_util_n, "%s: 7 utilisation values", what);
    IS_INT(4, s->cores, "%s: 4 distinct cores", what);
    IS_DOUBLE(360.0 / 7.0, s->nc_util_mean_pct, 1e-9, "%s: mean utilisation", what);
    IS_DOUBLE(100.0, s->nc_util_max_pct, 0, "%s: max utilisation", what);
    OK(s->device_mem_seen, "%s: device memory seen", what);
    IS_INT(14000000000LL, (long long)s->device_mem_max_bytes,
           "%s: device memory max (two applications summed)", what);
    IS_INT(7100000000LL, (long long)s->host_mem_max_bytes, "%s: host memory max", what);
    IS_STRING("trainium2", s->device_type, "%s: the device type", what);
    IS_STRING("pid 4545: lost contact with the application", s->runtime_error,
              "%s: the application's error", what);
    OK(s->stand_in, "%s: marked a stand-in's", what);
    IS_STRING("", s->why, "%s: no why", what);
    OK(!s->power_w_reported, "%s: no watts", what);
    IS_STRING("not exposed: neuron-monitor's documented output has no power figure", s->power,
              "%s: and why", what);
}

static void fold_fixture(void)
{
    struct tb_neuron_monitor_summary s;
    char *path = test_src_path("tests/data/neuron/monitor-trn2.jsonl"), *text = NULL, err[256];
    char line[600];
    const char *odd;
    size_t len = 0;
    int bad = 0;

    if (tb_read_file(path, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    tb_neuron_monitor_summary_init(&s);
    for (char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl)
            bail("the fixture's last line has no newline");
        bad += tb_neuron_monitor_add_line(&s, p, (size_t)(nl - p)) != 0;
    }
    IS_INT(1, bad, "fixture: add_line refused one line");
    tb_neuron_monitor_finish(&s);
    check_fixture_sum(&s, "fixture");

    tb_neuron_monitor_describe(&s, line, sizeof line);
    IS_STRING("NeuronCore utilisation mean 51.4% max 100.0% (5 reports, 4 cores), device memory "
              "max 13.0 GiB; power in watts not exposed: neuron-monitor's documented output has "
              "no power figure; device power not known: not read",
              line, "fixture: described");

    /* lines that are not reports */
    tb_neuron_monitor_summary_init(&s);
    IS_INT(0, tb_neuron_monitor_add_line(&s, "", 0), "an empty line: ignored");
    IS_INT(0, tb_neuron_monitor_add_line(&s, " \r", 2), "a blank line: ignored");
    IS_INT(-1, tb_neuron_monitor_add_line(&s, "[1, 2]", 6), "an array: malformed");
    IS_INT(-1, tb_neuron_monitor_add_line(&s, "{\"a\": 1} {", 10), "two values: malformed");
    IS_INT(-1, tb_neuron_monitor_add_line(&s, "\xff\xfe", 2), "not UTF-8: malformed");
    odd = "{\"neuron_runtime_data\": [{\"pid\": 1, \"report\": {\"neuroncore_counters\": "
          "{\"neuroncores_in_use\": {\"x\": {\"neuroncore_utilization\": 30}, \"5000\": "
          "{\"neuroncore_utilization\": 50}, \"1\": {\"neuroncore_utilization\": -1}, "
          "\"2\": {\"neuroncore_utilization\": \"70\"}}}, \"memory_used\": 3}}, 7]}";
    IS_INT(0, tb_neuron_monitor_add_line(&s, odd, strlen(odd)),
           "odd values inside a report: the report counts");
    tb_neuron_monitor_finish(&s);
    IS_INT(3, s.malformed, "  3 malformed");
    IS_INT(1, s.samples, "  1 report");
    IS_INT(2, s.nc_util_n, "  2 values (a negative and a string one skipped)");
    IS_INT(0, s.cores, "  no core index in range to count");
    OK(!s.device_mem_seen, "  memory_used not an object: no memory");

    tb_neuron_monitor_summary_init(&s);
    tb_neuron_monitor_add_line(&s, "{\"neuron_runtime_data\": []}", 27);
    tb_neuron_monitor_finish(&s);
    IS_STRING("no Neuron application used a NeuronCore while neuron-monitor watched (1 report "
              "without neuroncores_in_use)",
              s.why, "reports without applications: why");
    tb_neuron_monitor_summary_init(&s);
    tb_neuron_monitor_add_line(&s, "}", 1);
    tb_neuron_monitor_finish(&s);
    IS_STRING("no report from neuron-monitor could be read (1 malformed line)", s.why,
              "only malformed lines: why");
    free(text);
    free(path);
}

static void power(void)
{
    struct tb_neuron_monitor_summary s;
    char *root = test_src_path("tests/data/neuron/power");
    char *trn1 = test_src_path("tests/data/platform_ec2");
    char *p5 = test_src_path("tests/data/platform_p5");
    char line[600];

    tb_neuron_monitor_summary_init(&s);
    tb_neuron_monitor_read_power(&s, root, 0);
    tb_neuron_monitor_finish(&s);
    IS_INT(2, s.power_devices, "power: 2 devices with a valid sample (one NO_DATA, one none)");
    IS_DOUBLE(40.5, s.power_util_mean_pct, 1e-12, "power: mean of their averages, %%");
    IS_DOUBLE(80.5, s.power_util_max_pct, 1e-12, "power: the highest maximum, %%");
    IS_STRING("", s.power_util_why, "power: no why");
    tb_neuron_monitor_describe(&s, line, sizeof line);
    IS_STRING("no NeuronCore utilisation: no report from neuron-monitor; device power 40.5% of max "
              "on average, 80.5% "
              "at most (sysfs, 2 devices)",
              line, "power: described as a percentage");
    tb_neuron_monitor_read_power(&s, root, 1767225601);
    IS_INT(0, s.power_devices, "power: samples older than the start do not count");
    IS_STRING("no valid per-minute power sample since the start (the driver updates it once a "
              "minute)",
              s.power_util_why, "  why");
    tb_neuron_monitor_read_power(&s, trn1, 0);
    IS_STRING("the Neuron driver has no stats/power/utilization (older than Neuron 2.23)",
              s.power_util_why, "power: a driver without it");
    tb_neuron_monitor_read_power(&s, p5, 0);
    IS_STRING("no Neuron device in sysfs", s.power_util_why, "power: no Neuron device");
    free(root);
    free(trn1);
    free(p5);
}

/* ---- the child ---- */

static char *dir;

/* A stand-in script dir/name with body; its path (static). */
static const char *script(const char *name, const char *body)
{
    static char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "w");
    if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0 || fclose(f) != 0 || chmod(path, 0755) != 0)
        bail("cannot write %s", path);
    return path;
}

/* Wait up to 5 s for n reports. */
static bool wait_samples(tb_neuron_monitor_t m, int n)
{
    for (int i = 0; i < 500; i++) {
        if (tb_neuron_monitor_samples(m) >= n)
            return true;
        sleep_s(0.01);
    }
    return false;
}

static void child(void)
{
    struct tb_neuron_monitor_opts o = {0};
    struct tb_neuron_monitor_summary s;
    tb_neuron_monitor_t m;
    char *fixture = test_src_path("tests/data/neuron/monitor-trn2.jsonl");
    char *root = test_src_path("tests/data/neuron/power");
    char body[4096], err[600], want[1200], args[2048], config[1024], path[1200];
    char *text = NULL;
    size_t len = 0;
    uint64_t t0;
    double secs;

    dir = test_tmp_path("neuron-monitor");
    if (tb_mkdir_p(dir, err, sizeof err) != 0)
        bail("%s", err);
    snprintf(args, sizeof args, "%s/args", dir);
    snprintf(config, sizeof config, "%s/config", dir);
    unlink(args);
    unlink(config);

    /* a stand-in that records its arguments and configuration, prints the fixture and
     * stays, as neuron-monitor does */
    snprintf(body, sizeof body,
             "printf '%%s\\n' \"$@\" > '%s'\ncat \"$2\" > '%s'\ncat '%s'\n"
             "echo 'a line on stderr' >&2\nexec sleep 30",
             args, config, fixture);
    o.program = script("neuron-monitor", body);
    o.period_s = 2;
    o.root = root;
    setenv("TRNBENCH_TEST", "1", 1);
    IS_INT(0, tb_neuron_monitor_start(&m, &o, err, sizeof err), "start a stand-in (%s)", err);
    OK(wait_samples(m, 5), "its 5 reports are read while it runs (%d)",
       tb_neuron_monitor_samples(m));
    if (tb_read_file(args, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    OK(strncmp(text, "-c\n", 3) == 0, "  run as neuron-monitor -c FILE");
    snprintf(path, sizeof path, "%.*s", (int)strcspn(text + 3, "\n"), text + 3);
    free(text);
    if (tb_read_file(config, &text, &len, err, sizeof err) != 0)
        bail("%s", err);
    IS_STRING("{\n"
              "  \"period\": \"2s\",\n"
              "  \"neuron_runtimes\": [\n"
              "    {\"tag_filter\": \".*\",\n"
              "     \"metrics\": [{\"type\": \"neuroncore_counters\"}, {\"type\": "
              "\"memory_used\"}]}\n"
              "  ],\n"
              "  \"system_metrics\": [{\"type\": \"neuron_hw_counters\"}]\n"
              "}\n",
              text, "  with the documented configuration, period 2 s");
    free(text);
    OK(tb_file_exists(path), "  its configuration file exists while it runs");
    t0 = tb_timer_now_ns();
    IS_INT(0, tb_neuron_monitor_stop(m, &s, err, sizeof err), "stop (%s)", err);
    secs = tb_timer_seconds(t0, tb_timer_now_ns());
    OK(secs < 2.0, "  stopped at once by SIGTERM (%.2f s)", secs);
    OK(!tb_file_exists(path), "  its configuration file removed");
    check_fixture_sum(&s, "sampled");
    OK(s.duration_s > 0, "  a duration");
    IS_INT(0, s.power_devices, "  the fixture's power samples predate the start");
    IS_STRING("no valid per-minute power sample since the start (the driver updates it once a "
              "minute)",
              s.power_util_why, "  and say so");

    /* the same stand-in outside tests: its reports refused */
    unsetenv("TRNBENCH_TEST");
    IS_INT(0, tb_neuron_monitor_start(&m, &o, err, sizeof err), "start without TRNBENCH_TEST");
    OK(wait_samples(m, 5), "  reads");
    IS_INT(-1, tb_neuron_monitor_stop(m, &s, err, sizeof err), "stop: the reports refused");
    snprintf(want, sizeof want,
             "'%s' is a stand-in for trnbench's own tests (its reports carry "
             "\"trnbench_stand_in\"), refused outside them (no TRNBENCH_TEST=1)",
             o.program);
    IS_STRING(want, err, "  saying why");
    IS_STRING(want, s.why, "  in the summary too");
    IS_INT(0, s.samples, "  no figures kept");
    IS_INT(0, s.nc_util_n, "  no utilisation");
    setenv("TRNBENCH_TEST", "1", 1);

    /* without a configuration, one report with no newline, then stopped */
    o.no_config = true;
    o.program =
        script("nm-partial", "printf '{\"neuron_runtime_data\": [], \"n_args\": %d}' \"$#\"\n"
                             "exec sleep 30");
    IS_INT(0, tb_neuron_monitor_start(&m, &o, err, sizeof err), "start without -c");
    sleep_s(0.2);
    IS_INT(0, tb_neuron_monitor_stop(m, &s, err, sizeof err), "stop");
    IS_INT(1, s.samples, "  a last report without its newline still counts");
    o.no_config = false;

    /* an early end: that is the reason */
    snprintf(body, sizeof body,
             "echo 'level=fatal msg=\"no Neuron device\"' >&2\ntouch '%s/ended'\nexit 1", dir);
    snprintf(path, sizeof path, "%s/ended", dir);
    unlink(path);
    o.program = script("nm-early", body);
    IS_INT(0, tb_neuron_monitor_start(&m, &o, err, sizeof err), "start one that ends at once");
    for (int i = 0; i < 300 && !tb_file_exists(path); i++)
        sleep_s(0.01);
    sleep_s(0.3);
    IS_INT(0, tb_neuron_monitor_stop(m, &s, err, sizeof err), "stop: not an error");
    snprintf(want, sizeof want,
             "'%s' exited with status 1 after 0 reports: level=fatal msg=\"no Neuron device\"",
             o.program);
    IS_STRING(want, s.why, "  why: how it ended, its last stderr line");

    /* programs that cannot run */
    o.program = "/no/such/neuron-monitor";
    IS_INT(-1, tb_neuron_monitor_start(&m, &o, err, sizeof err), "a missing program: -1");
    IS_STRING("cannot run '/no/such/neuron-monitor': No such file or directory", err, "  why");
    OK(m == NULL, "  no handle");
    IS_INT(0, tb_neuron_monitor_stop(NULL, &s, err, sizeof err), "stop(NULL): 0");
    IS_STRING("neuron-monitor did not run", s.why, "  why");
    IS_INT(0, tb_neuron_monitor_samples(NULL), "samples(NULL): 0");

    o.program = NULL;
    if (access("/opt/aws/neuron/bin/neuron-monitor", X_OK) == 0) {
        skip_block(1, "this machine has /opt/aws/neuron/bin/neuron-monitor");
    } else {
        char *saved = tb_strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
        setenv("PATH", "/nonexistent", 1);
        tb_neuron_monitor_start(&m, &o, err, sizeof err);
        IS_STRING("no neuron-monitor on PATH or in /opt/aws/neuron/bin", err, "none on PATH: why");
        setenv("PATH", saved, 1);
        free(saved);
    }
    unsetenv("TRNBENCH_TEST");
    free(fixture);
    free(root);
    free(dir);
}

int main(void)
{
    plan_lazy();
    fold_fixture();
    power();
    child();
    return 0;
}
