/*
 * harness/platform/tb_platform.h: what machine this is, read from the files Linux exposes (no
 * network, no EC2 instance metadata service, no child processes):
 *
 *   CPU model, cores   /proc/cpuinfo ("model name"; ARM parts by "CPU part"),
 *                      sysconf(_SC_NPROCESSORS_ONLN) on the real machine
 *   memory             /proc/meminfo MemTotal
 *   last-level cache   /sys/devices/system/cpu/cpu0/cache/index<N>/{level,type,size},
 *                      else glibc's sysconf(_SC_LEVEL3_CACHE_SIZE) on the real machine
 *   host, kernel       /proc/sys/kernel/{hostname,ostype,osrelease}
 *   EC2                /sys/devices/virtual/dmi/id/{sys_vendor,product_name}: on Nitro
 *                      instances "Amazon EC2" and the instance type ("trn1.32xlarge")
 *   NVIDIA GPUs        /proc/driver/nvidia/gpus/<bus id>/information ("Model:"), else
 *                      the /dev/nvidia<N> nodes
 *   Neuron devices     /dev/neuron<N> and /sys/class/neuron_device/neuron<N>
 *                      (core_count, info/architecture/device_name), as the Neuron sysfs
 *                      user guide documents them
 *   BLAS               openblas_get_config() and openblas_get_num_threads()
 *
 * Every reader takes a root prefix so tests can point it at a fake tree (root "" or
 * NULL is the real machine). tb_platform_detect reads the tree named by
 * TRNBENCH_TEST_PLATFORM instead of the machine when TRNBENCH_TEST=1 is set too (the
 * shell tests simulate a trn2.48xlarge or a p5.48xlarge with it); without
 * TRNBENCH_TEST=1 the stand-in is refused, as the CUDA emulator is outside tests, and
 * the real machine is read. A simulated platform says so (p->simulated) wherever
 * it is described. A missing file leaves its field empty or 0: detection
 * never fails because one fact is unknown. The struct holds only fixed-size strings
 * and numbers; it owns nothing and needs no release.
 */
#ifndef TB_PLATFORM_H
#define TB_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tb_platform {
    char root[256];           /* prefix the readers used; "" for the real machine */
    char cpu_model[128];      /* "AMD EPYC"; "" when unknown */
    int cores_logical;        /* online logical CPUs */
    int cores_physical;       /* distinct (physical id, core id) pairs; 0 unknown */
    int sockets;              /* distinct physical ids; 0 unknown */
    uint64_t mem_total_bytes; /* MemTotal; 0 unknown */
    uint64_t llc_bytes;       /* last-level data or unified cache of cpu0; 0 unknown */
    int llc_level;            /* its level (3 for an L3); 0 unknown */
    char llc_source[16];      /* "sysfs", "sysconf" or "" */
    char hostname[256];       /* "" when unknown */
    char kernel[160];         /* "Linux 6.1.0-18-amd64" */
    char sys_vendor[128];     /* DMI sys_vendor, e.g. "Amazon EC2" */
    char product_name[128];   /* DMI product_name, e.g. "trn1.32xlarge" */
    bool ec2;                 /* sys_vendor is "Amazon EC2" */
    int nvidia_gpus;          /* NVIDIA devices seen */
    char gpu_model[128];      /* model of the first one (lowest bus id) */
    int neuron_devices;       /* Neuron devices seen */
    int neuron_cores;         /* NeuronCores: sum of core_count; 0 unknown */
    char neuron_name[64];     /* device_name of the lowest-numbered device */
    char blas[256];           /* "OpenBLAS 0.3.21 ... Zen MAX_THREADS=64, 2 threads" */
    bool simulated;           /* read from TRNBENCH_TEST_PLATFORM's tree (tests) */
};

/* Detect the machine this runs on. Returns 0 (unknown facts stay empty or 0), or -1
 * with the reason when TRNBENCH_TEST_PLATFORM is set outside a test (TRNBENCH_TEST=1
 * missing) or names no directory: p then describes the real machine. */
int tb_platform_detect(struct tb_platform *p, char *err, size_t errlen);

/* Same, reading every file under root (a fake tree for tests); root NULL or "" is the
 * real machine, and only then are sysconf, gethostname and uname used as fallbacks.
 * Returns -1 with a message when root is given but is not a directory. The BLAS field
 * always describes the library linked in. */
int tb_platform_detect_root(struct tb_platform *p, const char *root, char *err, size_t errlen);

/* The BLAS linked in: "OpenBLAS <config>, N threads". */
void tb_platform_blas(char *buf, size_t len);

/* One-line host description, "AMD EPYC, 2 cores, 23.4 GiB" (an unknown CPU is
 * "unknown CPU"; unknown memory is left out). Always terminated. */
void tb_platform_describe(const struct tb_platform *p, char *buf, size_t len);

/* The accelerators present, "16 Trainium2 devices (128 NeuronCores)" or "8 NVIDIA H100
 * 80GB HBM3 GPUs" (both, "; "-separated, on a machine with both); "" when none. */
void tb_platform_accelerators(const struct tb_platform *p, char *buf, size_t len);

/* The target name results use: the EC2 instance type when on EC2, else "host".
 * Points into p or at a constant. */
const char *tb_platform_target(const struct tb_platform *p);

/* Call fn(key, value, ctx) for every fact in a fixed order (target, host, cpu_model,
 * cores_logical, ...), values as text ("" when unknown), for `trnbench detect` and
 * for provenance records. */
void tb_platform_each(const struct tb_platform *p,
                      void (*fn)(const char *key, const char *value, void *ctx), void *ctx);

#endif
