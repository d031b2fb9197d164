/*
 * flashmla_sparse_unit.cu - one of FlashMLA's sm_90a sparse decode instantiations as a translation
 * unit of the flashmla.sparse_decode plugin (flashmla_sparse_plugin.cu). tools/gpu/build_flashmla.sh
 * --sparse compiles this file once per instantiation, with -DFMLA_UNIT=v32_persistent_h64 (or
 * v32_persistent_h128, model1_persistent_h64, model1_persistent_h128): it includes FlashMLA's own
 * FLASHMLA_DIR/csrc/sm90/decode/sparse_fp8/instantiations/FMLA_UNIT.cu unchanged.
 *
 * Why a wrapper and not FlashMLA's file itself: nvcc names the internal-linkage entities of a
 * translation unit (the device code's _INTERNAL_... symbols) after the unit's first external
 * definition, and after its process id when it has none, which FlashMLA's instantiation files
 * (one explicit template instantiation each) do not. Compiled directly, two builds of the same
 * sources differed in every such name (2026-12-05); the anchor below makes the names, and the
 * stripped plugin, the same from one build to the next.
 */
#ifndef FMLA_UNIT
#error "FMLA_UNIT (the instantiation's file name without .cu) is set by build_flashmla.sh --sparse"
#endif /* FMLA_UNIT */

#define FMLA_CAT_(a, b) a##b
#define FMLA_CAT(a, b) FMLA_CAT_(a, b)
#define FMLA_STR_(x) #x
#define FMLA_STR(x) FMLA_STR_(x)

/* The unit's first external definition (hidden in the plugin: -fvisibility=hidden). */
extern "C" void FMLA_CAT(flashmla_sparse_unit_, FMLA_UNIT)(void)
{
}

#include FMLA_STR(sm90/decode/sparse_fp8/instantiations/FMLA_UNIT.cu)
