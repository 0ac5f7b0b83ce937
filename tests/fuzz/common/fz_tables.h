/*
 * tests/fuzz/common/fz_tables.h: the price tables and the model's tables, one fuzzed
 * at a time beside the shipped others (tests/fuzz/pricing_*.c, efficiency.c, ...).
 */
#ifndef FZ_TABLES_H
#define FZ_TABLES_H

#include <stddef.h>
#include <stdint.h>

/* tb_pricing_load_files with the input as table (chips.csv, instances.csv,
 * prices.csv or regions.csv) and the shipped other three; when it loads, every
 * instance's best price and target price in every purchase model are looked up. */
void fz_pricing_table(const char *table, const uint8_t *data, size_t size);

/* The input as the model's optional table file (datasets.csv or mlperf_limits.csv,
 * read by tb_model_datasets_load; storage.csv or compile.csv, read at prediction time),
 * the shipped rest; for storage and compile, predictions of a few serving and training
 * scenarios that read them. */
void fz_model_table(const char *table, const uint8_t *data, size_t size);

#endif
