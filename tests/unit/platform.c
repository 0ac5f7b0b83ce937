/* tests/unit/platform.c: machine detection on fake trees (a trn1.32xlarge, a
 * p5.48xlarge, a Graviton3, and trees the test builds), the refusals, and the real
 * machine this runs on. */
#include "tb_platform.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024], dir[1024], err[256];
    FILE *f;
    char *slash;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    slash = strrchr(dir, '/');
    *slash = '\0';
    if (tb_mkdir_p(dir, err, sizeof err) != 0)
        bail("%s", err);
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

struct keys {
    int n;
    char first[32];
    char neuron_devices[32];
    char blas[256];
    char accelerators[256];
};

static void collect(const char *key, const char *value, void *vctx)
{
    struct keys *k = vctx;
    if (k->n++ == 0)
        snprintf(k->first, sizeof k->first, "%s", key);
    if (strcmp(key, "neuron_devices") == 0)
        snprintf(k->neuron_devices, sizeof k->neuron_devices, "%s", value);
    if (strcmp(key, "blas") == 0)
        snprintf(k->blas, sizeof k->blas, "%s", value);
    if (strcmp(key, "accelerators") == 0)
        snprintf(k->accelerators, sizeof k->accelerators, "%s", value);
}

static void trn1(void)
{
    struct tb_platform p;
    struct keys k = {0, "", "", "", ""};
    char err[512], line[512];
    char *root = test_src_path("tests/data/platform_ec2");

    if (tb_platform_detect_root(&p, root, err, sizeof err) != 0)
        bail("%s", err);
    IS_STRING("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", p.cpu_model, "trn1: CPU model");
    IS_INT(128, p.cores_logical, "trn1: 128 logical CPUs from cpuinfo");
    IS_INT(64, p.cores_physical, "trn1: 64 physical cores");
    IS_INT(2, p.sockets, "trn1: 2 sockets");
    IS_INT(540622958592LL, (long long)p.mem_total_bytes, "trn1: MemTotal 527952108 kB");
    IS_INT(3, p.llc_level, "trn1: last level is L3");
    IS_INT(55296LL * 1024, (long long)p.llc_bytes, "trn1: L3 55296K");
    IS_STRING("sysfs", p.llc_source, "trn1: cache from sysfs");
    IS_STRING("ip-10-0-12-34", p.hostname, "trn1: hostname");
    IS_STRING("Linux 6.1.0-28-cloud-amd64", p.kernel, "trn1: kernel");
    IS_STRING("Amazon EC2", p.sys_vendor, "trn1: DMI vendor");
    IS_STRING("trn1.32xlarge", p.product_name, "trn1: DMI product");
    OK(p.ec2, "trn1: on EC2");
    IS_STRING("trn1.32xlarge", tb_platform_target(&p), "trn1: target is the instance type");
    IS_INT(16, p.neuron_devices, "trn1: 16 Neuron devices");
    IS_INT(32, p.neuron_cores, "trn1: 32 NeuronCores");
    IS_STRING("Trainium", p.neuron_name, "trn1: device name");
    IS_INT(0, p.nvidia_gpus, "trn1: no NVIDIA GPUs");
    tb_platform_describe(&p, line, sizeof line);
    IS_STRING("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz, 128 cores, 503.5 GiB", line,
              "trn1: one-line description");
    tb_platform_each(&p, collect, &k);
    IS_INT(23, k.n, "each: 23 facts");
    IS_STRING("16 Trainium devices (32 NeuronCores)", k.accelerators, "each: the accelerators");
    IS_STRING("target", k.first, "each: target first");
    IS_STRING("16", k.neuron_devices, "each: neuron_devices as text");
    free(root);
}

