/* harness/cost/tb_pricing.c: see tb_pricing.h. The CSV tables keep the strings; the row
 * structs hold parsed numbers and pointers into them. */
#include "tb_pricing.h"

#include "tb_range.h"
#include "tb_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- field checks: each names file, line and field ---- */

struct rowctx {
    const struct tb_csv_table *t;
    size_t row;
    char *err;
    size_t errlen;
};

static const char *fld(const struct rowctx *c, const char *name)
{
    return tb_csv_field(c->t, c->row, name);
}

static int bad(const struct rowctx *c, const char *name, const char *what)
{
    return tb_err(c->err, c->errlen, "%s: line %ld: field '%s': %s: '%s'", c->t->path,
                  c->t->lines[c->row], name, what, fld(c, name));
}

static int need_text(const struct rowctx *c, const char *name, const char **out)
{
    const char *s = fld(c, name);
    if (!*s)
        return tb_err(c->err, c->errlen, "%s: line %ld: field '%s': empty", c->t->path,
                      c->t->lines[c->row], name);
    *out = s;
    return 0;
}

/* The numeric fields of the three tables: their ranges as data (README.md, "Input
 * ranges"). The bounds hold today's largest figures with room for a decade of growth
 * (a chip of 1e6 TFLOPS, an instance of 65536 chips) and refuse the absurd. */
const struct tb_range TB_CHIPS_RANGES[] = {
    {"year", 1990, 2100, true, "year of release"},
    {"bf16_dense_tflops", 0, 1e6, false, "TFLOPS"},
    {"fp8_dense_tflops", 0, 1e6, false, "TFLOPS"},
    {"fp32_tflops", 0, 1e6, false, "TFLOPS"},
    {"tf32_tflops", 0, 1e6, false, "TFLOPS"},
    {"fp4_dense_tflops", 0, 1e6, false, "TFLOPS"},
    {"hbm_gib", 0, 1e5, false, "GiB"},
    {"hbm_tbps", 0, 1000, false, "TB/s"},
    {"sram_mib", 0, 1e6, false, "MiB"},
    {"cores", 1, 1000000, true, "cores per chip"},
    {"interconnect_gbps", 0, 1e6, false, "GB/s per chip"},
    {"tdp_w", 0, 1e5, false, "W"},
    {NULL, 0, 0, false, NULL},
};
const struct tb_range TB_INSTANCES_RANGES[] = {
    {"accel_count", 1, 65536, true, "accelerator chips"},
    {"vcpu", 1, 1000000, true, "vCPUs"},
    {"mem_gib", 0, 1e7, false, "GiB"},
    {"accel_mem_gib", 0, 1e7, false, "GiB"},
    {"network_gbps", 0, 1e6, false, "Gbit/s"},
    {NULL, 0, 0, false, NULL},
};
const struct tb_range TB_PRICES_RANGES[] = {
    {"usd_per_hour", 0, 1e6, false, "USD per instance-hour"},
    {NULL, 0, 0, false, NULL},
};

/* The field name of table parsed through its range; empty gives NAN when allowed. */
static int num(const struct rowctx *c, const struct tb_range *table, const char *name,
               bool allow_empty, double *out)
{
    const char *s = fld(c, name);
    char why[256];
    if (!*s) {
        if (!allow_empty)
            return tb_err(c->err, c->errlen, "%s: line %ld: field '%s': empty", c->t->path,
                          c->t->lines[c->row], name);
        *out = NAN;
        return 0;
    }
    if (tb_range_field(table, name, s, out, why, sizeof why) != 0)
        return tb_err(c->err, c->errlen, "%s: line %ld: %s", c->t->path, c->t->lines[c->row], why);
    return 0;
}

/* A whole number of table's field name; empty gives 0 when allowed. */
static int whole(const struct rowctx *c, const struct tb_range *table, const char *name,
                 bool allow_empty, long *out)
{
    double v = 0;
    if (num(c, table, name, allow_empty, &v) != 0)
        return -1;
    *out = isnan(v) ? 0 : (long)v;
    return 0;
}

