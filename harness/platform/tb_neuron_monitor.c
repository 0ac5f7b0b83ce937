/* harness/platform/tb_neuron_monitor.c: see tb_neuron_monitor.h. One reader thread per
 * monitor polls the child's stdout and stderr (and a wake-up pipe stop writes to),
 * splits stdout into lines and folds each report into the summary, which only that
 * thread touches until stop joins it. */
#include "tb_neuron_monitor.h"

#include "tb_neuron.h"
#include "tb_proc.h"
#include "tb_timer.h"
#include "tb_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_LINE ((size_t)16 << 20) /* a longer report is counted malformed */
#define POLL_MS  100
#define DRAIN_S  1.0 /* after the child's group is gone, how long to wait for EOF */

struct tb_neuron_monitor {
    pid_t pid;                            /* the child, leader of its process group */
    int out_fd, err_fd;                   /* read ends of its stdout and stderr; -1 closed */
    int wake[2];                          /* stop writes to wake[1] when the child is gone */
    pthread_t thread;                     /* the reader */
    atomic_int samples;                   /* reports so far, for tb_neuron_monitor_samples */
    struct tb_neuron_monitor_summary sum; /* the reader's until it is joined */
    char *line;                           /* owned: the stdout line being read */
    size_t line_len, line_cap;
    bool line_overlong; /* the current line passed MAX_LINE: dropped */
    char err_tail[512]; /* the last bytes of stderr */
    size_t err_len;
    char config[256];  /* the configuration file to remove; "" none */
    char program[512]; /* what ran */
    char root[256];    /* sysfs root for the power percentage */
    double grace_s;
    uint64_t t0_ns; /* when it started */
    int64_t start_unix_s;
};

/* ---- the summary ---- */

void tb_neuron_monitor_summary_init(struct tb_neuron_monitor_summary *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->power, sizeof s->power,
             "not exposed: neuron-monitor's documented output has no power figure");
}

static const char *str_member(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : "";
}

static void note_error(struct tb_neuron_monitor_summary *s, const json_t *o, const char *what)
{
    const char *e = str_member(o, "error");
    if (e[0] && !s->runtime_error[0])
        snprintf(s->runtime_error, sizeof s->runtime_error, "%s: %s", what, e);
}

