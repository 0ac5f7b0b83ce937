/* harness/platform/tb_platform.c: see tb_platform.h. */
#include "tb_platform.h"

#include "tb_blas.h"
#include "tb_util.h"

#include <cblas.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* ---- small readers, all relative to a root prefix ---- */

/* root + rel into buf; -1 when it does not fit. rel starts with '/'. */
static int join(char *buf, size_t len, const char *root, const char *rel)
{
    int k = snprintf(buf, len, "%s%s", root, rel);
    return k < 0 || (size_t)k >= len ? -1 : 0;
}

static char *trim(char *s)
{
    size_t n;
    while (isspace((unsigned char)*s))
        s++;
    n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* First line of root+rel, trimmed, into out. Returns 0, or -1 (out = "") when the file
 * cannot be read. */
static int read_line(const char *root, const char *rel, char *out, size_t len)
{
    char path[1024], line[512];
    FILE *f = NULL;
    int rc = -1;

    out[0] = '\0';
    if (join(path, sizeof path, root, rel) != 0)
        goto out;
    f = fopen(path, "r");
    if (!f || !fgets(line, sizeof line, f))
        goto out;
    snprintf(out, len, "%s", trim(line));
    rc = 0;
out:
    if (f)
        fclose(f);
    return rc;
}

/* "1024K", "32M", "64" (bytes) as sysfs writes cache sizes; 0 when unparsable. */
static uint64_t parse_size(const char *s)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno || end == s)
        return 0;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        return (uint64_t)v << 10;
    case 'M':
        return (uint64_t)v << 20;
    case 'G':
        return (uint64_t)v << 30;
    case '\0':
        return (uint64_t)v;
    default:
        return 0;
    }
}

/* Whether name is prefix followed by one or more digits only; the number in *idx. */
static bool numbered(const char *name, const char *prefix, long *idx)
{
    size_t n = strlen(prefix);
    const char *d = name + n;

    if (strncmp(name, prefix, n) != 0 || !*d)
        return false;
    for (const char *c = d; *c; c++)
        if (!isdigit((unsigned char)*c))
            return false;
    *idx = strtol(d, NULL, 10);
    return true;
}

/* ---- CPU: /proc/cpuinfo ---- */

/* Arm Ltd. cores by their "CPU part" number (implementer 0x41), the ones AWS Graviton
 * uses; numbers from Linux arch/arm64/include/asm/cputype.h. */
static const struct {
    unsigned part;
    const char *name;
} arm_parts[] = {
    {0xd0c, "ARM Neoverse-N1"}, /* Graviton2 */
    {0xd40, "ARM Neoverse-V1"}, /* Graviton3 */
    {0xd4f, "ARM Neoverse-V2"}, /* Graviton4 */
};

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

static size_t count_distinct(long *v, size_t n)
{
    size_t k = 0;
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_long);
    for (size_t i = 0; i < n; i++)
        if (i == 0 || v[i] != v[i - 1])
            k++;
    return k;
}

