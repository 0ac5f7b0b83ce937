/*
 * harness/platform/tb_neuron.h: the AWS Neuron devices on this machine as the Neuron
 * SDK's own tool lists them, and whether the SDK is there to use them.
 *
 * The SDK's tools (neuron-ls, neuron-top, neuron-monitor) come in the aws-neuronx-tools
 * package, which installs them in /opt/aws/neuron/bin; the Neuron DLAMI and users put
 * that folder on PATH. Neither a missing SDK nor a missing device is an error: the
 * callers record the reason and run what they can. The SDK's versions are in
 * tb_neuron_sdk.h, the sampling of neuron-monitor during a run in tb_neuron_monitor.h.
 *
 * ---- neuron-ls --json-output ----
 *
 * tb_neuron_detect runs `neuron-ls --json-output` (a child process, argv, a time limit:
 * tb_proc.h) and reads its JSON with jansson. The format, from the Neuron LS User Guide
 * (aws-neuron-sdk, tools/neuron-sys-tools/neuron-ls.rst, its "neuron-ls -j" example and
 * "Field Definitions", as of Neuron 2.29, commit 539a73c5; unchanged at 81ce03ae,
 * August 2026): a JSON array, one object per Neuron device,
 *
 *   neuron_device              int      the device's logical id
 *   nc_count                   int      NeuronCores in the device, as the runtime counts
 *                                       them: on trn2 with logical_neuroncore_config 2,
 *                                       4 (logical) of its 8 physical cores
 *   logical_neuroncore_config  int      trn2 and later only
 *   memory_size                int      device memory, bytes (103079215104 on trn2)
 *   connected_to               [int]    ids of the devices linked to it; null on a
 *                                       one-device instance
 *   bdf                        string   PCI bus/device/function ("cc:00.0" in the guide,
 *                                       "0000:00:1e.0" in output quoted from a trn1)
 *   cpu_affinity, numa_node    string
 *   neuroncore_ids             [int]
 *   neuron_processes           [{pid, command, neuron_runtime_version}]
 *
 * The guide's text output starts with instance-type and instance-id lines; output
 * quoted from trn2.3xlarge instances by third parties carries them in each object too
 * ("instance_type", "instance_id"), so they are read when present. Neither the driver
 * version nor the runtime library's version is in the format (a runtime version is
 * per process using a device; the installed packages are in tb_neuron_sdk.h).
 * Neuron 2.34 announces the end of --json-output in favour of a new format behind
 * --output-format json (with top-level instance fields), not yet documented: a
 * neuron-ls that refuses --json-output, like one that fails, times out or prints
 * anything else, leaves the sysfs facts (tb_platform.h) in place with the reason.
 *
 * ---- stand-ins (tests) ----
 *
 * The tests put stand-in neuron-ls and neuron-monitor scripts on PATH that print
 * fixture JSON. The fixtures carry a key no Neuron tool prints, TB_NEURON_STAND_IN_KEY
 * ("trnbench_stand_in", in each device object of neuron-ls's array and at the top of
 * each neuron-monitor report), whose value says where the fixture comes from. Output
 * carrying it is refused unless TRNBENCH_TEST=1, as the CUDA emulator and
 * TRNBENCH_TEST_PLATFORM are: the mark travels with the data itself, so no
 * environment variable lost between processes, nor a stand-in of another name or
 * place, gets a test's numbers into a user's results.
 *
 * Ownership: struct tb_neuron holds only fixed-size strings and numbers; it owns
 * nothing and needs no release. Not thread-safe (tb_proc_run).
 */
#ifndef TB_NEURON_H
#define TB_NEURON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tb_platform;

/* Where aws-neuronx-tools installs its programs. */
#define TB_NEURON_TOOLS_DIR "/opt/aws/neuron/bin"

/* The key that marks a test stand-in's output (see the header comment). */
#define TB_NEURON_STAND_IN_KEY "trnbench_stand_in"

