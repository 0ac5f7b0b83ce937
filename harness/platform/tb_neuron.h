/*
 * harness/platform/tb_neuron.h: the AWS Neuron SDK on this machine, as far as trnbench
 * needs it to say why Neuron devices it detected (tb_platform.h) are or are not used.
 *
 * The SDK's tools (neuron-ls, neuron-top, neuron-monitor) come in the aws-neuronx-tools
 * package, which installs them in /opt/aws/neuron/bin; the Neuron DLAMI and users put
 * that folder on PATH. Neither a missing SDK nor a missing device is an error: the
 * callers record the reason and run what they can.
 */
#ifndef TB_NEURON_H
#define TB_NEURON_H

#include <stdbool.h>
#include <stddef.h>

/* Where aws-neuronx-tools installs its programs. */
#define TB_NEURON_TOOLS_DIR "/opt/aws/neuron/bin"

/* The neuron-ls program: the first executable "neuron-ls" on PATH, else in
 * TB_NEURON_TOOLS_DIR. Returns true with its path in buf, or false (buf ""). */
bool tb_neuron_tools_find(char *buf, size_t len);

/* Why n Neuron devices described as `what` ("16 Trainium2 devices (128 NeuronCores)")
 * go unused by this run, with what to do, into buf: no SDK found (and how to install
 * it), or, with the SDK, that trnbench runs Neuron workloads only through a server it
 * measures (`trnbench run --endpoint`). */
void tb_neuron_unused_reason(const char *what, char *buf, size_t len);

#endif
