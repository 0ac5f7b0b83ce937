/* tests/fuzz/nccom_test.c: nccom-test's table on its stdout (tb_nccom_parse) or its JSON
 * report (tb_nccom_parse_json), then what `trnbench collectives --backend neuron` does
 * with it: nccl-tests' table printed and the rows appended to a scratch results.csv.
 * Byte 0 picks the operation (mod 5) and the ranks (1 + byte 0 / 8: 1..32); byte 1's low
 * bit says whether --check was given, its second bit that the rest is a JSON report; the
 * rest is the output, not NUL-terminated. */
#include "fz.h"
#include "tb_coll.h"
#include "tb_nccom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *null;
    struct tb_coll_result r;
    struct tb_coll_prov p = {0};
    enum tb_coll_op op;
    char err[1024], *text;
    struct tb_nccom_format f;
    bool checked, json;
    int nranks;

    if (size < 2)
        return 0;
    if (!null && !(null = fopen("/dev/null", "w")))
        fz_die("/dev/null", "cannot open");
    op = (enum tb_coll_op)(data[0] % TB_COLL_NOPS);
    nranks = 1 + data[0] / 8;
    checked = data[1] & 1;
    json = data[1] & 2;
    size -= 2;
    text = malloc(size ? size : 1); /* exact size: a read past it is caught */
    if (!text)
        fz_die("malloc", "out of memory");
    if (size)
        memcpy(text, data + 2, size);
    if (fz_note(json ? tb_nccom_parse_json("report", text, size, op, nranks, checked, &r, &f, err,
                                           sizeof err)
                     : tb_nccom_parse("nccom-test", text, size, op, nranks, checked, &r, &f, err,
                                      sizeof err),
                err) == 0) {
        char path[4200];
        long n;
        snprintf(path, sizeof path, "%s/results.csv", fz_dir());
        tb_coll_print(null, &r);
        p.executor = "neuron";
        p.target = "trn2.48xlarge";
        p.host = "fuzz";
        p.device = "Neuron cores";
        p.software = "nccom-test";
        p.link = "neuronlink";
        p.link_how = "fuzz";
        p.nodes = 1;
        p.ranks_per_node = nranks;
        p.nranks = nranks;
        p.iters = 20;
        p.warmup = 5;
        /* the rows written, then read back as a rerun would: every placement written
         * must be found recorded (else a rerun would measure and write it twice) */
        n = tb_coll_rows(path, &r, &p, err, sizeof err);
        if (fz_note(n < 0 ? -1 : 0, err) == 0 && n > 0) {
            if (tb_coll_mark_recorded(path, &r, &p, err, sizeof err) < 0)
                fz_die("reading back the rows just written", err);
            for (size_t k = 0; k < r.nsizes; k++)
                if (r.sizes[k].ran[0] && r.sizes[k].wrong[0] <= 0 && !r.sizes[k].recorded[0])
                    fz_die("a row written", "not found recorded when read back");
        }
        fz_remove("results.csv");
        tb_coll_result_release(&r);
    }
    free(text);
    return 0;
}