/* "" or YYYY, YYYY-MM, YYYY-MM-DD. */
static int iso_date(const struct rowctx *c, const char *name, const char **out)
{
    const char *s = fld(c, name);
    size_t n = strlen(s);
    static const char shape[] = "dddd-dd-dd";
    bool okay = n == 0 || n == 4 || n == 7 || n == 10;
    for (size_t i = 0; okay && i < n; i++)
        okay = shape[i] == 'd' ? isdigit((unsigned char)s[i]) != 0 : s[i] == '-';
    if (okay && n >= 7)
        okay = (s[5] == '0' && s[6] >= '1') || (s[5] == '1' && s[6] <= '2');
    if (!okay)
        return bad(c, name, "not a date (YYYY, YYYY-MM or YYYY-MM-DD)");
    *out = s;
    return 0;
}

static int one_of(const struct rowctx *c, const char *name, const char *const *allowed,
                  const char **out)
{
    const char *s = fld(c, name);
    for (; *allowed; allowed++)
        if (!strcmp(s, *allowed)) {
            *out = s;
            return 0;
        }
    return bad(c, name, "not a known value (see pricing/README.md)");
}

/* ---- the three tables ---- */

static const char *const CHIP_COLS[] = {"chip",
                                        "name",
                                        "vendor",
                                        "year",
                                        "bf16_dense_tflops",
                                        "fp8_dense_tflops",
                                        "fp32_tflops",
                                        "tf32_tflops",
                                        "fp4_dense_tflops",
                                        "hbm_gib",
                                        "hbm_tbps",
                                        "sram_mib",
                                        "cores",
                                        "core_type",
                                        "interconnect_gbps",
                                        "tdp_w",
                                        "as_of",
                                        "source",
                                        "notes",
                                        NULL};
static const char *const INSTANCE_COLS[] = {
    "instance",      "kind",         "accelerator", "chip",   "accel_count", "vcpu", "mem_gib",
    "accel_mem_gib", "network_gbps", "as_of",       "source", "notes",       NULL};
static const char *const PRICE_COLS[] = {"instance", "region", "purchase",   "usd_per_hour",
                                         "status",   "as_of",  "as_of_text", "source",
                                         "notes",    NULL};

static const char *const REGION_COLS[] = {"region", "name", "partition", "source", NULL};

static const char *const KINDS[] = {"instance", "ultraserver", NULL};
static const char *const PURCHASES[] = {"on-demand",
                                        "spot",
                                        "capacity-block",
                                        "reserved-1y",
                                        "reserved-3y",
                                        "reserved",
                                        "savings-plan-1y",
                                        "savings-plan-3y",
                                        "any",
                                        "unspecified",
                                        NULL};
static const char *const STATUSES[] = {"listed", "secondary", "none", "suspect", "rejected", NULL};

static int load_chips(struct tb_pricing *p, char *err, size_t errlen)
{
    const struct tb_csv_table *t = &p->chips_csv;
    if (tb_csv_require(t, CHIP_COLS, err, errlen) != 0)
        return -1;
    p->chips = tb_alloc_array(t->nrows ? t->nrows : 1, sizeof(*p->chips));
    if (!p->chips)
        return tb_err(err, errlen, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        struct rowctx c = {t, r, err, errlen};
        struct tb_chip *x = &p->chips[r];
        memset(x, 0, sizeof *x);
        x->line = t->lines[r];
        x->name = fld(&c, "name");
        x->vendor = fld(&c, "vendor");
        x->core_type = fld(&c, "core_type");
        x->source = fld(&c, "source");
        x->notes = fld(&c, "notes");
        if (need_text(&c, "chip", &x->chip) || whole(&c, TB_CHIPS_RANGES, "year", true, &x->year) ||
            num(&c, TB_CHIPS_RANGES, "bf16_dense_tflops", true, &x->bf16_dense_tflops) ||
            num(&c, TB_CHIPS_RANGES, "fp8_dense_tflops", true, &x->fp8_dense_tflops) ||
            num(&c, TB_CHIPS_RANGES, "fp32_tflops", true, &x->fp32_tflops) ||
            num(&c, TB_CHIPS_RANGES, "tf32_tflops", true, &x->tf32_tflops) ||
            num(&c, TB_CHIPS_RANGES, "fp4_dense_tflops", true, &x->fp4_dense_tflops) ||
            num(&c, TB_CHIPS_RANGES, "hbm_gib", true, &x->hbm_gib) ||
            num(&c, TB_CHIPS_RANGES, "hbm_tbps", true, &x->hbm_tbps) ||
            num(&c, TB_CHIPS_RANGES, "sram_mib", true, &x->sram_mib) ||
            whole(&c, TB_CHIPS_RANGES, "cores", true, &x->cores) ||
            num(&c, TB_CHIPS_RANGES, "interconnect_gbps", true, &x->interconnect_gbps) ||
            num(&c, TB_CHIPS_RANGES, "tdp_w", true, &x->tdp_w) ||
            iso_date(&c, "as_of", &x->as_of) || need_text(&c, "source", &x->source))
            return -1;
        for (size_t k = 0; k < r; k++)
            if (!strcmp(p->chips[k].chip, x->chip))
                return bad(&c, "chip", "repeated key");
        p->nchips++;
    }
    return 0;
}

