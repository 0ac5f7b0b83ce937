/* tests/fuzz/import.c: a team's own measurements (tb_import_sniff, tb_import_file): the
 * first byte picks the format (vllm, nxdi, llmperf, llmperf-upstream: its value mod 4),
 * the rest is the JSON file, read for llama-3.1-8b on p5.48xlarge (NxDI's shape: batch 4, 1024 in,
 * 256 out). */
#include "fz.h"
#include "tb_arch.h"
#include "tb_import.h"

#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct tb_arch arch;
    static int loaded;
    struct tb_import im;
    struct tb_import_opts o;
    enum tb_import_format f;
    char err[1024];
    const char *path;

    if (!loaded) {
        if (tb_arch_find(&arch, "llama-3.1-8b", err, sizeof err) != 0)
            fz_die("llama-3.1-8b", err);
        loaded = 1;
    }
    if (size < 1)
        return 0;
    path = fz_write("report.json", data + 1, size - 1);
    tb_import_sniff(path, &f, err, sizeof err);
    memset(&o, 0, sizeof o);
    o.arch = &arch;
    o.target = "p5.48xlarge";
    o.batch = 4; /* the NxDI seed's shape: 4 x (1024 + 256) tokens a call */
    o.seq_in = 1024;
    o.seq_out = 256;
    o.now = "2026-01-01T00:00:00Z";
    memset(&im, 0, sizeof im);
    if (fz_note(tb_import_file(&im, path, (enum tb_import_format)(data[0] % TB_IMPORT_NFORMATS), &o,
                               err, sizeof err),
                err) == 0)
        tb_import_release(&im);
    return 0;
}