/* A non-negative integer member, added to *sum; whether there was one. */
static bool add_bytes(const json_t *o, const char *key, uint64_t *sum)
{
    const json_t *v = json_object_get(o, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return false;
    *sum += (uint64_t)json_integer_value(v);
    return true;
}

/* The utilisation values of one application's neuroncore_counters. */
static bool add_cores(struct tb_neuron_monitor_summary *s, const json_t *counters)
{
    const json_t *in_use = json_object_get(counters, "neuroncores_in_use"), *v;
    const char *key;
    bool any = false;

    if (!json_is_object(in_use))
        return false;
    json_object_foreach((json_t *)in_use, key, v)
    {
        const json_t *u = json_object_get(v, "neuroncore_utilization");
        char *end;
        long core = strtol(key, &end, 10);
        double pct;

        if (!json_is_number(u))
            continue;
        pct = json_number_value(u);
        if (!isfinite(pct) || pct < 0)
            continue;
        if (*key && !*end && core >= 0 && core < TB_NEURON_MONITOR_MAX_CORES &&
            !(s->core_seen[core / 8] & (1u << (core % 8)))) {
            s->core_seen[core / 8] |= (unsigned char)(1u << (core % 8));
            s->cores++;
        }
        if (s->nc_util_n == 0 || pct > s->nc_util_max_pct)
            s->nc_util_max_pct = pct;
        s->nc_util_sum_pct += pct;
        s->nc_util_n++;
        any = true;
    }
    return any;
}

int tb_neuron_monitor_add_line(struct tb_neuron_monitor_summary *s, const char *line, size_t len)
{
    const json_t *hw, *apps;
    json_t *root;
    uint64_t dev = 0, host = 0;
    bool util = false, mem = false;

    while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
        len--;
    if (len == 0)
        return 0;
    root = json_loadb(line, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        s->malformed++;
        return -1;
    }
    s->samples++;
    if (json_object_get(root, TB_NEURON_STAND_IN_KEY))
        s->stand_in = true;
    hw = json_object_get(root, "neuron_hardware_info");
    if (json_is_object(hw) && !s->device_type[0])
        snprintf(s->device_type, sizeof s->device_type, "%s", str_member(hw, "neuron_device_type"));
    apps = json_object_get(root, "neuron_runtime_data");
    for (size_t i = 0; json_is_array(apps) && i < json_array_size(apps); i++) {
        const json_t *app = json_array_get(apps, i), *report, *used;
        char what[64];

        if (!json_is_object(app))
            continue;
        snprintf(what, sizeof what, "pid %lld",
                 (long long)json_integer_value(json_object_get(app, "pid")));
        note_error(s, app, what);
        report = json_object_get(app, "report");
        if (!json_is_object(report))
            continue;
        note_error(s, json_object_get(report, "neuroncore_counters"), what);
        util |= add_cores(s, json_object_get(report, "neuroncore_counters"));
        used = json_object_get(json_object_get(report, "memory_used"), "neuron_runtime_used_bytes");
        if (json_is_object(used)) {
            mem |= add_bytes(used, "neuron_device", &dev);
            add_bytes(used, "host", &host);
        }
    }
    if (util)
        s->runtime_samples++;
    if (mem) {
        s->device_mem_seen = true;
        if (dev > s->device_mem_max_bytes)
            s->device_mem_max_bytes = dev;
        if (host > s->host_mem_max_bytes)
            s->host_mem_max_bytes = host;
    }
    json_decref(root);
    return 0;
}

void tb_neuron_monitor_finish(struct tb_neuron_monitor_summary *s)
{
    s->nc_util_mean_pct = s->nc_util_n ? s->nc_util_sum_pct / (double)s->nc_util_n : 0;
    if (s->nc_util_n > 0)
        s->why[0] = '\0';
    else if (s->samples == 0 && s->malformed > 0)
        snprintf(s->why, sizeof s->why,
                 "no report from neuron-monitor could be read (%d "
                 "malformed line%s)",
                 s->malformed, s->malformed == 1 ? "" : "s");
    else if (s->samples == 0)
        snprintf(s->why, sizeof s->why, "no report from neuron-monitor");
    else
        snprintf(s->why, sizeof s->why,
                 "no Neuron application used a NeuronCore while neuron-monitor watched "
                 "(%d report%s without neuroncores_in_use)",
                 s->samples, s->samples == 1 ? "" : "s");
}

/* ---- power, from sysfs ---- */

void tb_neuron_monitor_read_power(struct tb_neuron_monitor_summary *s, const char *root,
                                  int64_t since_unix_s)
{
    static const char *const dirs[] = {"/sys/devices/virtual/neuron_device",
                                       "/sys/class/neuron_device"};
    int devices = 0, files = 0, valid = 0;
    double sum_avg = 0, max = 0;

    root = root ? root : "";
    s->power_devices = 0;
    s->power_util_mean_pct = s->power_util_max_pct = 0;
    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0] && devices == 0; k++) {
        char path[1024];
        DIR *d;
        struct dirent *e;

        snprintf(path, sizeof path, "%s%s", root, dirs[k]);
        if (!(d = opendir(path)))
            continue;
        while ((e = readdir(d))) {
            char file[1400], line[256], status[64];
            long long stamp;
            double lo, hi, avg;
            FILE *f;

            if (strncmp(e->d_name, "neuron", 6) != 0 || !e->d_name[6] ||
                strspn(e->d_name + 6, "0123456789") != strlen(e->d_name + 6))
                continue;
            devices++;
            snprintf(file, sizeof file, "%s/%s/stats/power/utilization", path, e->d_name);
            if (!(f = fopen(file, "r")))
                continue;
            files++;
            if (fgets(line, sizeof line, f) &&
                sscanf(line, "%63[^,],%lld,%lf,%lf,%lf", status, &stamp, &lo, &hi, &avg) == 5 &&
                strcmp(status, "POWER_STATUS_VALID") == 0 && stamp >= since_unix_s &&
                isfinite(avg) && isfinite(hi)) {
                valid++;
                sum_avg += avg;
                if (valid == 1 || hi > max)
                    max = hi;
            }
            fclose(f);
        }
        closedir(d);
    }
    if (valid) {
        s->power_devices = valid;
        s->power_util_mean_pct = sum_avg / valid;
        s->power_util_max_pct = max;
        s->power_util_why[0] = '\0';
    } else if (devices == 0) {
        snprintf(s->power_util_why, sizeof s->power_util_why, "no Neuron device in sysfs");
    } else if (files == 0) {
        snprintf(s->power_util_why, sizeof s->power_util_why,
                 "the Neuron driver has no stats/power/utilization (older than Neuron 2.23)");
    } else {
        snprintf(s->power_util_why, sizeof s->power_util_why,
                 "no valid per-minute power sample since the start (the driver updates it "
                 "once a minute)");
    }
}