static int load_instances(struct tb_pricing *p, char *err, size_t errlen)
{
    const struct tb_csv_table *t = &p->instances_csv;
    if (tb_csv_require(t, INSTANCE_COLS, err, errlen) != 0)
        return -1;
    p->instances = tb_alloc_array(t->nrows ? t->nrows : 1, sizeof(*p->instances));
    if (!p->instances)
        return tb_err(err, errlen, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        struct rowctx c = {t, r, err, errlen};
        struct tb_instance *x = &p->instances[r];
        memset(x, 0, sizeof *x);
        x->line = t->lines[r];
        x->accelerator = fld(&c, "accelerator");
        x->notes = fld(&c, "notes");
        if (need_text(&c, "instance", &x->instance) || one_of(&c, "kind", KINDS, &x->kind) ||
            need_text(&c, "chip", &x->chip) ||
            whole(&c, TB_INSTANCES_RANGES, "accel_count", false, &x->accel_count) ||
            whole(&c, TB_INSTANCES_RANGES, "vcpu", true, &x->vcpu) ||
            num(&c, TB_INSTANCES_RANGES, "mem_gib", true, &x->mem_gib) ||
            num(&c, TB_INSTANCES_RANGES, "accel_mem_gib", true, &x->accel_mem_gib) ||
            num(&c, TB_INSTANCES_RANGES, "network_gbps", true, &x->network_gbps) ||
            iso_date(&c, "as_of", &x->as_of) || need_text(&c, "source", &x->source))
            return -1;
        if (!tb_pricing_chip(p, x->chip))
            return bad(&c, "chip", "not in chips.csv");
        for (size_t k = 0; k < r; k++)
            if (!strcmp(p->instances[k].instance, x->instance))
                return bad(&c, "instance", "repeated key");
        p->ninstances++;
    }
    return 0;
}

static int load_regions(struct tb_pricing *p, char *err, size_t errlen)
{
    const struct tb_csv_table *t = &p->regions_csv;
    if (tb_csv_require(t, REGION_COLS, err, errlen) != 0)
        return -1;
    p->regions = tb_alloc_array(t->nrows ? t->nrows : 1, sizeof(*p->regions));
    if (!p->regions)
        return tb_err(err, errlen, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        struct rowctx c = {t, r, err, errlen};
        struct tb_region *x = &p->regions[r];
        memset(x, 0, sizeof *x);
        x->line = t->lines[r];
        x->name = fld(&c, "name");
        if (need_text(&c, "region", &x->region) || need_text(&c, "partition", &x->partition) ||
            need_text(&c, "source", &x->source))
            return -1;
        for (const char *q = x->region; *q; q++)
            if (!islower((unsigned char)*q) && !isdigit((unsigned char)*q) && *q != '-')
                return bad(&c, "region", "not a region code (a-z, 0-9, '-')");
        if (tb_pricing_region(p, x->region))
            return bad(&c, "region", "repeated key");
        p->nregions++;
    }
    return 0;
}

/* A price row's region: a region of regions.csv, "any", "unspecified", or a Local Zone
 * named after its parent region ("us-east-1-dfw"). */
