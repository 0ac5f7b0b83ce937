/* tests/fuzz/train.c: the training script's report on its stdout (tb_train_parse),
 * then the loss check. */
#include "fz.h"
#include "tb_torch.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_train_report t;
    char err[1024];
    char *text = malloc(size ? size : 1); /* exact size: a read past it is caught */
    if (!text)
        fz_die("malloc", "out of memory");
    if (size)
        memcpy(text, data, size);
    if (fz_note(tb_train_parse(&t, "train output", text, size, err, sizeof err), err) ==
        TB_TRAIN_OK) {
        double before, after;
        tb_train_loss_fell(&t, &before, &after);
    }
    tb_train_report_release(&t);
    free(text);
    return 0;
}
