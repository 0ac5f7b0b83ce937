/* tests/fuzz/darch.c: diffusion model files (tb_darch_load), then the parameter and
 * FLOP counts the model derives from what was read. */
#include "fz.h"
#include "tb_darch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct tb_darch a;
    char err[1024];
    const char *path = fz_write("x.model", data, size);
    if (fz_note(tb_darch_load(&a, path, err, sizeof err), err) == 0) {
        volatile double sink = tb_darch_params_denoiser(&a) + tb_darch_params_vae_decoder(&a) +
                               tb_darch_params_encoders(&a) +
                               tb_dflops_image(&a, 1, a.resolution, a.default_steps);
        (void)sink;
    }
    return 0;
}
