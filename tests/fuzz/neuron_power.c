/* tests/fuzz/neuron_power.c: the Neuron devices' sysfs power percentages
 * (tb_neuron_monitor_read_power) on a fake tree: the input's parts, split at a line
 * "@@", are neuron0's and neuron1's stats/power/utilization, in that order (a part
 * absent: the file absent). */
#include "fz.h"
#include "tb_neuron_monitor.h"

#include <limits.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEV "root/sys/devices/virtual/neuron_device/"
static const char *const FILES[] = {
    DEV "neuron0/stats/power/utilization",
    DEV "neuron1/stats/power/utilization",
};
#define NFILES ((int)(sizeof FILES / sizeof FILES[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tb_neuron_monitor_summary s;
    const uint8_t *part[NFILES];
    size_t len[NFILES];
    int n = fz_split(data, size, part, len, NFILES);
    char root[PATH_MAX], buf[2048];

    for (int i = 0; i < NFILES; i++) {
        if (i < n)
            fz_write(FILES[i], part[i], len[i]);
        else
            fz_remove(FILES[i]);
    }
    snprintf(root, sizeof root, "%s/root", fz_dir());
    tb_neuron_monitor_summary_init(&s);
    tb_neuron_monitor_read_power(&s, root, 0);
    tb_neuron_monitor_read_power(&s, root, 1767225600);
    tb_neuron_monitor_describe(&s, buf, sizeof buf);
    return 0;
}
