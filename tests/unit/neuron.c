/* tests/unit/neuron.c: the Neuron devices as neuron-ls lists them (tb_neuron): its
 * --json-output parsed from fixtures written from the Neuron LS User Guide
 * (tests/data/neuron/README.md), and tb_neuron_detect orchestrating stand-in neuron-ls
 * scripts on PATH: accepted under TRNBENCH_TEST=1, refused without it, and the sysfs
 * facts kept, each with its reason, when neuron-ls is missing, fails, prints garbage or
 * hangs (stopped at the time limit). */
#include "tb_neuron.h"
#include "tb_platform.h"
#include "tb_timer.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static struct tb_neuron n; /* large: not on the stack */

/* Parse the fixture tests/data/neuron/<name>; its return code, the message into err. */
static int parse_fixture(const char *name, char *err, size_t errlen)
{
    char rel[256], *path, *text = NULL;
    size_t len = 0;
    int rc;

    snprintf(rel, sizeof rel, "tests/data/neuron/%s", name);
    path = test_src_path(rel);
    if (tb_read_file(path, &text, &len, err, errlen) != 0)
        bail("%s", err);
    err[0] = '\0';
    rc = tb_neuron_ls_parse(&n, text, len, err, errlen);
    free(text);
    free(path);
    return rc;
}

static int parse_text(const char *text, char *err, size_t errlen)
{
    err[0] = '\0';
    return tb_neuron_ls_parse(&n, text, strlen(text), err, errlen);
}

static void trn2(void)
{
    char err[256], line[256];

    IS_INT(0, parse_fixture("ls-trn2.json", err, sizeof err), "trn2: parsed (%s)", err);
    IS_STRING("neuron-ls", n.source, "trn2: source");
    IS_INT(16, n.ndevices, "trn2: 16 devices");
    IS_INT(64, n.ncores, "trn2: 64 NeuronCores (4 logical per device)");
    IS_INT(2, n.logical_nc_config, "trn2: logical_neuroncore_config 2");
    IS_INT(16 * 103079215104ULL, (long long)n.memory_bytes, "trn2: 16 x 96 GiB");
    OK(n.stand_in, "trn2: the fixture carries the stand-in key");
    IS_STRING("", n.instance_type, "trn2: no instance_type in the guide's format");
    IS_INT(0, n.dev[0].index, "trn2: device 0 first");
    IS_STRING("cc:00.0", n.dev[0].bdf, "trn2: device 0's BDF");
    IS_INT(4, n.dev[0].nlinks, "trn2: device 0 links to 4");
    IS_INT(12, n.dev[0].links[0], "trn2: its first link, as listed");
    IS_INT(1, n.dev[0].links[3], "trn2: its last link");
    IS_INT(1, n.dev[0].nprocesses, "trn2: one process on device 0");
    IS_STRING("2.0.0", n.dev[0].runtime_version, "trn2: its runtime version");
    IS_INT(15, n.dev[15].index, "trn2: device 15 last");
    IS_STRING("f7:00.0", n.dev[15].bdf, "trn2: device 15's BDF");
    tb_neuron_device_describe(&n.dev[0], line, sizeof line);
    IS_STRING("4 NeuronCores, 96 GiB, PCI cc:00.0, linked to 12 3 4 1, 1 process (runtime 2.0.0)",
              line, "trn2: device 0 described");
    tb_neuron_describe(&n, line, sizeof line);
    IS_STRING("16 Neuron devices, 64 NeuronCores (logical, LNC 2), 1536 GiB device memory "
              "(neuron-ls)",
              line, "trn2: described");
}

static void inf2(void)
{
    char err[256], line[256];

    IS_INT(0, parse_fixture("ls-inf2.json", err, sizeof err), "inf2: parsed (%s)", err);
    IS_INT(1, n.ndevices, "inf2: one device");
    IS_INT(2, n.ncores, "inf2: 2 NeuronCores");
    IS_INT(0, n.logical_nc_config, "inf2: no logical_neuroncore_config");
    IS_INT(34359738368LL, (long long)n.memory_bytes, "inf2: 32 GiB");
    IS_INT(0, n.dev[0].nlinks, "inf2: connected_to null: no links");
    IS_STRING("inf2.xlarge", n.instance_type, "inf2: instance_type");
    IS_STRING("i-aabbccdd123456789", n.instance_id, "inf2: instance_id");
    tb_neuron_device_describe(&n.dev[0], line, sizeof line);
    IS_STRING("2 NeuronCores, 32 GiB, PCI 00:1f.0", line, "inf2: device described");
    tb_neuron_describe(&n, line, sizeof line);
    IS_STRING("1 Neuron device, 2 NeuronCores, 32 GiB device memory (neuron-ls)", line,
              "inf2: described");
}

