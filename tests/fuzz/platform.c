/* tests/fuzz/platform.c: the platform readers (tb_platform_detect_root) on a fake tree
 * made from the input: its parts, split at "\n@@\n", become /proc/cpuinfo,
 * /proc/meminfo, cpu0's first cache level, type and size, an NVIDIA GPU's information
 * file, a Neuron device's core_count and device_name, the DMI product name, in that
 * order (a part absent: the file absent). */
#include "fz.h"
#include "tb_platform.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const FILES[] = {
    "proc/cpuinfo",
    "proc/meminfo",
    "sys/devices/system/cpu/cpu0/cache/index0/level",
    "sys/devices/system/cpu/cpu0/cache/index0/type",
    "sys/devices/system/cpu/cpu0/cache/index0/size",
    "proc/driver/nvidia/gpus/0000:53:00.0/information",
    "sys/class/neuron_device/neuron0/core_count",
    "sys/class/neuron_device/neuron0/info/architecture/device_name",
    "sys/devices/virtual/dmi/id/product_name",
};
#define NFILES ((int)(sizeof FILES / sizeof FILES[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[NFILES];
    size_t len[NFILES];
    int n = fz_split(data, size, part, len, NFILES);
    struct tb_platform p;
    char err[1024], root[4096], buf[2048];

    for (int i = 0; i < NFILES; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "root/%s", FILES[i]);
        if (i < n)
            fz_write(rel, part[i], len[i]);
        else
            fz_remove(rel);
    }
    snprintf(root, sizeof root, "%s/root", fz_dir());
    if (fz_note(tb_platform_detect_root(&p, root, err, sizeof err), err) == 0) {
        tb_platform_describe(&p, buf, sizeof buf);
        tb_platform_accelerators(&p, buf, sizeof buf);
        tb_platform_target(&p);
    }
    return 0;
}