static bool price_region_ok(const struct tb_pricing *p, const char *region)
{
    if (!strcmp(region, "any") || !strcmp(region, "unspecified") || tb_pricing_region(p, region))
        return true;
    for (size_t i = 0; i < p->nregions; i++) {
        size_t n = strlen(p->regions[i].region);
        if (!strncmp(region, p->regions[i].region, n) && region[n] == '-' && region[n + 1])
            return true;
    }
    return false;
}

static int load_prices(struct tb_pricing *p, char *err, size_t errlen)
{
    const struct tb_csv_table *t = &p->prices_csv;
    if (tb_csv_require(t, PRICE_COLS, err, errlen) != 0)
        return -1;
    p->prices = tb_alloc_array(t->nrows ? t->nrows : 1, sizeof(*p->prices));
    if (!p->prices)
        return tb_err(err, errlen, "out of memory");
    for (size_t r = 0; r < t->nrows; r++) {
        struct rowctx c = {t, r, err, errlen};
        struct tb_price *x = &p->prices[r];
        bool none;
        memset(x, 0, sizeof *x);
        x->line = t->lines[r];
        x->as_of_text = fld(&c, "as_of_text");
        x->notes = fld(&c, "notes");
        if (need_text(&c, "instance", &x->instance) || need_text(&c, "region", &x->region) ||
            one_of(&c, "purchase", PURCHASES, &x->purchase) ||
            one_of(&c, "status", STATUSES, &x->status) || iso_date(&c, "as_of", &x->as_of) ||
            need_text(&c, "source", &x->source))
            return -1;
        none = !strcmp(x->status, "none");
        if (none && *fld(&c, "usd_per_hour"))
            return bad(&c, "usd_per_hour", "status 'none' needs an empty price");
        if (!none && num(&c, TB_PRICES_RANGES, "usd_per_hour", false, &x->usd_per_hour) != 0)
            return -1;
        if (none)
            x->usd_per_hour = NAN;
        if (!tb_pricing_instance(p, x->instance))
            return bad(&c, "instance", "not in instances.csv");
        if (!price_region_ok(p, x->region))
            return bad(&c, "region", "not a region of regions.csv, 'any' or 'unspecified'");
        p->nprices++;
    }
    return 0;
}

int tb_pricing_load_files(struct tb_pricing *p, const char *chips_csv, const char *instances_csv,
                          const char *prices_csv, const char *regions_csv, char *err, size_t errlen)
{
    int rc = -1;
    memset(p, 0, sizeof *p);
    if (tb_csv_load(&p->prices_csv, prices_csv, err, errlen) != 0 ||
        tb_csv_load(&p->chips_csv, chips_csv, err, errlen) != 0 ||
        tb_csv_load(&p->instances_csv, instances_csv, err, errlen) != 0 ||
        tb_csv_load(&p->regions_csv, regions_csv, err, errlen) != 0)
        goto out;
    if (load_chips(p, err, errlen) != 0 || load_instances(p, err, errlen) != 0 ||
        load_regions(p, err, errlen) != 0 || load_prices(p, err, errlen) != 0)
        goto out;
    snprintf(p->instances_name, sizeof p->instances_name, "%s", instances_csv);
    snprintf(p->prices_name, sizeof p->prices_name, "%s", prices_csv);
    snprintf(p->regions_name, sizeof p->regions_name, "%s", regions_csv);
    rc = 0;
out:
    if (rc != 0)
        tb_pricing_release(p);
    return rc;
}

/* dir/name when dir has it (or when dir is the data folder's), else the data folder's
 * pricing/name; *shipped says which. 0, or -1 when the path does not fit. */
static int table_path(char *buf, size_t len, const char *dir, const char *name, bool *shipped)
{
    const char *data = tb_datadir();
    if (dir && snprintf(buf, len, "%s/%s", dir, name) < (int)len && tb_file_exists(buf)) {
        *shipped = false;
        return 0;
    }
    *shipped = true;
    return snprintf(buf, len, "%s/pricing/%s", data, name) < (int)len ? 0 : -1;
}