static void garbage(void)
{
    char err[256];

    IS_INT(-1, parse_fixture("ls-malformed.json", err, sizeof err),
           "the guide's example with its '...' elision: refused");
    IS_STRING("not JSON: line 31 column 5: invalid token near '.'", err, "  saying where");
    IS_INT(0, n.ndevices, "  and nothing kept");
    IS_INT(-1, parse_fixture("ls-truncated.json", err, sizeof err), "truncated: refused");
    IS_STRING("not JSON: line 45 column 8: string or '}' expected near end of file", err,
              "  saying where");
    IS_INT(-1, parse_text("", err, sizeof err), "empty output: refused");
    IS_STRING("not JSON: line 1 column 0: '[' or '{' expected near end of file", err, "  not JSON");
    IS_INT(-1, parse_text("{\"neuron_devices\": []}", err, sizeof err), "an object: refused");
    IS_STRING("not a JSON array of devices (a JSON object)", err, "  named");
    IS_INT(-1, parse_text("[1]", err, sizeof err), "an entry not an object: refused");
    IS_STRING("entry 0: not a JSON object", err, "  named");
    IS_INT(-1, parse_text("[{\"neuron_device\": 0}]", err, sizeof err), "no nc_count: refused");
    IS_STRING("device 0: no integer 'nc_count'", err, "  named");
    IS_INT(-1, parse_text("[{\"neuron_device\": 0, \"nc_count\": \"4\"}]", err, sizeof err),
           "nc_count a string: refused");
    IS_INT(-1,
           parse_text("[{\"neuron_device\": 1, \"nc_count\": 2, \"memory_size\": \"32 GB\"}]", err,
                      sizeof err),
           "memory_size as text: refused");
    IS_STRING("device 1: 'memory_size' is not a byte count", err, "  named");
    IS_INT(-1,
           parse_text("[{\"neuron_device\": 0, \"nc_count\": 2}, {\"neuron_device\": 0, "
                      "\"nc_count\": 2}]",
                      err, sizeof err),
           "a device listed twice: refused");
    IS_STRING("device 0 is listed twice", err, "  named");
    IS_INT(-1,
           parse_text("[{\"neuron_device\": 0, \"nc_count\": 2, \"connected_to\": \"1, 2\"}]", err,
                      sizeof err),
           "connected_to as text: refused");
    IS_INT(0, parse_text("[]", err, sizeof err), "an empty list parses");
    IS_INT(0, n.ndevices, "  with no device");
    IS_INT(0,
           parse_text("[{\"neuron_device\": 3, \"nc_count\": 2}, {\"neuron_device\": 1, "
                      "\"nc_count\": 2}, {\"neuron_device\": 2, \"nc_count\": 2}]",
                      err, sizeof err),
           "devices out of order parse");
    OK(n.dev[0].index == 1 && n.dev[1].index == 2 && n.dev[2].index == 3,
       "  and are sorted by index");
    OK(!n.stand_in, "  without the key: no stand-in");
}

/* ---- tb_neuron_detect with stand-ins on PATH ---- */

static char *bin_dir;

/* A stand-in neuron-ls in bin_dir running the shell script body. */
static void stand_in(const char *body)
{
    char path[1024];
    FILE *f;

    snprintf(path, sizeof path, "%s/neuron-ls", bin_dir);
    f = fopen(path, "w");
    if (!f || fprintf(f, "#!/bin/sh\n%s\n", body) < 0 || fclose(f) != 0 || chmod(path, 0755) != 0)
        bail("cannot write %s", path);
}

static struct keys {
    int devices;
    char source[600];
    char not_used[600];
} keys;

static void collect(const char *key, const char *value, void *ctx)
{
    (void)ctx;
    if (strncmp(key, "neuron_device_", 14) == 0)
        keys.devices++;
    if (strcmp(key, "neuron_source") == 0)
        snprintf(keys.source, sizeof keys.source, "%s", value);
    if (strcmp(key, "neuron_ls_not_used") == 0)
        snprintf(keys.not_used, sizeof keys.not_used, "%s", value);
}

