/*
 * tests/fuzz/common/fz.h: what the libFuzzer harnesses of tests/fuzz/ share (make fuzz,
 * tests/fuzz/README.md): a scratch folder per process for the parsers that read paths,
 * the fuzz input written there as a file, split into parts, or copied as a C string.
 *
 * Every harness frees what it allocates per input (leak detection is on); what an
 * LLVMFuzzerInitialize loads once (the shipped price tables, the model) stays reachable
 * in a static and is no leak. Nothing here exits on bad input: only on a broken setup
 * (no scratch folder, a shipped table that does not load), which is the harness's bug.
 */
#ifndef FZ_H
#define FZ_H

#include <stddef.h>
#include <stdint.h>

/* The scratch folder of this process: $TMPDIR/trnbench-fuzz.XXXXXX (made on the first
 * call, removed at exit). */
const char *fz_dir(void);

/* Write size bytes of data to fz_dir()/rel (its folders made) and return the path, in
 * a static buffer of which there are 8, used in turn. Aborts when it cannot write. */
const char *fz_write(const char *rel, const uint8_t *data, size_t size);

/* Remove fz_dir()/rel if it exists (a file). */
void fz_remove(const char *rel);

/* A NUL-terminated malloc'ed copy of size bytes (the caller frees it). */
char *fz_strndup(const uint8_t *data, size_t size);

/* Split data at each FZ_SEP ("\n@@\n") into at most max parts (the last takes the
 * rest): starts[i], lens[i]. Returns the number of parts (at least 1). */
#define FZ_SEP "\n@@\n"
int fz_split(const uint8_t *data, size_t size, const uint8_t **starts, size_t *lens, int max);

/* Print err on stderr when FZ_DEBUG is set (to see why a seed is refused); returns rc. */
int fz_note(int rc, const char *err);

/* Abort with a message: the harness's own setup failed (never for bad input). */
void fz_die(const char *what, const char *why);

/* The shipped price tables and the performance model over them, loaded once (from the
 * data folder: TRNBENCH_DATADIR, which make fuzz sets to the source tree). */
struct tb_pricing;
struct tb_model;
const struct tb_pricing *fz_pricing(void);
struct tb_model *fz_model(void);

#endif