int tb_pricing_load(struct tb_pricing *p, const char *dir, char *err, size_t errlen)
{
    char chips[4096], inst[4096], prices[4096], regions[4096];
    bool own_prices = dir != NULL, chips_shipped, inst_shipped, regions_shipped;

    memset(p, 0, sizeof *p);
    if (dir ? snprintf(prices, sizeof prices, "%s/prices.csv", dir) >= (int)sizeof prices
            : snprintf(prices, sizeof prices, "%s/pricing/prices.csv", tb_datadir()) >=
                  (int)sizeof prices)
        return tb_err(err, errlen, "pricing folder name too long: '%s'", dir ? dir : "");
    if (dir && !tb_file_exists(prices))
        return tb_err(err, errlen, "%s: no such file (a --prices folder holds prices.csv)", prices);
    if (table_path(chips, sizeof chips, dir, "chips.csv", &chips_shipped) != 0 ||
        table_path(inst, sizeof inst, dir, "instances.csv", &inst_shipped) != 0 ||
        table_path(regions, sizeof regions, dir, "regions.csv", &regions_shipped) != 0)
        return tb_err(err, errlen, "pricing folder name too long: '%s'", dir ? dir : "");
    if (tb_pricing_load_files(p, chips, inst, prices, regions, err, errlen) != 0)
        return -1;
    /* the shipped tables: named as the README and the sources name them */
    if (inst_shipped)
        snprintf(p->instances_name, sizeof p->instances_name, "pricing/instances.csv");
    if (regions_shipped)
        snprintf(p->regions_name, sizeof p->regions_name, "pricing/regions.csv");
    if (!own_prices)
        snprintf(p->prices_name, sizeof p->prices_name, "pricing/prices.csv");
    (void)chips_shipped;
    return 0;
}

void tb_pricing_release(struct tb_pricing *p)
{
    tb_csv_release(&p->chips_csv);
    tb_csv_release(&p->instances_csv);
    tb_csv_release(&p->prices_csv);
    tb_csv_release(&p->regions_csv);
    free(p->regions);
    free(p->chips);
    free(p->instances);
    free(p->prices);
    memset(p, 0, sizeof *p);
}

/* ---- lookups ---- */

const struct tb_instance *tb_pricing_instance(const struct tb_pricing *p, const char *type)
{
    for (size_t i = 0; type && i < p->ninstances; i++)
        if (!strcmp(p->instances[i].instance, type))
            return &p->instances[i];
    return NULL;
}

const struct tb_chip *tb_pricing_chip(const struct tb_pricing *p, const char *chip)
{
    for (size_t i = 0; chip && i < p->nchips; i++)
        if (!strcmp(p->chips[i].chip, chip))
            return &p->chips[i];
    return NULL;
}

size_t tb_pricing_instances(const struct tb_pricing *p, const struct tb_instance **out)
{
    *out = p->instances;
    return p->ninstances;
}

/* A price a lookup may return: listed, or secondary (used, but weak: the report says so). */
static bool priced_row(const struct tb_price *x)
{
    return !strcmp(x->status, "listed") || !strcmp(x->status, "secondary");
}

static bool usable(const struct tb_price *x)
{
    return priced_row(x) || !strcmp(x->status, "none");
}

/* Whether some row of prices.csv is for region. */
static bool region_priced(const struct tb_pricing *p, const char *region)
{
    for (size_t i = 0; i < p->nprices; i++)
        if (!strcmp(p->prices[i].region, region))
            return true;
    return false;
}