static void read_cpuinfo(struct tb_platform *p, int *nproc)
{
    char path[1024], line[1024];
    FILE *f = NULL;
    long *cores = NULL, *socks = NULL; /* per processor: (physical id, core id), physical id */
    size_t n = 0, cap = 0;
    long pid = -1, cid = -1;
    bool all_ids = true;
    unsigned impl = 0, part = 0;

    *nproc = 0;
    if (join(path, sizeof path, p->root, "/proc/cpuinfo") != 0 || !(f = fopen(path, "r")))
        goto out;
    for (;;) {
        bool eof = !fgets(line, sizeof line, f);
        char *colon = eof ? NULL : strchr(line, ':');
        char *key, *val;

        /* a "processor" line (or the end) closes the previous processor's block */
        if (eof || (colon && strncmp(line, "processor", 9) == 0)) {
            if (*nproc > 0) {
                if (pid < 0 || cid < 0) {
                    all_ids = false;
                } else {
                    if (n == cap) {
                        size_t ncap = cap ? 2 * cap : 64;
                        long *c2 = realloc(cores, ncap * sizeof *c2);
                        long *s2 = c2 ? realloc(socks, ncap * sizeof *s2) : NULL;
                        if (c2)
                            cores = c2;
                        if (!c2 || !s2) {
                            all_ids = false;
                            break;
                        }
                        socks = s2;
                        cap = ncap;
                    }
                    /* (physical id, core id) as one key: both in [0, INT_MAX] */
                    cores[n] = (long)(((unsigned long)pid << 32) | (unsigned long)cid);
                    socks[n] = pid;
                    n++;
                }
            }
            if (eof)
                break;
            (*nproc)++;
            pid = cid = -1;
            continue;
        }
        if (!colon)
            continue;
        *colon = '\0';
        key = trim(line);
        val = trim(colon + 1);
        if (strcmp(key, "model name") == 0 && !p->cpu_model[0])
            snprintf(p->cpu_model, sizeof p->cpu_model, "%s", val);
        /* ids are ints in the kernel; one out of [0, INT_MAX] (or not a number) leaves
         * the topology unknown rather than overflowing the pair's key below */
        else if (strcmp(key, "physical id") == 0 && tb_parse_long(val, 0, INT_MAX, &pid) != 0)
            pid = cid = LONG_MIN;
        else if (strcmp(key, "core id") == 0 && tb_parse_long(val, 0, INT_MAX, &cid) != 0)
            pid = cid = LONG_MIN;
        else if (strcmp(key, "CPU implementer") == 0 && !impl)
            impl = (unsigned)strtoul(val, NULL, 0);
        else if (strcmp(key, "CPU part") == 0 && !part)
            part = (unsigned)strtoul(val, NULL, 0);
    }
    if (all_ids && n > 0) {
        p->cores_physical = (int)count_distinct(cores, n);
        p->sockets = (int)count_distinct(socks, n);
    }
    if (!p->cpu_model[0] && impl) {
        for (size_t i = 0; i < sizeof arm_parts / sizeof arm_parts[0]; i++)
            if (impl == 0x41 && part == arm_parts[i].part)
                snprintf(p->cpu_model, sizeof p->cpu_model, "%s", arm_parts[i].name);
        if (!p->cpu_model[0])
            snprintf(p->cpu_model, sizeof p->cpu_model, "ARM implementer 0x%02x part 0x%03x", impl,
                     part);
    }
out:
    if (f)
        fclose(f);
    free(cores);
    free(socks);
}

/* ---- memory and caches ---- */

static void read_meminfo(struct tb_platform *p)
{
    char path[1024], line[256];
    FILE *f;

    if (join(path, sizeof path, p->root, "/proc/meminfo") != 0 || !(f = fopen(path, "r")))
        return;
    while (fgets(line, sizeof line, f)) {
        unsigned long long kb;
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) {
            p->mem_total_bytes = (uint64_t)kb * 1024;
            break;
        }
    }
    fclose(f);
}

