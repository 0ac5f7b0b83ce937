/* harness/platform/tb_neuron.c: see tb_neuron.h. */
#include "tb_neuron.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether dir/name is an executable regular file; its path into buf. */
static bool executable_in(const char *dir, size_t dlen, const char *name, char *buf, size_t len)
{
    struct stat st;
    if (dlen == 0) /* an empty PATH entry is the current folder: not looked in */
        return false;
    if ((size_t)snprintf(buf, len, "%.*s/%s", (int)dlen, dir, name) >= len)
        return false;
    return stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0;
}

bool tb_neuron_tools_find(char *buf, size_t len)
{
    const char *path = getenv("PATH");
    const char *dir = TB_NEURON_TOOLS_DIR;

    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (executable_in(path, n, "neuron-ls", buf, len))
            return true;
        path += n + (path[n] == ':');
    }
    if (executable_in(dir, strlen(dir), "neuron-ls", buf, len))
        return true;
    if (len)
        buf[0] = '\0';
    return false;
}

void tb_neuron_unused_reason(const char *what, char *buf, size_t len)
{
    char tool[1024];

    if (!tb_neuron_tools_find(tool, sizeof tool))
        snprintf(buf, len,
                 "%s: no Neuron SDK found (no neuron-ls on PATH or in " TB_NEURON_TOOLS_DIR
                 "); use the Neuron DLAMI's virtual environment, or install aws-neuronx-dkms, "
                 "aws-neuronx-runtime-lib and aws-neuronx-tools from AWS's apt repository "
                 "(https://apt.repos.neuron.amazonaws.com)",
                 what);
    else
        snprintf(buf, len,
                 "%s: Neuron SDK found (%.400s), but trnbench runs no workload on Neuron "
                 "devices itself yet; measure a Neuron server (vLLM with vllm-neuron, NxD "
                 "Inference) with trnbench run --endpoint",
                 what, tool);
}