static void detect(void)
{
    struct tb_platform p;
    char err[600], want[1200], tool[1024], script[1200];
    char *trn2_json = test_src_path("tests/data/neuron/ls-trn2.json");
    char *trn2_root = test_src_path("tests/data/platform_trn2");
    const char *old_path = getenv("PATH");
    char *saved_path = tb_strdup(old_path ? old_path : "/usr/bin:/bin"), path[2048];
    double secs;
    uint64_t t0;

    bin_dir = test_tmp_path("neuron-bin");
    if (tb_mkdir_p(bin_dir, err, sizeof err) != 0)
        bail("%s", err);
    snprintf(path, sizeof path, "%s:/usr/bin:/bin", bin_dir);
    setenv("PATH", path, 1);
    if (tb_platform_detect_root(&p, trn2_root, err, sizeof err) != 0)
        bail("%s", err);
    p.simulated = true; /* as tb_platform_detect makes it under TRNBENCH_TEST_PLATFORM */
    snprintf(tool, sizeof tool, "%s/neuron-ls", bin_dir);

    /* a stand-in printing the trn2 fixture, in a test */
    snprintf(script, sizeof script, "cat '%s'", trn2_json);
    stand_in(script);
    setenv("TRNBENCH_TEST", "1", 1);
    IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "stand-in under TRNBENCH_TEST=1: used");
    IS_STRING("neuron-ls", n.source, "  its list");
    IS_STRING(tool, n.neuron_ls, "  from the stand-in on PATH");
    OK(n.stand_in, "  marked as a stand-in");
    IS_STRING("", n.why, "  no reason needed");
    IS_STRING("Trainium2", n.device_name, "  the device name from sysfs");
    memset(&keys, 0, sizeof keys);
    tb_neuron_each(&n, collect, NULL);
    IS_INT(16, keys.devices, "  detect lists its 16 devices");
    snprintf(want, sizeof want, "neuron-ls (%s), a test stand-in", tool);
    IS_STRING(want, keys.source, "  and says where they come from");

    /* the same outside tests: refused, the sysfs facts kept */
    unsetenv("TRNBENCH_TEST");
    IS_INT(-1, tb_neuron_detect(&n, &p, 5, err, sizeof err),
           "stand-in without TRNBENCH_TEST: refused");
    snprintf(want, sizeof want,
             "'%s' is a stand-in for trnbench's own tests (its output carries "
             "\"trnbench_stand_in\"), refused outside them (no TRNBENCH_TEST=1): take it off PATH",
             tool);
    IS_STRING(want, err, "  saying why");
    IS_STRING(want, n.why, "  the same reason in n");
    IS_STRING("sysfs", n.source, "  the sysfs facts instead");
    IS_INT(16, n.ndevices, "  16 devices");
    IS_INT(128, n.ncores, "  128 (physical) NeuronCores");
    setenv("TRNBENCH_TEST", "1", 1);

    /* neuron-ls failing as it does without a driver (stderr in logfmt, exit 1) */
    stand_in("echo 'time=\"2026-01-01T00:00:00Z\" level=fatal msg=\"Failed to load MLA system "
             "information\" error=\"failed to discover Neuron devices\"' >&2; exit 1");
    IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "failing neuron-ls: not an error");
    snprintf(want, sizeof want,
             "'%s --json-output' exited with status 1: time=\"2026-01-01T00:00:00Z\" "
             "level=fatal msg=\"Failed to load MLA system information\" error=\"failed to "
             "discover Neuron devices\"",
             tool);
    IS_STRING(want, n.why, "  the reason, with its last stderr line");
    IS_STRING("sysfs", n.source, "  the sysfs facts");

    stand_in("echo 'usage: neuron-ls [--wide]'");
    IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "garbage on stdout: not an error");
    snprintf(want, sizeof want,
             "'%s --json-output' printed no device list: not JSON: line 1 column 5: "
             "'[' or '{' expected near 'usage'",
             tool);
    IS_STRING(want, n.why, "  the reason");
    IS_INT(16, n.ndevices, "  the sysfs facts");

    stand_in("echo '[]'");
    IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "an empty list: not an error");
    snprintf(want, sizeof want, "'%s --json-output' listed no Neuron device", tool);
    IS_STRING(want, n.why, "  the reason");

    /* a stand-in that hangs: its process group stopped at the time limit */
    stand_in("sleep 30");
    t0 = tb_timer_now_ns();
    IS_INT(0, tb_neuron_detect(&n, &p, 0.3, err, sizeof err), "hanging neuron-ls: not an error");
    secs = tb_timer_seconds(t0, tb_timer_now_ns());
    OK(secs < 3.0, "  stopped at the limit (%.2f s)", secs);
    snprintf(want, sizeof want, "'%s --json-output' timed out after 0.3 s", tool);
    IS_STRING(want, n.why, "  the reason");
    IS_STRING("sysfs", n.source, "  the sysfs facts");

    /* a stand-in neuron-monitor is found the same way */
    snprintf(script, sizeof script, "%s/neuron-monitor", bin_dir);
    if (rename(tool, script) != 0)
        bail("cannot rename %s", tool);
    OK(tb_neuron_tool_find("neuron-monitor", tool, sizeof tool), "tool_find: neuron-monitor");
    IS_STRING(script, tool, "  on PATH");

    /* no neuron-ls at all */
    if (tb_neuron_tool_find("neuron-ls", tool, sizeof tool)) {
        skip_block(2, "this machine has a neuron-ls (%s)", tool);
    } else {
        IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "no neuron-ls: not an error");
        IS_STRING("no neuron-ls on PATH or in /opt/aws/neuron/bin", n.why, "  the reason");
    }

    /* a tree read with --root: neuron-ls would describe this machine */
    p.simulated = false;
    stand_in("exit 3");
    IS_INT(0, tb_neuron_detect(&n, &p, 5, err, sizeof err), "a --root tree: not an error");
    snprintf(want, sizeof want,
             "not run: the facts come from the tree '%s', and neuron-ls would describe this "
             "machine",
             trn2_root);
    IS_STRING(want, n.why, "  neuron-ls not run, and why");
    memset(&keys, 0, sizeof keys);
    tb_neuron_each(&n, collect, NULL);
    IS_STRING("sysfs", keys.source, "  detect: source sysfs");
    IS_STRING(want, keys.not_used, "  detect: the reason");
    IS_INT(0, keys.devices, "  detect: no per-device lines");

    unsetenv("TRNBENCH_TEST");
    setenv("PATH", saved_path, 1);
    free(saved_path);
    free(trn2_json);
    free(trn2_root);
    free(bin_dir);
}