static void read_llc(struct tb_platform *p, bool real)
{
    for (int i = 0; i < 32; i++) {
        char rel[128], level[32], type[64], size[64];
        long lvl;
        uint64_t bytes;

        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        if (read_line(p->root, rel, level, sizeof level) != 0)
            break;
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        read_line(p->root, rel, type, sizeof type);
        snprintf(rel, sizeof rel, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        read_line(p->root, rel, size, sizeof size);
        if (strcmp(type, "Instruction") == 0 || tb_parse_long(level, 1, 9, &lvl) != 0)
            continue;
        bytes = parse_size(size);
        if (bytes && (lvl > p->llc_level || (lvl == p->llc_level && bytes > p->llc_bytes))) {
            p->llc_level = (int)lvl;
            p->llc_bytes = bytes;
            snprintf(p->llc_source, sizeof p->llc_source, "sysfs");
        }
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    /* glibc answers from CPUID; some virtual machines expose no cache nodes in sysfs */
    if (real && !p->llc_bytes) {
        long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        if (l3 > 0 || l2 > 0) {
            p->llc_level = l3 > 0 ? 3 : 2;
            p->llc_bytes = (uint64_t)(l3 > 0 ? l3 : l2);
            snprintf(p->llc_source, sizeof p->llc_source, "sysconf");
        }
    }
#else
    (void)real;
#endif
}

/* ---- accelerators ---- */

/* Number of root+dir entries named prefix<digits>. */
static int count_numbered(const char *root, const char *dir, const char *prefix)
{
    char path[1024];
    DIR *d;
    struct dirent *e;
    int n = 0;
    long idx;

    if (join(path, sizeof path, root, dir) != 0 || !(d = opendir(path)))
        return 0;
    while ((e = readdir(d)))
        if (numbered(e->d_name, prefix, &idx))
            n++;
    closedir(d);
    return n;
}

static void read_nvidia(struct tb_platform *p)
{
    char path[1024], first[256] = "";
    DIR *d;
    struct dirent *e;

    if (join(path, sizeof path, p->root, "/proc/driver/nvidia/gpus") == 0 && (d = opendir(path))) {
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            p->nvidia_gpus++;
            /* the lowest bus id names the model, whatever order readdir gives */
            if (!first[0] || strcmp(e->d_name, first) < 0)
                snprintf(first, sizeof first, "%s", e->d_name);
        }
        closedir(d);
    }
    if (first[0]) {
        char rel[512], line[512];
        FILE *f = NULL;
        snprintf(rel, sizeof rel, "/proc/driver/nvidia/gpus/%s/information", first);
        if (join(path, sizeof path, p->root, rel) == 0 && (f = fopen(path, "r"))) {
            while (fgets(line, sizeof line, f)) {
                if (strncmp(line, "Model:", 6) == 0) {
                    snprintf(p->gpu_model, sizeof p->gpu_model, "%s", trim(line + 6));
                    break;
                }
            }
            fclose(f);
        }
    }
    if (p->nvidia_gpus == 0)
        p->nvidia_gpus = count_numbered(p->root, "/dev", "nvidia");
}

static void read_neuron(struct tb_platform *p)
{
    static const char *const dirs[] = {"/sys/class/neuron_device",
                                       "/sys/devices/virtual/neuron_device"};
    int ndev = count_numbered(p->root, "/dev", "neuron");

    for (size_t k = 0; k < sizeof dirs / sizeof dirs[0]; k++) {
        char path[1024];
        DIR *d;
        struct dirent *e;
        long idx, lowest = -1;
        int nsys = 0;

        if (join(path, sizeof path, p->root, dirs[k]) != 0 || !(d = opendir(path)))
            continue;
        while ((e = readdir(d))) {
            char rel[512], val[64];
            long cores;
            if (!numbered(e->d_name, "neuron", &idx))
                continue;
            nsys++;
            snprintf(rel, sizeof rel, "%s/%s/core_count", dirs[k], e->d_name);
            if (read_line(p->root, rel, val, sizeof val) == 0 &&
                tb_parse_long(val, 0, 1024, &cores) == 0)
                p->neuron_cores += (int)cores;
            if (lowest < 0 || idx < lowest)
                lowest = idx;
        }
        closedir(d);
        if (lowest >= 0) {
            char rel[512];
            snprintf(rel, sizeof rel, "%s/neuron%ld/info/architecture/device_name", dirs[k],
                     lowest);
            read_line(p->root, rel, p->neuron_name, sizeof p->neuron_name);
        }
        if (nsys > ndev)
            ndev = nsys;
        if (nsys > 0)
            break; /* the class links and the virtual tree are the same devices */
    }
    p->neuron_devices = ndev;
}

/* ---- public API ---- */

void tb_platform_blas(char *buf, size_t len)
{
    const char *cfg = openblas_get_config();
    int threads = openblas_get_num_threads();

    const char *note = tb_blas_note();

    if (!cfg)
        cfg = "";
    snprintf(buf, len, "%s%s, %d thread%s%s%s", strncmp(cfg, "OpenBLAS", 8) == 0 ? "" : "OpenBLAS ",
             cfg, threads, threads == 1 ? "" : "s", *note ? "; " : "", note);
}

int tb_platform_detect_root(struct tb_platform *p, const char *root, char *err, size_t errlen)
{
    bool real = !root || !root[0];
    char ostype[72], release[80];
    struct stat st;
    int nproc = 0;

    memset(p, 0, sizeof *p);
    if (!real) {
        if (stat(root, &st) != 0)
            return tb_err(err, errlen, "cannot read root '%s': %s", root, strerror(errno));
        if (!S_ISDIR(st.st_mode))
            return tb_err(err, errlen, "root '%s' is not a directory", root);
        /* "/" is the real machine too, without the prefix */
        if (strcmp(root, "/") != 0)
            snprintf(p->root, sizeof p->root, "%s", root);
        real = !p->root[0];
    }

    read_cpuinfo(p, &nproc);
    p->cores_logical = nproc;
    if (real) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        if (n > 0)
            p->cores_logical = (int)n;
    }
    read_meminfo(p);
    read_llc(p, real);

    read_line(p->root, "/proc/sys/kernel/hostname", p->hostname, sizeof p->hostname);
    read_line(p->root, "/proc/sys/kernel/ostype", ostype, sizeof ostype);
    read_line(p->root, "/proc/sys/kernel/osrelease", release, sizeof release);
    if (real && !p->hostname[0] && gethostname(p->hostname, sizeof p->hostname) != 0)
        p->hostname[0] = '\0';
    p->hostname[sizeof p->hostname - 1] = '\0';
    if (real && (!ostype[0] || !release[0])) {
        struct utsname u;
        if (uname(&u) == 0) {
            snprintf(ostype, sizeof ostype, "%s", u.sysname);
            snprintf(release, sizeof release, "%s", u.release);
        }
    }
    snprintf(p->kernel, sizeof p->kernel, "%s%s%s", ostype, ostype[0] && release[0] ? " " : "",
             release);

    read_line(p->root, "/sys/devices/virtual/dmi/id/sys_vendor", p->sys_vendor,
              sizeof p->sys_vendor);
    read_line(p->root, "/sys/devices/virtual/dmi/id/product_name", p->product_name,
              sizeof p->product_name);
    p->ec2 = strcmp(p->sys_vendor, "Amazon EC2") == 0;

    read_nvidia(p);
    read_neuron(p);
    tb_platform_blas(p->blas, sizeof p->blas);
    return 0;
}

