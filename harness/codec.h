/*
 * codec.h - host-side encoders for the task generator: float -> fp8_e4m3_fnuz.
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

#endif /* VS_CODEC_H */
