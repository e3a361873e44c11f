/*
 * quants.h - reference (de)quantization of ggml's block formats.
 *
 * GGMLC_QUANT_TO_FLOAT(q4_0) names the row dequantizer of a type and
 * GGMLC_QUANT_FROM_FLOAT(q4_0) its reference quantizer, for the type table
 * in types.c.  Until core/quants.c implements a format, both are NULL.
 */
#ifndef GGMLC_QUANTS_H
#define GGMLC_QUANTS_H

#include "ggml.h"

#define GGMLC_QUANT_TO_FLOAT(name)   NULL
#define GGMLC_QUANT_FROM_FLOAT(name) NULL

#endif /* GGMLC_QUANTS_H */