int tb_platform_detect(struct tb_platform *p, char *err, size_t errlen)
{
    const char *sim = getenv("TRNBENCH_TEST_PLATFORM"), *test = getenv("TRNBENCH_TEST");
    char e[512];

    if (!sim || !*sim)
        return tb_platform_detect_root(p, NULL, err, errlen);
    if (!test || strcmp(test, "1") != 0) {
        tb_platform_detect_root(p, NULL, e, sizeof e);
        return tb_err(err, errlen,
                      "TRNBENCH_TEST_PLATFORM='%.300s' simulates a machine for trnbench's own "
                      "tests and is refused outside them (no TRNBENCH_TEST=1): unset it",
                      sim);
    }
    if (tb_platform_detect_root(p, sim, e, sizeof e) != 0) {
        tb_platform_detect_root(p, NULL, err, errlen);
        return tb_err(err, errlen, "TRNBENCH_TEST_PLATFORM: %s", e);
    }
    p->simulated = true;
    return 0;
}

void tb_platform_accelerators(const struct tb_platform *p, char *buf, size_t len)
{
    char neuron[160] = "", gpus[200] = "";

    if (p->neuron_devices > 0) {
        char cores[48] = "";
        if (p->neuron_cores > 0)
            snprintf(cores, sizeof cores, " (%d NeuronCores)", p->neuron_cores);
        snprintf(neuron, sizeof neuron, "%d %s device%s%s", p->neuron_devices,
                 p->neuron_name[0] ? p->neuron_name : "Neuron", p->neuron_devices == 1 ? "" : "s",
                 cores);
    }
    if (p->nvidia_gpus > 0)
        snprintf(gpus, sizeof gpus, "%d %s GPU%s", p->nvidia_gpus,
                 p->gpu_model[0] ? p->gpu_model : "NVIDIA", p->nvidia_gpus == 1 ? "" : "s");
    snprintf(buf, len, "%s%s%s", neuron, neuron[0] && gpus[0] ? "; " : "", gpus);
}

