/*
 * workloads/diffusion/kernels.h: small call-free scalar kernels the UNet (unet.c) and
 * the DiTs (dit.c) share. Static inline, no state. Not for use outside
 * workloads/diffusion/.
 */
#ifndef TB_DIFFUSION_KERNELS_H
#define TB_DIFFUSION_KERNELS_H

#include <stdint.h>
#include <string.h>

/* splitmix64's output function, a bijective mix of 64 bits (counter-based random
 * streams: element j of a tensor depends only on its key and j). */
static inline uint64_t tb_dk_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* e^x with x clamped to [-87, 88] (normal, finite results), relative error about 1e-7:
 * x = n ln2 + r with |r| <= ln2 / 2 (ln2 in two parts, Cody and Waite), e^r from its
 * Taylor series to degree 7, 2^n written into the exponent bits. No branches or libm
 * calls (expf may set errno), so the loops that use it vectorise. */
static inline float tb_dk_expf(float x)
{
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504f + 12582912.0f) - 12582912.0f; /* round(x / ln2) */
    float r = x - n * 0.693359375f + n * 2.12194440e-4f;
    float e = 1.0f / 5040;
    e = e * r + 1.0f / 720;
    e = e * r + 1.0f / 120;
    e = e * r + 1.0f / 24;
    e = e * r + 1.0f / 6;
    e = e * r + 0.5f;
    e = e * r + 1.0f;
    e = e * r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    return e * s;
}

#endif
