/*
 * harness/platform/tb_neuron_sdk.h: which Neuron SDK is installed, for the provenance of
 * every Neuron row ("Neuron SDK: neuronx-cc 2.27.5334.0, torch-neuronx 2.9.0.2.15.32035,
 * runtime 2.34.10.0, ...") and `trnbench detect`. Read from the packages' own metadata
 * files, never by running Python or dpkg:
 *
 *   Python packages  neuronx-cc, torch-neuronx, neuronx-distributed,
 *                    neuronx-distributed-inference, vllm-neuron: the "Version:" header of
 *                    <site-packages>/<name>-<version>.dist-info/METADATA (the Python
 *                    core metadata that pip writes), or of an .egg-info's PKG-INFO. A
 *                    folder counts when its name, normalised (lower case, runs of "-",
 *                    "_" and "." as one "_"), starts with the package's and its
 *                    metadata's "Name:" is the package.
 *   system packages  aws-neuronx-runtime-lib (the runtime), aws-neuronx-collectives,
 *                    aws-neuronx-tools, aws-neuronx-dkms (the driver): the "Version:" of
 *                    the package's stanza in dpkg's status file, /var/lib/dpkg/status,
 *                    when its "Status:" ends in "installed". RPM systems (Amazon Linux)
 *                    are not read: those components are "not found" there.
 *
 * Which Python environment. Versions from several environments in one line would
 * describe no environment that exists, so every Python package is read from one: the
 * first of these that holds any of the five,
 *
 *   1. $VIRTUAL_ENV (the virtual environment active where trnbench runs, whose Python
 *      a Neuron run's child processes would start): its lib/python3.X/site-packages;
 *   2. the first python3 on PATH: its virtual environment (a pyvenv.cfg beside its
 *      bin/) or else its installation prefix: lib/python3.X/site-packages,
 *      local/lib/python3.X/dist-packages and lib/python3/dist-packages (Debian's
 *      system Python and pip's installs beside it);
 *   3. the Neuron DLAMI's environments, /opt/aws_neuronx_venv_NAME/lib/python3.X/
 *      site-packages, in descending version order of NAME (pytorch_2_10, then
 *      pytorch_2_9, then pytorch_2_8), so one that was not activated still counts.
 *
 * (python3.X: every minor version found.) User site-packages (~/.local) and conda
 * environments are not looked in. Every file is read under a root prefix (fixture
 * trees in tests; "" or NULL is this machine), and the environment variables come in
 * as arguments, so a test controls all inputs.
 *
 * Ownership: struct tb_neuron_sdk holds only fixed-size strings; it owns nothing.
 */
#ifndef TB_NEURON_SDK_H
#define TB_NEURON_SDK_H

#include <stdbool.h>
#include <stddef.h>

enum tb_neuron_sdk_part {
    TB_NEURON_SDK_NEURONX_CC,    /* the compiler (Python package neuronx-cc) */
    TB_NEURON_SDK_TORCH_NEURONX, /* PyTorch on Neuron */
    TB_NEURON_SDK_NXD,           /* neuronx-distributed */
    TB_NEURON_SDK_NXDI,          /* neuronx-distributed-inference */
    TB_NEURON_SDK_VLLM_NEURON,   /* the vLLM plugin */
    TB_NEURON_SDK_RUNTIME,       /* aws-neuronx-runtime-lib (dpkg) */
    TB_NEURON_SDK_COLLECTIVES,   /* aws-neuronx-collectives (dpkg) */
    TB_NEURON_SDK_TOOLS,         /* aws-neuronx-tools (dpkg) */
    TB_NEURON_SDK_DKMS,          /* aws-neuronx-dkms, the driver (dpkg) */
    TB_NEURON_SDK_NPARTS
};

struct tb_neuron_sdk {
    char version[TB_NEURON_SDK_NPARTS][64]; /* as the metadata says; "" not found */
    char python_env[512];     /* the site-packages folder read (without the root); "" none */
    char python_env_from[32]; /* "VIRTUAL_ENV", "python3 on PATH" or "a Neuron DLAMI
                                 environment" */
    int python_envs;          /* folders looked in that hold any of the five (the first is
                                 python_env; more than one: the choice may not be the user's) */
    bool dpkg_read;           /* dpkg's status file was there and read */
    int found;                /* parts with a version */
    char why[512];            /* when found is 0: where it looked */
};

/* The package's name ("neuronx-cc", "aws-neuronx-runtime-lib") and the short label of
 * the one-line description ("neuronx-cc", "runtime", "driver"). Static strings. */
const char *tb_neuron_sdk_package(enum tb_neuron_sdk_part part);
const char *tb_neuron_sdk_label(enum tb_neuron_sdk_part part);

/* Fill s from the files under root (NULL or "": this machine). virtual_env and path are
 * the values of $VIRTUAL_ENV and $PATH to use (NULL: none); pass getenv()'s. Returns
 * s->found. Never fails: an unreadable file is a part not found. */
int tb_neuron_sdk_detect(struct tb_neuron_sdk *s, const char *root, const char *virtual_env,
                         const char *path);

/* The provenance line: "Neuron SDK: neuronx-cc 2.27.5334.0, torch-neuronx ..., runtime
 * 2.34.10.0-..., driver 2.30.2.0-..." with the parts found, in the enum's order; ""
 * when none was (s->why says where it looked). Always terminated. */
void tb_neuron_sdk_describe(const struct tb_neuron_sdk *s, char *buf, size_t len);

/* Call fn(key, value, ctx) for `trnbench detect`: neuron_sdk (the line, or "not found:
 * " and why), neuron_python_env, then one key per part (sdk_neuronx_cc,
 * sdk_torch_neuronx, sdk_nxd, sdk_nxd_inference, sdk_vllm_neuron, sdk_runtime,
 * sdk_collectives, sdk_tools, sdk_driver): "<version> (<package>)" or "not found
 * (<package>)". */
void tb_neuron_sdk_each(const struct tb_neuron_sdk *s,
                        void (*fn)(const char *key, const char *value, void *ctx), void *ctx);

#endif