/* ---- the LNC: neuron-ls's when it states one, else guessed, said which ---- */

static void lnc(void)
{
    struct tb_platform p;
    struct tb_neuron_lnc l;
    char err[256];
    const char *old = getenv("NEURON_LOGICAL_NC_CONFIG");
    char *saved = old ? tb_strdup(old) : NULL;

    memset(&p, 0, sizeof p);
    p.neuron_devices = 16;
    p.neuron_cores = 128; /* sysfs: physical */
    snprintf(p.neuron_name, sizeof p.neuron_name, "Trainium2");
    unsetenv("NEURON_LOGICAL_NC_CONFIG");

    IS_INT(0, parse_fixture("ls-trn2.json", err, sizeof err), "lnc: trn2 list parsed (%s)", err);
    tb_neuron_lnc_resolve(&n, &p, &l);
    IS_INT(2, l.lnc, "lnc: neuron-ls's logical_neuroncore_config 2");
    IS_STRING("neuron-ls", l.source, "  from neuron-ls");
    IS_INT(4, l.per_device, "  4 logical NeuronCores a device (nc_count)");
    IS_STRING("LNC 2 as neuron-ls states it (logical_neuroncore_config)", l.how, "  said");

    setenv("NEURON_LOGICAL_NC_CONFIG", "1", 1);
    tb_neuron_lnc_resolve(&n, &p, &l);
    IS_INT(2, l.lnc, "lnc: neuron-ls's kept over NEURON_LOGICAL_NC_CONFIG=1");
    IS_STRING("LNC 2 as neuron-ls states it (logical_neuroncore_config); "
              "NEURON_LOGICAL_NC_CONFIG=1 here differs",
              l.how, "  the difference said");

    tb_neuron_lnc_resolve(NULL, &p, &l);
    IS_INT(1, l.lnc, "lnc: no neuron-ls: NEURON_LOGICAL_NC_CONFIG=1");
    IS_STRING("NEURON_LOGICAL_NC_CONFIG", l.source, "  its source");
    IS_INT(8, l.per_device, "  8 logical NeuronCores a Trainium2 at LNC 1");

    unsetenv("NEURON_LOGICAL_NC_CONFIG");
    IS_INT(0, parse_fixture("ls-inf2.json", err, sizeof err), "lnc: inf2 list parsed (%s)", err);
    tb_neuron_lnc_resolve(&n, &p, &l);
    IS_STRING("default", l.source, "lnc: a list without logical_neuroncore_config: guessed");
    IS_INT(2, l.lnc, "  the SDK's default on Trainium2");
    IS_INT(4, l.per_device, "  4 a device");
    IS_STRING("LNC 2 guessed: the Neuron SDK's default on Trainium2 (neuron-ls stated none, "
              "NEURON_LOGICAL_NC_CONFIG unset)",
              l.how, "  said");

    memset(&p, 0, sizeof p);
    tb_neuron_lnc_resolve(NULL, &p, &l);
    IS_INT(0, l.lnc, "lnc: no Neuron device: none");
    IS_STRING("none", l.source, "  said");

    if (saved)
        setenv("NEURON_LOGICAL_NC_CONFIG", saved, 1);
    free(saved);
}

int main(void)
{
    plan_lazy();
    trn2();
    inf2();
    garbage();
    lnc();
    detect();
    return 0;
}