int tb_pricing_best(const struct tb_pricing *p, const char *instance, const char *region,
                    const char *purchase, const struct tb_price **out, char *why, size_t whylen)
{
    const struct tb_price *best = NULL;
    size_t used = 0;

    *out = NULL;
    for (size_t i = 0; i < p->nprices; i++) {
        const struct tb_price *x = &p->prices[i];
        if (!usable(x) || strcmp(x->instance, instance))
            continue;
        if (strcmp(x->region, region) && strcmp(x->region, "any"))
            continue;
        if (strcmp(x->purchase, purchase) && strcmp(x->purchase, "any"))
            continue;
        if (!best || strcmp(x->as_of, best->as_of) > 0)
            best = x;
    }
    *out = best;
    if (best && priced_row(best))
        return 0;
    if (best && !region_priced(p, region)) { /* a row for every region says none */
        const struct tb_region *r = tb_pricing_region(p, region);
        tb_err(why, whylen,
               "no price in %s%s%s%s: %s has no row for that region; for every region "
               "(%s line %ld): %s",
               region, r ? " (" : "", r ? r->name : "", r ? ")" : "", p->prices_name,
               p->prices_name, best->line, best->notes);
        return 1;
    }
    if (best) {
        tb_err(why, whylen, "no public %s price for '%s' in '%s' (%s line %ld, as of %s): %s",
               purchase, instance, region, p->prices_name, best->line,
               *best->as_of ? best->as_of : best->as_of_text, best->notes);
        return 1;
    }
    /* nothing for that pair: say what the table does have for the instance */
    if (!region_priced(p, region)) {
        const struct tb_region *r = tb_pricing_region(p, region);
        used =
            (size_t)snprintf(why, whylen, "no price in %s%s%s%s: %s has no row for that region",
                             region, r ? " (" : "", r ? r->name : "", r ? ")" : "", p->prices_name);
    } else {
        used = (size_t)snprintf(why, whylen, "no %s price for '%s' in '%s' in %s", purchase,
                                instance, region, p->prices_name);
    }
    for (size_t i = 0, shown = 0; i < p->nprices && used < whylen && shown < 6; i++) {
        const struct tb_price *x = &p->prices[i];
        bool seen = false;
        if (strcmp(x->instance, instance) || !priced_row(x))
            continue;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(p->prices[k].instance, instance) && priced_row(&p->prices[k]) &&
                   !strcmp(p->prices[k].region, x->region) &&
                   !strcmp(p->prices[k].purchase, x->purchase);
        if (seen)
            continue;
        used += (size_t)snprintf(why + used, whylen - used, "%s %s %s", shown ? "," : "; it lists",
                                 x->purchase, x->region);
        shown++;
    }
    /* and where a source says there is no public price of this purchase model at all */
    for (size_t i = 0; i < p->nprices && used < whylen; i++) {
        const struct tb_price *x = &p->prices[i];
        if (!strcmp(x->instance, instance) && !strcmp(x->status, "none") &&
            !strcmp(x->purchase, purchase))
            used += (size_t)snprintf(why + used, whylen - used,
                                     "; no public %s price in '%s' (as of %s)", purchase, x->region,
                                     *x->as_of ? x->as_of : x->as_of_text);
    }
    return 1;
}

static void choice_from_row(struct tb_price_choice *o, const struct tb_price *x)
{
    o->have = true;
    o->usd_per_hour = x->usd_per_hour;
    snprintf(o->instance, sizeof o->instance, "%s", x->instance);
    snprintf(o->region, sizeof o->region, "%s", x->region);
    snprintf(o->purchase, sizeof o->purchase, "%s", x->purchase);
    if (*x->as_of)
        snprintf(o->as_of, sizeof o->as_of, "%s", x->as_of);
    else
        snprintf(o->as_of, sizeof o->as_of, "%s", *x->as_of_text ? x->as_of_text : "undated");
    snprintf(o->source, sizeof o->source, "%s", x->source);
    o->line = x->line;
    o->secondary = !strcmp(x->status, "secondary");
}

/* ---- a user's discount ---- */

int tb_pricing_discount_add(struct tb_pricing_discounts *ds, const char *arg, char *err,
                            size_t errlen)
{
    const char *eq = strchr(arg, '=');
    char purchase[32];
    double f;
    if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof purchase)
        return tb_err(err, errlen,
                      "--discount: expected PURCHASE=FRACTION (savings-plan-1y=0.28), got '%s'",
                      arg);
    snprintf(purchase, sizeof purchase, "%.*s", (int)(eq - arg), arg);
    if (!tb_pricing_known_purchase(purchase))
        return tb_err(err, errlen, "--discount: unknown purchase model '%s' (%s)", purchase,
                      TB_PRICING_PURCHASES);
    if (!strcmp(purchase, "on-demand"))
        return tb_err(err, errlen,
                      "--discount: on-demand is what a discount is taken off: name another "
                      "purchase model (savings-plan-1y=0.28)");
    if (tb_parse_double(eq + 1, 0, 1, &f) != 0 || !(f > 0 && f < 1))
        return tb_err(err, errlen,
                      "--discount: not a fraction in (0, 1) (0.28 is 28%% off on-demand): '%s'",
                      arg);
    if (tb_pricing_discount_of(ds, purchase))
        return tb_err(err, errlen, "--discount: %s given twice", purchase);
    if (ds->n >= TB_PRICING_NDISCOUNT)
        return tb_err(err, errlen, "--discount: more than %d given", TB_PRICING_NDISCOUNT);
    snprintf(ds->d[ds->n].purchase, sizeof ds->d[ds->n].purchase, "%s", purchase);
    ds->d[ds->n++].fraction = f;
    return 0;
}