/* How long neuron-ls may run before it is stopped (it answers in well under a second). */
#define TB_NEURON_LS_TIMEOUT_S 10.0

#define TB_NEURON_MAX_DEVICES 64 /* trn2.48xlarge has 16 */
#define TB_NEURON_MAX_LINKS   8  /* a trn2 device links to 4 */

struct tb_neuron_device {
    int index;                      /* neuron_device */
    int nc_count;                   /* NeuronCores as neuron-ls counts them (logical) */
    uint64_t memory_bytes;          /* memory_size; 0 when not given */
    int links[TB_NEURON_MAX_LINKS]; /* connected_to, in neuron-ls's order */
    int nlinks;                     /* entries in links */
    char bdf[32];                   /* PCI BDF as printed; "" when not given */
    int nprocesses;                 /* neuron_processes using it when neuron-ls ran */
    char runtime_version[32];       /* the first of them with a neuron_runtime_version */
};

struct tb_neuron {
    char source[16];        /* "neuron-ls", "sysfs" (the fallback) or "none" */
    char neuron_ls[512];    /* the neuron-ls that ran; "" when none did */
    char why[768];          /* why neuron-ls's list is not used; "" when it is */
    bool stand_in;          /* a test stand-in's output, accepted (TRNBENCH_TEST=1) */
    char instance_type[64]; /* from neuron-ls when it printed one, else "" */
    char instance_id[64];   /* likewise */
    int logical_nc_config;  /* logical_neuroncore_config; 0 when not given */
    int ndevices;           /* Neuron devices */
    int ncores;             /* NeuronCores: neuron-ls's nc_count summed (logical), or
                               the sysfs core_count summed (physical); 0 unknown */
    uint64_t memory_bytes;  /* device memory summed (neuron-ls only); 0 unknown */
    char device_name[64];   /* sysfs device_name of the lowest device ("Trainium2") */
    struct tb_neuron_device dev[TB_NEURON_MAX_DEVICES]; /* neuron-ls only, by index */
};

/* The first executable `name` ("neuron-ls", "neuron-monitor") on PATH, else in
 * TB_NEURON_TOOLS_DIR. Returns true with its path in buf, or false (buf ""). */
bool tb_neuron_tool_find(const char *name, char *buf, size_t len);

/* Whether a stand-in's output may be used: TRNBENCH_TEST=1 (trnbench's own tests). */
bool tb_neuron_stand_in_allowed(void);

/* The logical NeuronCores a device of p offers a process (one tensor-parallel rank or
 * one torch-xla process each): its physical cores (sysfs core_count) divided by the
 * logical NeuronCore configuration, NEURON_LOGICAL_NC_CONFIG when set to 1 or 2, else
 * the SDK's default, 2 on Trainium2 and Trainium3 and 1 before them. *lnc gets the
 * configuration. 0 when p has no Neuron device or no core count. */
struct tb_platform;
int tb_neuron_logical_per_device(const struct tb_platform *p, int *lnc);

/* The logical NeuronCore configuration (LNC: physical NeuronCores a logical one groups,
 * which sets how many NeuronCores a process and a tensor-parallel rank see) and where it
 * was read: neuron-ls states the current one ("logical_neuroncore_config" in each device
 * object of --json-output, and "logical-neuroncore-config:" in its text header, trn2 and
 * later: aws-neuron-sdk tools/neuron-sys-tools/neuron-ls.rst, commit 539a73c5, Neuron
 * 2.29, unchanged at 81ce03ae); without it the configuration is guessed as
 * tb_neuron_logical_per_device does. neuron-ls runs in trnbench's environment, so its
 * figure already reflects a NEURON_LOGICAL_NC_CONFIG set there. */
struct tb_neuron_lnc {
    int lnc;         /* 1 or 2; 0 when the machine shows no Neuron device */
    int per_device;  /* logical NeuronCores a device offers; 0 unknown */
    char source[32]; /* "neuron-ls", "NEURON_LOGICAL_NC_CONFIG", "default" or "none" */
    char how[320];   /* for notes: "LNC 2 as neuron-ls states it (logical_neuroncore_config)" */
};

