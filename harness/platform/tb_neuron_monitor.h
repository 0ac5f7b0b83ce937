/*
 * harness/platform/tb_neuron_monitor.h: what the Neuron devices did during a run, from
 * neuron-monitor sampled beside it: NeuronCore utilisation, device memory, and power as
 * far as anything reports it.
 *
 * Use (the run pipeline wraps a measured Neuron run in it):
 *
 *     tb_neuron_monitor_t mon;
 *     struct tb_neuron_monitor_opts o = {.period_s = 1};
 *     struct tb_neuron_monitor_summary sum;
 *     if (tb_neuron_monitor_start(&mon, &o, err, sizeof err) != 0)
 *         record err as the reason the run has no device figures;   (mon is NULL)
 *     ... run the workload; tb_neuron_monitor_samples(mon) says how many reports came ...
 *     if (tb_neuron_monitor_stop(mon, &sum, err, sizeof err) != 0)
 *         a stand-in's output outside tests: refuse like TRNBENCH_TEST_PLATFORM
 *     record sum (tb_neuron_monitor_describe for one line; sum.why when it has no data)
 *
 * The child. neuron-monitor (from aws-neuronx-tools; found on PATH, else in
 * /opt/aws/neuron/bin) runs without a shell, in a process group of its own, stdin from
 * /dev/null, with `-c FILE`: a configuration written to a temporary file (removed at
 * stop) that asks every Neuron application ("tag_filter": ".*") for the
 * neuroncore_counters and memory_used groups, and the system's neuron_hw_counters,
 * every period_s whole seconds. A thread reads its stdout as it comes, one JSON report
 * per line, and folds each into the summary; its stderr's last bytes are kept for the
 * message when it ends early. stop sends SIGTERM to the group, SIGKILL after grace_s,
 * reads what is left, and removes the configuration file.
 *
 * The reports (Neuron Monitor User Guide: aws-neuron-sdk,
 * tools/neuron-sys-tools/neuron-monitor-user-guide.rst, "The JSON output format", as of
 * commit 81ce03ae, August 2026). The guide says a complete JSON is written to stdout per
 * update and prints it pretty; it is read here as one report per line, as the readers
 * of its pipe in public repositories read it (a pretty-printed stream would be all
 * malformed lines, and say so in sum.why). The fields read:
 *
 *   neuron_runtime_data[]             one entry per Neuron application (process)
 *     .pid, .error                    the collection error for it, "" when none
 *     .report.neuroncore_counters.neuroncores_in_use["<core>"]
 *       .neuroncore_utilization       percent over the group's period
 *                                     (on Trn2 "v3d" breaks a logical core into its
 *                                     physical ones: not read, the logical figure is)
 *     .report.memory_used.neuron_runtime_used_bytes
 *       .neuron_device, .host         bytes the application holds now
 *   system_data.neuron_hw_counters    ECC counts (not summarised)
 *   neuron_hardware_info              .neuron_device_type ("trainium2"), always present
 *
 * Summary: NeuronCore utilisation is the mean and maximum of every value read (each
 * report, application and core in use: cores no application used are not in
 * neuroncores_in_use and not in the mean, which is therefore over the cores the run
 * used, not over the instance); device memory is the maximum over reports of the sum
 * over applications (likewise host memory). Power: neuron-monitor's documented output
 * has no power figure, so no watts are reported (sum.power_w_reported stays false and
 * sum.power says so); what the Neuron driver does expose is each device's power as a
 * percentage of its maximum, averaged per minute, in sysfs
 * (/sys/devices/virtual/neuron_device/neuron<N>/stats/power/utilization:
 * "<status>,<unix time>,<min %>,<max %>,<avg %>", Neuron Sysfs User Guide, Neuron
 * 2.23), read at stop for the minutes that ended after the start, and reported as that
 * percentage, never converted to watts. Lines that are not one JSON object are
 * counted (sum.malformed) and skipped; they never stop the sampling.
 *
 * Stand-ins: a report carrying the key "trnbench_stand_in" (tb_neuron.h) comes from a
 * test's stand-in script; outside tests (no TRNBENCH_TEST=1) stop refuses the whole
 * stream: no figures, -1 and the reason.
 *
 * Ownership and threads: a tb_neuron_monitor_t owns its child, its thread, its pipes
 * and its configuration file until tb_neuron_monitor_stop, which frees them all and
 * the handle (call it exactly once per handle, from the thread that started it).
 * tb_neuron_monitor_samples may be called from any thread meanwhile. A summary holds
 * only numbers and fixed-size strings.
 */
#ifndef TB_NEURON_MONITOR_H
#define TB_NEURON_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tb_neuron_monitor *tb_neuron_monitor_t;

#define TB_NEURON_MONITOR_PERIOD_S  1   /* default seconds between reports */
#define TB_NEURON_MONITOR_GRACE_S   2.0 /* default seconds from SIGTERM to SIGKILL */
#define TB_NEURON_MONITOR_MAX_CORES 1024