void tb_neuron_monitor_describe(const struct tb_neuron_monitor_summary *s, char *buf, size_t len)
{
    char mem[80] = "", power[240];

    if (s->device_mem_seen)
        snprintf(mem, sizeof mem, ", device memory max %.1f GiB",
                 (double)s->device_mem_max_bytes / (1024.0 * 1024.0 * 1024.0));
    if (s->power_devices)
        snprintf(power, sizeof power,
                 "device power %.1f%% of max on average, %.1f%% at most "
                 "(sysfs, %d device%s)",
                 s->power_util_mean_pct, s->power_util_max_pct, s->power_devices,
                 s->power_devices == 1 ? "" : "s");
    else
        snprintf(power, sizeof power, "device power not known: %s",
                 s->power_util_why[0] ? s->power_util_why : "not read");
    if (s->nc_util_n)
        snprintf(buf, len,
                 "NeuronCore utilisation mean %.1f%% max %.1f%% (%d report%s, %d core%s)%s; "
                 "power in watts %s; %s",
                 s->nc_util_mean_pct, s->nc_util_max_pct, s->samples, s->samples == 1 ? "" : "s",
                 s->cores, s->cores == 1 ? "" : "s", mem, s->power, power);
    else
        snprintf(buf, len, "no NeuronCore utilisation: %s%s; %s", s->why[0] ? s->why : "unknown",
                 mem, power);
}

/* ---- the reader thread ---- */

static void take_line(struct tb_neuron_monitor *m)
{
    if (m->line_overlong)
        m->sum.malformed++;
    else
        tb_neuron_monitor_add_line(&m->sum, m->line ? m->line : "", m->line_len);
    atomic_store(&m->samples, m->sum.samples);
    m->line_len = 0;
    m->line_overlong = false;
}

static void take_out(struct tb_neuron_monitor *m, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            take_line(m);
            continue;
        }
        if (m->line_overlong)
            continue;
        if (m->line_len + 1 >= m->line_cap) {
            size_t cap = m->line_cap ? 2 * m->line_cap : 4096;
            char *p;
            if (cap > MAX_LINE || !(p = realloc(m->line, cap))) {
                m->line_overlong = true; /* dropped to its newline, counted malformed */
                continue;
            }
            m->line = p;
            m->line_cap = cap;
        }
        m->line[m->line_len++] = buf[i];
    }
}

static void take_err(struct tb_neuron_monitor *m, const char *buf, size_t n)
{
    const size_t cap = sizeof m->err_tail;
    for (size_t i = 0; i < n; i++) {
        if (m->err_len + 1 >= cap) { /* keep the newer half */
            memmove(m->err_tail, m->err_tail + m->err_len - cap / 2, cap / 2);
            m->err_len = cap / 2;
        }
        m->err_tail[m->err_len++] = buf[i];
    }
    m->err_tail[m->err_len] = '\0';
}

static void *reader(void *arg)
{
    struct tb_neuron_monitor *m = arg;
    char buf[8192];
    bool woken = false;
    uint64_t woken_ns = 0;

    while (m->out_fd >= 0 || m->err_fd >= 0) {
        struct pollfd p[3];
        int *fds[3];
        nfds_t n = 0;

        if (woken && tb_timer_seconds(woken_ns, tb_timer_now_ns()) > DRAIN_S)
            break; /* something outside the group holds the pipes: leave them */
        if (m->out_fd >= 0)
            fds[n++] = &m->out_fd;
        if (m->err_fd >= 0)
            fds[n++] = &m->err_fd;
        if (!woken)
            fds[n++] = &m->wake[0];
        for (nfds_t i = 0; i < n; i++)
            p[i] = (struct pollfd){.fd = *fds[i], .events = POLLIN};
        if (poll(p, n, POLL_MS) < 0 && errno != EINTR)
            break;
        for (nfds_t i = 0; i < n; i++) {
            ssize_t got;
            if (!p[i].revents)
                continue;
            if (fds[i] == &m->wake[0]) {
                woken = true;
                woken_ns = tb_timer_now_ns();
                continue;
            }
            got = read(*fds[i], buf, sizeof buf);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                close(*fds[i]);
                *fds[i] = -1;
            } else if (fds[i] == &m->out_fd) {
                take_out(m, buf, (size_t)got);
            } else {
                take_err(m, buf, (size_t)got);
            }
        }
    }
    if (m->line_len || m->line_overlong) /* a last line without its newline */
        take_line(m);
    return NULL;
}

