/*
 * codec.h - host-side encoders for the task generator: float -> fp8_e4m3_fnuz and fp8_e4m3fn (OCP).
 * Decoding (and bf16 both ways) lives in kernels/mla_numeric.h, shared with the device code.
 */
#ifndef VS_CODEC_H
#define VS_CODEC_H

#include <stdint.h>

/**
 * Encode x as fp8_e4m3_fnuz (see kernels/mla_numeric.h): round to nearest, ties to even;
 * |x| >= 240 (and +-inf) saturates to 0x7F / 0xFF; NaN -> 0x80; a value that rounds to zero encodes
 * as +0 (0x00) whatever its sign, since the format has no negative zero.
 */
uint8_t vs_fp8_e4m3_fnuz_encode(float x);

/**
 * Encode x as OCP fp8_e4m3fn (kernels/mla_numeric.h; torch.float8_e4m3fn): round to nearest, ties to
 * even; |x| >= 448 (and +-inf) saturates to 0x7E / 0xFE (448, the largest finite: the generator
 * never asks for more, as the scales of FlashMLA's quantize_k_cache keep |x| <= 448); NaN -> 0x7F;
 * -0 and negative values that round to zero keep their sign (0x80).
 */
uint8_t vs_fp8_e4m3fn_encode(float x);

#endif /* VS_CODEC_H */