struct tb_neuron_monitor_opts {
    const char *program; /* borrowed; NULL: neuron-monitor on PATH, else in
                            /opt/aws/neuron/bin */
    int period_s;        /* whole seconds between reports; 0: TB_NEURON_MONITOR_PERIOD_S */
    bool no_config;      /* run without -c: neuron-monitor's defaults (all groups, 5 s) */
    const char *root;    /* borrowed; where sysfs is for the power percentage; NULL or
                            "": this machine (a simulated platform's root in tests) */
    double grace_s;      /* stop: SIGKILL this long after SIGTERM; 0: the default */
};

struct tb_neuron_monitor_summary {
    int samples;                   /* reports read (JSON objects) */
    int malformed;                 /* lines skipped: not one JSON object */
    int runtime_samples;           /* reports with at least one utilisation value */
    int cores;                     /* distinct NeuronCores seen in use */
    long nc_util_n;                /* utilisation values read (report x app x core) */
    double nc_util_sum_pct;        /* their sum (running; the mean is derived) */
    double nc_util_mean_pct;       /* mean NeuronCore utilisation, percent */
    double nc_util_max_pct;        /* highest value read, percent */
    bool device_mem_seen;          /* some report had memory_used */
    uint64_t device_mem_max_bytes; /* max over reports of device memory held */
    uint64_t host_mem_max_bytes;   /* max over reports of host memory held */
    bool power_w_reported;         /* watts from the tool: never, as documented */
    char power[160];               /* what about power in watts: "not exposed ..." */
    int power_devices;             /* devices with a sysfs power percentage in the run */
    double power_util_mean_pct;    /* mean of their per-minute average, % of max power */
    double power_util_max_pct;     /* highest per-minute maximum, % of max power */
    char power_util_why[200];      /* when power_devices is 0: why */
    char device_type[32];          /* neuron_hardware_info.neuron_device_type */
    char runtime_error[256];       /* the first non-empty "error" a report carried */
    bool stand_in;                 /* some report carried the stand-in key */
    double duration_s;             /* from start to stop */
    char why[512];                 /* when there are no utilisation values: why */
    unsigned char core_seen[TB_NEURON_MONITOR_MAX_CORES / 8]; /* bitmap (running) */
};

/* Start sampling: neuron-monitor as a child read by a thread. Returns 0 with *m, or -1
 * with the reason (no neuron-monitor on PATH or in /opt/aws/neuron/bin, it cannot be
 * run, a pipe, thread or temporary file failed) and *m NULL. */
int tb_neuron_monitor_start(tb_neuron_monitor_t *m, const struct tb_neuron_monitor_opts *o,
                            char *err, size_t errlen);

/* Reports read so far (thread-safe). */
int tb_neuron_monitor_samples(tb_neuron_monitor_t m);

/* Stop the child (SIGTERM to its group, SIGKILL after the grace), read the rest, and
 * summarise into sum; frees m. Returns 0 (sum.why says why when it has no utilisation:
 * neuron-monitor ended early and how, no report came, or no Neuron application ran),
 * or -1 with the reason when the reports came from a stand-in outside tests (sum then
 * holds no figures). m NULL: sum says no sampling ran, returns 0. */
int tb_neuron_monitor_stop(tb_neuron_monitor_t m, struct tb_neuron_monitor_summary *sum, char *err,
                           size_t errlen);

/* ---- the parts, for tests and for callers with their own reports ---- */

/* An empty summary. */
void tb_neuron_monitor_summary_init(struct tb_neuron_monitor_summary *s);

/* Fold one report (a line without its newline; len bytes) into s. Returns 0, or -1 when
 * it is not one JSON object (counted in s->malformed). An empty line is ignored. */
int tb_neuron_monitor_add_line(struct tb_neuron_monitor_summary *s, const char *line, size_t len);

/* Derive the mean and the why from what was folded in. */
void tb_neuron_monitor_finish(struct tb_neuron_monitor_summary *s);

/* The sysfs power percentage of every Neuron device under root (NULL or "": this
 * machine), for the per-minute samples stamped at or after since_unix_s (0: any), into
 * s->power_devices, power_util_mean_pct, power_util_max_pct, or why not into
 * s->power_util_why. */
void tb_neuron_monitor_read_power(struct tb_neuron_monitor_summary *s, const char *root,
                                  int64_t since_unix_s);

/* One line: "NeuronCore utilisation mean 42.0% max 89.4% (12 samples, 8 cores), device
 * memory max 11.7 GiB, power not exposed by neuron-monitor; device power 38.5% of max
 * (sysfs, 16 devices)", or the why. Always terminated. */
void tb_neuron_monitor_describe(const struct tb_neuron_monitor_summary *s, char *buf, size_t len);

#endif
