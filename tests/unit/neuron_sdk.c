/* tests/unit/neuron_sdk.c: the Neuron SDK's versions from its packages' metadata
 * (tb_neuron_sdk) on the fixture tree tests/data/neuron/sdk (dist-info METADATA,
 * egg-info, dpkg's status; tests/data/neuron/README.md) and on trees the test builds:
 * which Python environment counts ($VIRTUAL_ENV, python3 on PATH, the DLAMI's in
 * version order), the one-line description, and nothing found. */
#include "tb_neuron_sdk.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024], dir[1024], err[256];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = '\0';
    if (tb_mkdir_p(dir, err, sizeof err) != 0)
        bail("%s", err);
    f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        bail("cannot write %s", path);
}

#define V(part) s.version[TB_NEURON_SDK_##part]
#define META    "Metadata-Version: 2.1\nName: neuronx-cc\nVersion: %s\n\n"

static void fixture(void)
{
    struct tb_neuron_sdk s;
    char *root = test_src_path("tests/data/neuron/sdk"), line[1024];

    /* no environment variables: the DLAMI's environments, in descending name order */
    IS_INT(6, tb_neuron_sdk_detect(&s, root, NULL, NULL), "DLAMI only: 6 parts found");
    IS_STRING("/opt/aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0/lib/python3.10/"
              "site-packages",
              s.python_env, "  the first DLAMI environment by name");
    IS_STRING("a Neuron DLAMI environment", s.python_env_from, "  said so");
    IS_INT(3, s.python_envs, "  of 3 with Neuron packages");
    IS_STRING("2.26.6360.0", V(NEURONX_CC), "  neuronx-cc from that one only");
    IS_STRING("0.3.5591", V(NXDI), "  NxD Inference (its folder in another case)");
    IS_STRING("0.24.0.1.1.0", V(VLLM_NEURON), "  vllm-neuron");
    IS_STRING("", V(TORCH_NEURONX), "  no torch-neuronx there");
    IS_STRING("", V(NXD), "  nor neuronx-distributed");
    IS_STRING("2.23.112.0-9b5179492", V(RUNTIME), "  dpkg: the runtime");
    IS_STRING("2.23.135.0-3e70920f2", V(COLLECTIVES), "  dpkg: collectives");
    IS_STRING("2.19.64.0", V(DKMS), "  dpkg: the driver");
    IS_STRING("", V(TOOLS), "  dpkg: tools removed (config-files): not installed");
    OK(s.dpkg_read, "  dpkg's status read");

    /* $VIRTUAL_ENV first */
    IS_INT(6, tb_neuron_sdk_detect(&s, root, "/opt/aws_neuronx_venv_pytorch_2_9", "/usr/bin:/bin"),
           "VIRTUAL_ENV: 6 parts");
    IS_STRING("/opt/aws_neuronx_venv_pytorch_2_9/lib/python3.10/site-packages", s.python_env,
              "  the active environment");
    IS_STRING("VIRTUAL_ENV", s.python_env_from, "  said so");
    IS_STRING("2.27.5334.0", V(NEURONX_CC), "  neuronx-cc (not neuronx-cc-stubs 9.9)");
    IS_STRING("2.9.0.2.15.32035", V(TORCH_NEURONX), "  torch-neuronx");
    IS_STRING("0.12.12111", V(NXD), "  neuronx-distributed");
    IS_STRING("", V(VLLM_NEURON), "  no vllm-neuron in it");
    tb_neuron_sdk_describe(&s, line, sizeof line);
    IS_STRING("Neuron SDK: neuronx-cc 2.27.5334.0, torch-neuronx 2.9.0.2.15.32035, "
              "neuronx-distributed 0.12.12111, runtime 2.23.112.0-9b5179492, collectives "
              "2.23.135.0-3e70920f2, driver 2.19.64.0",
              line, "  the provenance line");

    IS_INT(4, tb_neuron_sdk_detect(&s, root, "/opt/aws_neuronx_venv_pytorch_2_8", NULL),
           "an older VIRTUAL_ENV");
    IS_STRING("2.25.3371.0", V(NEURONX_CC), "  its neuronx-cc");

    /* python3 on PATH: Debian's system Python, its dist-packages */
    IS_INT(6, tb_neuron_sdk_detect(&s, root, NULL, "relative/bin:/no/such/bin:/usr/bin"),
           "python3 on PATH: 6 parts");
    IS_STRING("/usr/lib/python3/dist-packages", s.python_env, "  its dist-packages");
    IS_STRING("python3 on PATH", s.python_env_from, "  said so");
    IS_INT(4, s.python_envs, "  and 3 DLAMI environments besides");
    IS_STRING("2.24.8799.0", V(NEURONX_CC), "  neuronx-cc (dist-info)");
    IS_STRING("0.12.12111", V(NXD), "  neuronx-distributed (an egg-info file)");
    IS_STRING("0.24.0.1.1.0", V(VLLM_NEURON), "  vllm-neuron (an egg-info folder)");
    IS_STRING("", V(TORCH_NEURONX), "  a dist-info without METADATA: not found");

    /* VIRTUAL_ENV naming an environment with nothing of Neuron's: the next one counts */
    IS_INT(6, tb_neuron_sdk_detect(&s, root, "/no/such/venv", "/usr/bin"),
           "an empty VIRTUAL_ENV: the next in order");
    IS_STRING("/usr/lib/python3/dist-packages", s.python_env, "  python3's");
    free(root);
}

