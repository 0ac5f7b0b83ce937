/* tests/fuzz/neuron_monitor.c: neuron-monitor's JSON reports, one per line
 * (tb_neuron_monitor_add_line on each line, not NUL-terminated), then the summary. */
#include "fz.h"
#include "tb_neuron_monitor.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tb_neuron_monitor_summary s;
    char buf[2048];
    size_t at = 0;

    tb_neuron_monitor_summary_init(&s);
    while (at < size) {
        const uint8_t *nl = memchr(data + at, '\n', size - at);
        size_t len = nl ? (size_t)(nl - (data + at)) : size - at;
        char *line = malloc(len ? len : 1); /* exact size: a read past it is caught */
        if (!line)
            fz_die("malloc", "out of memory");
        if (len)
            memcpy(line, data + at, len);
        tb_neuron_monitor_add_line(&s, line, len);
        free(line);
        at += len + 1;
    }
    tb_neuron_monitor_finish(&s);
    tb_neuron_monitor_describe(&s, buf, sizeof buf);
    return 0;
}