/* The LNC of the machine p into out: n's logical_neuroncore_config when n (NULL: none)
 * is neuron-ls's list and states one, else the guess of tb_neuron_logical_per_device
 * (NEURON_LOGICAL_NC_CONFIG when 1 or 2, else the SDK's default for p's chip), with
 * where it came from. Always fills out; reads the environment, runs nothing. */
void tb_neuron_lnc_resolve(const struct tb_neuron *n, const struct tb_platform *p,
                           struct tb_neuron_lnc *out);

/* Why n Neuron devices described as `what` ("16 Trainium2 devices (128 NeuronCores)")
 * go unused by this run, with what to do, into buf: no SDK found (neither neuron-ls nor
 * sdk, the SDK's provenance line of tb_neuron_sdk_describe, "" or NULL when none: and
 * how to install it), or, with the SDK, that trnbench runs Neuron workloads only
 * through a server (`trnbench run --recipe vllm`, or `--endpoint`). */
void tb_neuron_unused_reason(const char *what, const char *sdk, char *buf, size_t len);

/* Parse neuron-ls --json-output's text (len bytes; it need not be NUL-terminated) into
 * n, which it clears first: source "neuron-ls", the devices sorted by index, their
 * sums, n->stand_in when any device object carries TB_NEURON_STAND_IN_KEY (whether to
 * accept that is the caller's decision). Returns 0, or -1 with the reason ("not
 * JSON: ...", "not a JSON array of devices", "device 3: no integer 'nc_count'") when
 * the text is not that format; never crashes on garbage or truncated text. */
int tb_neuron_ls_parse(struct tb_neuron *n, const char *json, size_t len, char *err, size_t errlen);

/* What the Neuron devices of the machine p describes are: neuron-ls's list when
 * neuron-ls runs and prints one within timeout_s (0: TB_NEURON_LS_TIMEOUT_S), else the
 * sysfs facts of p (source "sysfs", or "none" without devices) with n->why saying why
 * not neuron-ls: none found (on PATH or in TB_NEURON_TOOLS_DIR), it failed, timed out
 * (its process group is stopped), printed no device list, or listed no device.
 * neuron-ls runs for the real machine and for a simulated one (p->simulated: tests and
 * their stand-ins), never for a tree read with --root (it would describe this machine,
 * not the tree). Returns 0; -1 with the reason in err (also in n->why) when a stand-in's
 * output was refused outside tests (TRNBENCH_TEST=1 missing): n then holds the sysfs
 * facts. */
int tb_neuron_detect(struct tb_neuron *n, const struct tb_platform *p, double timeout_s, char *err,
                     size_t errlen);

/* One line for the devices: "16 Trainium2 devices, 64 NeuronCores (logical, LNC 2),
 * 1536 GiB device memory (neuron-ls)", "16 Trainium2 devices, 128 NeuronCores (sysfs)",
 * or "none". Always terminated. */
void tb_neuron_describe(const struct tb_neuron *n, char *buf, size_t len);

/* One device: "4 NeuronCores, 96 GiB, PCI cc:00.0, linked to 12 3 4 1, 1 process
 * (runtime 2.0.0)". */
void tb_neuron_device_describe(const struct tb_neuron_device *d, char *buf, size_t len);

/* Call fn(key, value, ctx) for `trnbench detect`: neuron_source ("neuron-ls (PATH)",
 * "sysfs" or "none"), neuron_ls_not_used (the reason, when it applies), neuron
 * (tb_neuron_describe), neuron_instance_type and neuron_lnc_config when
 * neuron-ls gave them, then neuron_device_<index> per device neuron-ls listed. */
void tb_neuron_each(const struct tb_neuron *n,
                    void (*fn)(const char *key, const char *value, void *ctx), void *ctx);

#endif