static void built_trees(void)
{
    struct tb_neuron_sdk s;
    char *root = test_tmp_path("neuron-sdk"), *ec2 = test_src_path("tests/data/platform_ec2");
    char line[1024];
    char text[256];

    /* version order of the DLAMI's names: pytorch_2_10 before pytorch_2_9 */
    snprintf(text, sizeof text, META, "2.9-env");
    put(root,
        "opt/aws_neuronx_venv_pytorch_2_9/lib/python3.10/site-packages/"
        "neuronx_cc-1.dist-info/METADATA",
        text);
    snprintf(text, sizeof text, META, "2.10-env");
    put(root,
        "opt/aws_neuronx_venv_pytorch_2_10/lib/python3.12/site-packages/"
        "neuronx_cc-1.dist-info/METADATA",
        text);
    IS_INT(1, tb_neuron_sdk_detect(&s, root, NULL, NULL), "built tree: one part");
    IS_STRING("2.10-env", V(NEURONX_CC), "  pytorch_2_10 counts before pytorch_2_9");
    OK(!s.dpkg_read, "  no dpkg status file");

    /* python3 of a virtual environment: only that environment's packages */
    snprintf(text, sizeof text, META, "venv");
    put(root, "home/u/venv/bin/python3", "");
    put(root, "home/u/venv/pyvenv.cfg", "home = /usr/bin\n");
    put(root, "home/u/venv/lib/python3.12/site-packages/neuronx_cc-1.dist-info/METADATA", text);
    IS_INT(1, tb_neuron_sdk_detect(&s, root, NULL, "/home/u/venv/bin/"),
           "python3 of a virtual environment");
    IS_STRING("/home/u/venv/lib/python3.12/site-packages", s.python_env, "  its site-packages");
    IS_STRING("venv", V(NEURONX_CC), "  its neuronx-cc");

    /* nothing at all */
    IS_INT(0, tb_neuron_sdk_detect(&s, ec2, "/opt/venv", "/usr/bin"), "no SDK: nothing found");
    tb_neuron_sdk_describe(&s, line, sizeof line);
    IS_STRING("", line, "  no provenance line");
    IS_STRING("no neuronx-cc, torch-neuronx, neuronx-distributed(-inference) or vllm-neuron in "
              "$VIRTUAL_ENV, python3's environment or /opt/aws_neuronx_venv_*, and no "
              "/var/lib/dpkg/status (not a Debian system)",
              s.why, "  and where it looked");
    IS_STRING("", s.python_env, "  no environment");
    IS_STRING("", tb_neuron_sdk_package(TB_NEURON_SDK_NPARTS), "an out-of-range part: no name");
    IS_STRING("aws-neuronx-dkms", tb_neuron_sdk_package(TB_NEURON_SDK_DKMS), "package names");
    IS_STRING("driver", tb_neuron_sdk_label(TB_NEURON_SDK_DKMS), "labels");
    free(root);
    free(ec2);
}

int main(void)
{
    plan_lazy();
    fixture();
    built_trees();
    return 0;
}