void tb_platform_describe(const struct tb_platform *p, char *buf, size_t len)
{
    const char *cpu = p->cpu_model[0] ? p->cpu_model : "unknown CPU";

    if (p->mem_total_bytes)
        snprintf(buf, len, "%s, %d core%s, %.1f GiB", cpu, p->cores_logical,
                 p->cores_logical == 1 ? "" : "s",
                 (double)p->mem_total_bytes / (1024.0 * 1024.0 * 1024.0));
    else
        snprintf(buf, len, "%s, %d core%s", cpu, p->cores_logical,
                 p->cores_logical == 1 ? "" : "s");
}

const char *tb_platform_target(const struct tb_platform *p)
{
    return p->ec2 && p->product_name[0] ? p->product_name : "host";
}

void tb_platform_each(const struct tb_platform *p,
                      void (*fn)(const char *key, const char *value, void *ctx), void *ctx)
{
    char v[512];

#define TB_EMIT_INT(key, x)                                                                        \
    do {                                                                                           \
        snprintf(v, sizeof v, "%d", (x));                                                          \
        fn(key, v, ctx);                                                                           \
    } while (0)

    fn("target", tb_platform_target(p), ctx);
    tb_platform_describe(p, v, sizeof v);
    fn("host", v, ctx);
    fn("cpu_model", p->cpu_model, ctx);
    TB_EMIT_INT("cores_logical", p->cores_logical);
    TB_EMIT_INT("cores_physical", p->cores_physical);
    TB_EMIT_INT("sockets", p->sockets);
    snprintf(v, sizeof v, "%" PRIu64, p->mem_total_bytes);
    fn("mem_total_bytes", v, ctx);
    snprintf(v, sizeof v, "%" PRIu64, p->llc_bytes);
    fn("llc_bytes", v, ctx);
    TB_EMIT_INT("llc_level", p->llc_level);
    fn("llc_source", p->llc_source, ctx);
    fn("hostname", p->hostname, ctx);
    fn("kernel", p->kernel, ctx);
    fn("ec2", p->ec2 ? "yes" : "no", ctx);
    fn("dmi_sys_vendor", p->sys_vendor, ctx);
    fn("dmi_product_name", p->product_name, ctx);
    TB_EMIT_INT("nvidia_gpus", p->nvidia_gpus);
    fn("gpu_model", p->gpu_model, ctx);
    TB_EMIT_INT("neuron_devices", p->neuron_devices);
    TB_EMIT_INT("neuron_cores", p->neuron_cores);
    fn("neuron_device_name", p->neuron_name, ctx);
    tb_platform_accelerators(p, v, sizeof v);
    fn("accelerators", v, ctx);
    fn("blas", p->blas, ctx);
    fn("simulated", p->simulated ? "yes (TRNBENCH_TEST_PLATFORM: tests only)" : "no", ctx);
#undef TB_EMIT_INT
}
