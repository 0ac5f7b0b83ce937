/* tests/fuzz/neuron_sdk.c: the Neuron SDK's versions read from a fake tree
 * (tb_neuron_sdk_detect): the input's parts, split at a line "@@", are dpkg's status
 * file, the METADATA of neuronx-cc and of torch-neuronx in a DLAMI environment, and a
 * system PKG-INFO of vllm-neuron, in that order (a part absent: the file absent). */
#include "fz.h"
#include "tb_neuron_sdk.h"

#include <limits.h>
#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VENV "root/opt/aws_neuronx_venv_pytorch_2_9/lib/python3.10/site-packages/"
static const char *const FILES[] = {
    "root/var/lib/dpkg/status",
    VENV "neuronx_cc-2.27.5334.0.dist-info/METADATA",
    VENV "torch_neuronx-2.9.0.2.15.32035.dist-info/METADATA",
    "root/usr/lib/python3/dist-packages/vllm_neuron.egg-info/PKG-INFO",
};
#define NFILES ((int)(sizeof FILES / sizeof FILES[0]))

static void each(const char *key, const char *value, void *ctx)
{
    (void)key;
    (void)value;
    (void)ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *part[NFILES];
    size_t len[NFILES];
    int n = fz_split(data, size, part, len, NFILES);
    struct tb_neuron_sdk s;
    char root[PATH_MAX], buf[2048];

    for (int i = 0; i < NFILES; i++) {
        if (i < n)
            fz_write(FILES[i], part[i], len[i]);
        else
            fz_remove(FILES[i]);
    }
    snprintf(root, sizeof root, "%s/root", fz_dir());
    tb_neuron_sdk_detect(&s, root, NULL, NULL);
    tb_neuron_sdk_describe(&s, buf, sizeof buf);
    tb_neuron_sdk_each(&s, each, NULL);
    return 0;
}
