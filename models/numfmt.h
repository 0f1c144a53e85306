/* Numbers as decimal text without printf: the encoders' hot path.
 *
 * Each function writes into a caller's array of at least the size named
 * beside it, returns the number of bytes written and writes no NUL. The
 * output is byte for byte what glibc's printf gives for the format named
 * beside each function, in the "C" numeric locale. */
#ifndef MODEL_NUMFMT_H
#define MODEL_NUMFMT_H

#include <stddef.h>
#include <stdint.h>

/* Longest outputs: "18446744073709551615", "-9223372036854775808" and
 * "-2.2250738585072014e-308". */
#define MODEL_NUMFMT_U64_MAX 20
#define MODEL_NUMFMT_I64_MAX 20
#define MODEL_NUMFMT_DOUBLE_MAX 24

/* "%llu" */
size_t model_numfmt_u64(char *out, uint64_t v);

/* "%lld" */
size_t model_numfmt_i64(char *out, int64_t v);

/* The first of "%.15g", "%.16g" and "%.17g" whose text strtod reads back as
 * v ("95.5", "100", "0.30000000000000004", "1e+21", "-0"). v must be finite:
 * for NaN and the infinities it writes nothing and returns 0. */
size_t model_numfmt_double(char *out, double v);

#endif