const struct tb_pricing_discount *tb_pricing_discount_of(const struct tb_pricing_discounts *ds,
                                                         const char *purchase)
{
    for (size_t i = 0; ds && purchase && i < ds->n; i++)
        if (!strcmp(ds->d[i].purchase, purchase))
            return &ds->d[i];
    return NULL;
}

void tb_pricing_discount_text(const struct tb_pricing_discount *d, char *buf, size_t len)
{
    snprintf(buf, len, "user discount %.4g%% off on-demand, given on the command line",
             100 * d->fraction);
}

static int priced(const struct tb_pricing *p, const char *instance, const char *region,
                  const char *purchase, struct tb_price_choice *o)
{
    const struct tb_pricing_discount *d = tb_pricing_discount_of(&p->discounts, purchase);
    const struct tb_price *x;
    snprintf(o->instance, sizeof o->instance, "%s", instance);
    snprintf(o->region, sizeof o->region, "%s", region);
    snprintf(o->purchase, sizeof o->purchase, "%s", purchase);
    if (d) { /* the user's discount off the on-demand price, labelled as theirs */
        char why[sizeof o->why], label[96];
        tb_pricing_discount_text(d, label, sizeof label);
        if (tb_pricing_best(p, instance, region, "on-demand", &x, why, sizeof why) != 0) {
            snprintf(o->why, sizeof o->why, "%s (--discount %s=%g), but %.300s", label, purchase,
                     d->fraction, why);
            return 0;
        }
        choice_from_row(o, x);
        snprintf(o->purchase, sizeof o->purchase, "%s", purchase);
        o->usd_per_hour = x->usd_per_hour * (1 - d->fraction);
        o->discount = d->fraction;
        snprintf(o->source, sizeof o->source, "%s (--discount %s=%g), of on-demand $%g/h: %.300s",
                 label, purchase, d->fraction, x->usd_per_hour, x->source);
        return 0;
    }
    if (tb_pricing_best(p, instance, region, purchase, &x, o->why, sizeof o->why) == 0)
        choice_from_row(o, x);
    return 0;
}

int tb_pricing_target_price(const struct tb_pricing *p, const char *target, const char *region,
                            const char *purchase, struct tb_price_choice *out, char *err,
                            size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->usd_per_hour = NAN;
    if (!tb_pricing_instance(p, target))
        return tb_err(err, errlen, "unknown instance type '%s' (not in %s)", target,
                      p->instances_name);
    return priced(p, target, region ? region : "us-east-1", purchase ? purchase : "on-demand", out);
}

int tb_pricing_host_price(const struct tb_pricing *p, const char *instance, const char *region,
                          const char *purchase, double usd_per_hour, struct tb_price_choice *out,
                          char *err, size_t errlen)
{
    const char *reg = region ? region : "us-east-1";
    const char *pur = purchase ? purchase : "on-demand";

    memset(out, 0, sizeof *out);
    out->usd_per_hour = NAN;
    if (instance && !tb_pricing_instance(p, instance))
        return tb_err(err, errlen, "unknown instance type '%s' (not in %s)", instance,
                      p->instances_name);
    if (!isnan(usd_per_hour)) {
        time_t now = time(NULL);
        struct tm tm;
        if (!(usd_per_hour > 0) || !isfinite(usd_per_hour))
            return tb_err(err, errlen, "--usd-per-hour must be a positive number, not %g",
                          usd_per_hour);
        out->have = true;
        out->usd_per_hour = usd_per_hour;
        snprintf(out->instance, sizeof out->instance, "%s", instance ? instance : "host");
        snprintf(out->region, sizeof out->region, "%s", region ? region : "");
        snprintf(out->purchase, sizeof out->purchase, "%s", purchase ? purchase : "");
        gmtime_r(&now, &tm);
        strftime(out->as_of, sizeof out->as_of, "%Y-%m-%d", &tm);
        snprintf(out->source, sizeof out->source, "user-given (--usd-per-hour)");
        return 0;
    }
    if (instance)
        return priced(p, instance, reg, pur, out);
    tb_err(out->why, sizeof out->why,
           "the host is not a catalogued instance and no --instance or --usd-per-hour was given");
    return 0;
}