/* ---- start and stop ---- */

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static int cloexec(int fd)
{
    return fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* The configuration file (see the header) into m->config. */
static int write_config(struct tb_neuron_monitor *m, int period_s, char *err, size_t errlen)
{
    const char *tmp = getenv("TMPDIR");
    char text[512];
    int fd, n;

    if (!tmp || !*tmp)
        tmp = "/tmp";
    if ((size_t)snprintf(m->config, sizeof m->config, "%s/trnbench-neuron-monitor.XXXXXX", tmp) >=
        sizeof m->config) {
        m->config[0] = '\0';
        return tb_err(err, errlen, "TMPDIR '%.100s' is too long", tmp);
    }
    n = snprintf(text, sizeof text,
                 "{\n"
                 "  \"period\": \"%ds\",\n"
                 "  \"neuron_runtimes\": [\n"
                 "    {\"tag_filter\": \".*\",\n"
                 "     \"metrics\": [{\"type\": \"neuroncore_counters\"}, "
                 "{\"type\": \"memory_used\"}]}\n"
                 "  ],\n"
                 "  \"system_metrics\": [{\"type\": \"neuron_hw_counters\"}]\n"
                 "}\n",
                 period_s);
    if ((fd = mkstemp(m->config)) < 0) {
        tb_err(err, errlen, "cannot create '%s': %s", m->config, strerror(errno));
        m->config[0] = '\0';
        return -1;
    }
    if (write(fd, text, (size_t)n) != n || close(fd) != 0) {
        tb_err(err, errlen, "cannot write '%s': %s", m->config, strerror(errno));
        unlink(m->config);
        m->config[0] = '\0';
        return -1;
    }
    return 0;
}

static void monitor_free(struct tb_neuron_monitor *m)
{
    close_fd(&m->out_fd);
    close_fd(&m->err_fd);
    close_fd(&m->wake[0]);
    close_fd(&m->wake[1]);
    if (m->config[0])
        unlink(m->config);
    free(m->line);
    free(m);
}

int tb_neuron_monitor_start(tb_neuron_monitor_t *mp, const struct tb_neuron_monitor_opts *o,
                            char *err, size_t errlen)
{
    static const struct tb_neuron_monitor_opts none;
    struct tb_neuron_monitor *m;
    int outp[2] = {-1, -1}, errp[2] = {-1, -1}, execp[2] = {-1, -1}, child_errno = 0, status;
    const char *argv[4];
    ssize_t got;

    *mp = NULL;
    o = o ? o : &none;
    if (!(m = calloc(1, sizeof *m)))
        return tb_err(err, errlen, "out of memory");
    m->pid = -1;
    m->out_fd = m->err_fd = m->wake[0] = m->wake[1] = -1;
    tb_neuron_monitor_summary_init(&m->sum);
    m->grace_s = o->grace_s > 0 ? o->grace_s : TB_NEURON_MONITOR_GRACE_S;
    snprintf(m->root, sizeof m->root, "%s", o->root ? o->root : "");
    if (o->program)
        snprintf(m->program, sizeof m->program, "%s", o->program);
    else if (!tb_neuron_tool_find("neuron-monitor", m->program, sizeof m->program)) {
        tb_err(err, errlen, "no neuron-monitor on PATH or in " TB_NEURON_TOOLS_DIR);
        goto fail;
    }
    if (!o->no_config && write_config(m, o->period_s > 0 ? o->period_s : TB_NEURON_MONITOR_PERIOD_S,
                                      err, errlen) != 0)
        goto fail;
    argv[0] = m->program;
    argv[1] = o->no_config ? NULL : "-c";
    argv[2] = o->no_config ? NULL : m->config;
    argv[3] = NULL;

    if (pipe(outp) != 0 || pipe(errp) != 0 || pipe(execp) != 0 || pipe(m->wake) != 0) {
        tb_err(err, errlen, "cannot create a pipe: %s", strerror(errno));
        goto fail;
    }
    /* what stays in this process must not leak into the child, nor into the programs
     * a run starts later (a server holding the monitor's pipe would hide its EOF) */
    if (cloexec(outp[0]) || cloexec(errp[0]) || cloexec(execp[0]) || cloexec(execp[1]) ||
        cloexec(m->wake[0]) || cloexec(m->wake[1])) {
        tb_err(err, errlen, "cannot set close-on-exec: %s", strerror(errno));
        goto fail;
    }
    m->pid = fork();
    if (m->pid < 0) {
        tb_err(err, errlen, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (m->pid == 0)
        tb_proc_exec_child(argv, outp[1], errp[1], execp[1]);
    setpgid(m->pid, m->pid);
    close_fd(&outp[1]);
    close_fd(&errp[1]);
    close_fd(&execp[1]);
    /* EOF after a good exec (close-on-exec), the child's errno after a failed one */
    do
        got = read(execp[0], &child_errno, sizeof child_errno);
    while (got < 0 && errno == EINTR);
    close_fd(&execp[0]);
    if (got == (ssize_t)sizeof child_errno) {
        tb_err(err, errlen, "cannot run '%s': %s", m->program, strerror(child_errno));
        while (waitpid(m->pid, &status, 0) < 0 && errno == EINTR)
            ;
        m->pid = -1;
        goto fail;
    }
    m->out_fd = outp[0];
    m->err_fd = errp[0];
    outp[0] = errp[0] = -1;
    m->t0_ns = tb_timer_now_ns();
    m->start_unix_s = (int64_t)time(NULL);
    if (pthread_create(&m->thread, NULL, reader, m) != 0) {
        tb_err(err, errlen, "cannot start a thread to read neuron-monitor");
        kill(-m->pid, SIGKILL);
        while (waitpid(m->pid, &status, 0) < 0 && errno == EINTR)
            ;
        goto fail;
    }
    *mp = m;
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&outp[i]);
        close_fd(&errp[i]);
        close_fd(&execp[i]);
    }
    monitor_free(m);
    return -1;
}

int tb_neuron_monitor_samples(tb_neuron_monitor_t m)
{
    return m ? atomic_load(&m->samples) : 0;
}

/* Whether the child has exited, reaping it (its status into *status). */
static bool reaped(pid_t pid, int *status)
{
    pid_t w;
    while ((w = waitpid(pid, status, WNOHANG)) < 0 && errno == EINTR)
        ;
    return w == pid || (w < 0 && errno == ECHILD);
}

int tb_neuron_monitor_stop(tb_neuron_monitor_t m, struct tb_neuron_monitor_summary *sum, char *err,
                           size_t errlen)
{
    struct tb_proc_result how = {0};
    bool early;
    int status = 0, rc = 0;
    char ended[160], last[200];

    tb_neuron_monitor_summary_init(sum);
    if (!m) {
        snprintf(sum->why, sizeof sum->why, "neuron-monitor did not run");
        return 0;
    }
    early = reaped(m->pid, &status);
    if (!early) {
        uint64_t t = tb_timer_now_ns();
        bool gone = false;
        kill(-m->pid, SIGTERM);
        while (!(gone = reaped(m->pid, &status)) &&
               tb_timer_seconds(t, tb_timer_now_ns()) < m->grace_s)
            nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
        if (!gone) {
            kill(-m->pid, SIGKILL);
            while (waitpid(m->pid, &status, 0) < 0 && errno == EINTR)
                ;
        }
    }
    kill(-m->pid, SIGKILL); /* anything it left behind in its group */
    if (write(m->wake[1], "x", 1) < 0) {
        /* the reader then leaves at its pipes' EOF, which the kill above brings */
    }
    pthread_join(m->thread, NULL);

    *sum = m->sum;
    sum->duration_s = tb_timer_seconds(m->t0_ns, tb_timer_now_ns());
    tb_neuron_monitor_finish(sum);
    if (sum->stand_in && !tb_neuron_stand_in_allowed()) {
        int malformed = sum->malformed;
        double duration = sum->duration_s;
        tb_neuron_monitor_summary_init(sum);
        sum->malformed = malformed;
        sum->duration_s = duration;
        sum->stand_in = true;
        snprintf(sum->why, sizeof sum->why,
                 "'%.300s' is a stand-in for trnbench's own tests (its reports carry \"%s\"), "
                 "refused outside them (no TRNBENCH_TEST=1)",
                 m->program, TB_NEURON_STAND_IN_KEY);
        rc = tb_err(err, errlen, "%s", sum->why);
        goto out;
    }
    if (early && sum->nc_util_n == 0) {
        /* it ended on its own before stop: that is the reason */
        how.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        how.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        tb_proc_describe(&how, 0, ended, sizeof ended);
        tb_proc_last_line(m->err_tail, last, sizeof last);
        snprintf(sum->why, sizeof sum->why, "'%.200s' %.100s after %d report%s%s%.150s", m->program,
                 ended, sum->samples, sum->samples == 1 ? "" : "s", last[0] ? ": " : "", last);
    } else if (sum->samples == 0) {
        snprintf(sum->why, sizeof sum->why,
                 "no report from neuron-monitor in %.1f s (it writes one per period)",
                 sum->duration_s);
    }
    tb_neuron_monitor_read_power(sum, m->root, m->start_unix_s);
out:
    monitor_free(m);
    return rc;
}