static void p5(void)
{
    struct tb_platform p;
    char err[512], line[512];
    char *root = test_src_path("tests/data/platform_p5");

    if (tb_platform_detect_root(&p, root, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(8, p.nvidia_gpus, "p5: 8 GPUs from /proc/driver/nvidia");
    IS_STRING("NVIDIA H100 80GB HBM3", p.gpu_model, "p5: GPU model");
    IS_STRING("p5.48xlarge", tb_platform_target(&p), "p5: target");
    IS_INT(0, p.neuron_devices, "p5: no Neuron devices");
    IS_STRING("", p.cpu_model, "p5: no cpuinfo, no CPU model");
    IS_INT(0, p.cores_logical, "p5: no cpuinfo, no cores (no sysconf for a fake root)");
    IS_INT(0, (long long)p.mem_total_bytes, "p5: no meminfo, no memory");
    IS_INT(0, (long long)p.llc_bytes, "p5: no cache nodes, no sysconf: unknown");
    tb_platform_describe(&p, line, sizeof line);
    IS_STRING("unknown CPU, 0 cores", line, "p5: description with unknowns");
    tb_platform_accelerators(&p, line, sizeof line);
    IS_STRING("8 NVIDIA H100 80GB HBM3 GPUs", line, "p5: the accelerators");
    free(root);
}

/* TRNBENCH_TEST_PLATFORM: a simulated trn2.48xlarge, only with TRNBENCH_TEST=1. */
static void simulated(void)
{
    struct tb_platform p;
    char err[512], line[256];
    char *root = test_src_path("tests/data/platform_trn2");

    setenv("TRNBENCH_TEST_PLATFORM", root, 1);
    unsetenv("TRNBENCH_TEST");
    IS_INT(-1, tb_platform_detect(&p, err, sizeof err), "simulated without TRNBENCH_TEST: refused");
    OK(strstr(err, "refused outside them") != NULL, "saying why: %s", err);
    OK(!p.simulated && strcmp(tb_platform_target(&p), "trn2.48xlarge") != 0,
       "and the real machine read instead");
    setenv("TRNBENCH_TEST", "1", 1);
    IS_INT(0, tb_platform_detect(&p, err, sizeof err), "with TRNBENCH_TEST=1: read");
    OK(p.simulated, "marked simulated");
    IS_STRING("trn2.48xlarge", tb_platform_target(&p), "trn2: target");
    IS_INT(16, p.neuron_devices, "trn2: 16 devices");
    IS_INT(128, p.neuron_cores, "trn2: 128 NeuronCores");
    tb_platform_accelerators(&p, line, sizeof line);
    IS_STRING("16 Trainium2 devices (128 NeuronCores)", line, "trn2: the accelerators");
    setenv("TRNBENCH_TEST_PLATFORM", "/nonexistent/trnbench-root", 1);
    IS_INT(-1, tb_platform_detect(&p, err, sizeof err), "a missing simulated root: -1");
    OK(strstr(err, "TRNBENCH_TEST_PLATFORM: cannot read root") != NULL, "%s", err);
    unsetenv("TRNBENCH_TEST_PLATFORM");
    unsetenv("TRNBENCH_TEST");
    free(root);
}

static void graviton(void)
{
    struct tb_platform p;
    char err[512], line[512];
    char *root = test_src_path("tests/data/platform_arm");

    if (tb_platform_detect_root(&p, root, err, sizeof err) != 0)
        bail("%s", err);
    IS_STRING("ARM Neoverse-V1", p.cpu_model, "arm: named from CPU part 0xd40");
    IS_INT(4, p.cores_logical, "arm: 4 processors");
    IS_INT(0, p.cores_physical, "arm: no core ids, physical cores unknown");
    IS_STRING("c7g.xlarge", tb_platform_target(&p), "arm: target");
    tb_platform_describe(&p, line, sizeof line);
    IS_STRING("ARM Neoverse-V1, 4 cores, 7.6 GiB", line, "arm: description");
    free(root);
}

/* physical ids of 2^63-1 and 2^44 (issue 19): the reader once keyed a core as
 * id * 2^20 + core id, a signed overflow, and 2^44's key wrapped onto socket 0's */
static void huge_ids(void)
{
    struct tb_platform p;
    char err[512];
    char *root = test_src_path("tests/data/platform_hugeid");

    if (tb_platform_detect_root(&p, root, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(4, p.cores_logical, "huge ids: 4 processors");
    IS_INT(0, p.cores_physical, "huge ids: physical cores unknown, not a wrapped count");
    IS_INT(0, p.sockets, "huge ids: sockets unknown");
    IS_STRING("Test CPU with absurd ids", p.cpu_model, "huge ids: the CPU still named");
    free(root);
}

static void built_trees(void)
{
    struct tb_platform p;
    char err[512];
    char *root = test_tmp_path("platform_built");

    /* NVIDIA by device nodes only; a Trn2-like Neuron tree under the virtual path; a
     * non-EC2 DMI vendor; cache sizes in M; an unknown Arm part */
    put(root, "dev/nvidia0", "");
    put(root, "dev/nvidia1", "");
    put(root, "dev/nvidiactl", "");
    put(root, "dev/nvidia-uvm", "");
    put(root, "sys/devices/virtual/neuron_device/neuron0/core_count", "8\n");
    put(root, "sys/devices/virtual/neuron_device/neuron1/core_count", "8\n");
    put(root, "sys/devices/virtual/neuron_device/neuron1/info/architecture/device_name",
        "second\n");
    put(root, "sys/devices/virtual/neuron_device/neuron0/info/architecture/device_name", "first\n");
    put(root, "sys/devices/virtual/dmi/id/sys_vendor", "Xen\n");
    put(root, "sys/devices/virtual/dmi/id/product_name", "HVM domU\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index0/level", "1\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index0/type", "Data\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index0/size", "32K\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index1/level", "3\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index1/type", "Unified\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index1/size", "32M\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index2/level", "4\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index2/type", "Instruction\n");
    put(root, "sys/devices/system/cpu/cpu0/cache/index2/size", "64M\n");
    put(root, "proc/cpuinfo",
        "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd99\n\n"
        "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd99\n");
    if (tb_platform_detect_root(&p, root, err, sizeof err) != 0)
        bail("%s", err);
    IS_INT(2, p.nvidia_gpus, "built: nvidia0 and nvidia1 count, nvidiactl does not");
    IS_STRING("", p.gpu_model, "built: no model without the driver's /proc files");
    IS_INT(2, p.neuron_devices, "built: Neuron devices from the virtual sysfs tree");
    IS_INT(16, p.neuron_cores, "built: 2 x 8 NeuronCores");
    IS_STRING("first", p.neuron_name, "built: name of the lowest-numbered device");
    OK(!p.ec2, "built: Xen is not EC2 Nitro");
    IS_STRING("host", tb_platform_target(&p), "built: target is host");
    IS_INT(3, p.llc_level, "built: the instruction cache is not the LLC");
    IS_INT(32LL << 20, (long long)p.llc_bytes, "built: 32M");
    IS_STRING("ARM implementer 0x41 part 0xd99", p.cpu_model, "built: an unknown Arm part");
    IS_INT(2, p.cores_logical, "built: 2 processors");
    free(root);
}

static void refusals(void)
{
    struct tb_platform p;
    char err[512];
    char *file = test_src_path("tests/data/platform_ec2/README");

    IS_INT(-1, tb_platform_detect_root(&p, "/nonexistent/trnbench-root", err, sizeof err),
           "a missing root is refused");
    IS_STRING("cannot read root '/nonexistent/trnbench-root': No such file or directory", err,
              "missing root: message");
    IS_INT(-1, tb_platform_detect_root(&p, file, err, sizeof err), "a file root is refused");
    OK(strstr(err, "is not a directory") != NULL, "file root: message: %s", err);
    free(file);
}

static void real_machine(void)
{
    struct tb_platform p;
    struct keys k = {0, "", "", "", ""};
    char err[512], line[512];

    IS_INT(0, tb_platform_detect(&p, err, sizeof err), "the real machine is detected");
    OK(p.cores_logical >= 1, "real: %d logical cores", p.cores_logical);
    OK(p.mem_total_bytes > 0, "real: %.1f GiB memory", (double)p.mem_total_bytes / 1073741824.0);
    OK(p.cpu_model[0] != '\0', "real: CPU model '%s'", p.cpu_model);
    OK(p.hostname[0] != '\0', "real: hostname '%s'", p.hostname);
    OK(strncmp(p.kernel, "Linux ", 6) == 0, "real: kernel '%s'", p.kernel);
    OK(strncmp(p.blas, "OpenBLAS ", 9) == 0 && strstr(p.blas, " thread") != NULL, "real: BLAS '%s'",
       p.blas);
    OK(strcmp(tb_platform_target(&p), "host") == 0 || p.ec2, "real: target '%s'",
       tb_platform_target(&p));
    tb_platform_describe(&p, line, sizeof line);
    OK(strstr(line, p.cpu_model) == line && strstr(line, " GiB") != NULL, "real: '%s'", line);
    tb_platform_each(&p, collect, &k);
    IS_STRING(p.blas, k.blas, "real: each passes the BLAS string");
    printf("# this machine: %s; target %s; LLC L%d %llu bytes (%s); %s\n", line,
           tb_platform_target(&p), p.llc_level, (unsigned long long)p.llc_bytes, p.llc_source,
           p.blas);
}

int main(void)
{
    plan_lazy();
    trn1();
    p5();
    graviton();
    huge_ids();
    built_trees();
    refusals();
    simulated();
    real_machine();
    return 0;
}