bool tb_pricing_known_purchase(const char *purchase)
{
    static const char *const names[] = {"on-demand",       "reserved-1y",     "reserved-3y",
                                        "savings-plan-1y", "savings-plan-3y", "spot",
                                        "capacity-block"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i], purchase))
            return true;
    return false;
}

const struct tb_region *tb_pricing_region(const struct tb_pricing *p, const char *code)
{
    for (size_t i = 0; code && i < p->nregions; i++)
        if (!strcmp(p->regions[i].region, code))
            return &p->regions[i];
    return NULL;
}

bool tb_pricing_known_region(const struct tb_pricing *p, const char *region)
{
    return tb_pricing_region(p, region) != NULL || region_priced(p, region);
}

int tb_pricing_check_choice(const struct tb_pricing *p, const char *region, const char *purchase,
                            char *err, size_t errlen)
{
    if (region && !tb_pricing_known_region(p, region))
        return tb_err(err, errlen, "unknown region '%s' (no row of %s or %s names it)", region,
                      p->regions_name, p->prices_name);
    if (purchase && !tb_pricing_known_purchase(purchase))
        return tb_err(err, errlen, "unknown purchase model '%s' (%s)", purchase,
                      TB_PRICING_PURCHASES);
    return 0;
}

/* ---- Capacity Blocks ---- */

static bool positive(double v)
{
    return v > 0 && isfinite(v);
}

double tb_pricing_cblock_days(double hours)
{
    double days, whole = 0;
    if (!positive(hours))
        return NAN;
    days = ceil(hours / 24.0 - 1e-9); /* a job of exactly 48.0 h buys 2 days */
    if (days < 1)
        days = 1;
    while (days > TB_CBLOCK_MAX_DAYS) { /* consecutive blocks of the longest duration */
        whole += TB_CBLOCK_MAX_DAYS;
        days -= TB_CBLOCK_MAX_DAYS;
    }
    if (days > TB_CBLOCK_DAILY_UNTIL)
        days = 7.0 * ceil(days / 7.0);
    return whole + days;
}

int tb_pricing_cblock(double hours, double instances, double usd_per_hour,
                      struct tb_pricing_cblock *out)
{
    out->days = out->blocks = out->usd = out->used = NAN;
    out->over_quota = false;
    if (!positive(hours) || !positive(instances) || !positive(usd_per_hour) ||
        instances != floor(instances) || instances > 1e9)
        return -1;
    out->days = tb_pricing_cblock_days(hours);
    out->blocks = ceil(instances / TB_CBLOCK_MAX_INSTANCES) * ceil(out->days / TB_CBLOCK_MAX_DAYS);
    out->usd = out->days * 24.0 * instances * usd_per_hour;
    out->used = hours / (out->days * 24.0);
    out->over_quota = instances > TB_CBLOCK_ACCOUNT_INSTANCES;
    return 0;
}

double tb_pricing_job_usd(const struct tb_price_choice *p, double hours, double instances,
                          struct tb_pricing_cblock *cb)
{
    cb->days = cb->blocks = cb->usd = cb->used = NAN;
    cb->over_quota = false;
    if (!p || !p->have || !positive(p->usd_per_hour) || !positive(hours) || !positive(instances))
        return NAN;
    if (!strcmp(p->purchase, "capacity-block"))
        return tb_pricing_cblock(hours, ceil(instances - 1e-9), p->usd_per_hour, cb) == 0 ? cb->usd
                                                                                          : NAN;
    return hours * instances * p->usd_per_hour;
}
