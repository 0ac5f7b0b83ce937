/*
 * harness/cost/tb_price_import.c: see tb_price_import.h. Each file is read whole and
 * parsed by jansson (get-products' products are JSON inside JSON strings, parsed in
 * turn); every field used is checked, and an error names the file and the JSON path
 * ("offers.json: PriceList[3].terms.OnDemand.X.priceDimensions.Y.pricePerUnit.USD: not a
 * number: 'abc'"). A vantage file (an array of some 300 MB) is parsed one element at a
 * time. Rows are collected first and appended only when the whole file read cleanly.
 */
#include "tb_price_import.h"

#include "tb_csv.h"
#include "tb_import.h"
#include "tb_util.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *const FORMAT_NAMES[TB_PRICES_NFORMATS] = {"get-products", "spot-price-history",
                                                             "capacity-block-offerings",
                                                             "savings-plan-rates", "vantage"};
static const char *const FORMAT_TOOLS[TB_PRICES_NFORMATS] = {
    "aws pricing get-products", "aws ec2 describe-spot-price-history",
    "aws ec2 describe-capacity-block-offerings",
    "aws savingsplans describe-savings-plans-offering-rates", "ec2instances.info instances.json"};

const char *tb_price_format_to_string(enum tb_price_format f)
{
    return (unsigned)f < TB_PRICES_NFORMATS ? FORMAT_NAMES[f] : "unknown";
}

int tb_price_format_from_string(const char *s, enum tb_price_format *f)
{
    for (int i = 0; i < TB_PRICES_NFORMATS; i++)
        if (!strcmp(s, FORMAT_NAMES[i])) {
            *f = (enum tb_price_format)i;
            return 0;
        }
    return -1;
}

/* ---- one file's context: where errors go, what every row shares ---- */

struct pctx {
    const struct tb_pricing *cat;
    const char *path;
    char source[256];
    struct tb_price_import got; /* this file's rows, moved into the caller's when clean */
    char *err;
    size_t errlen;
};

static int jbad(struct pctx *c, const char *jpath, const char *fmt, ...) TB_PRINTF(3, 4);
static int jbad(struct pctx *c, const char *jpath, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tb_err(c->err, c->errlen, "%s: %s: %s", c->path, jpath, what);
    return TB_EINPUT;
}

static void skip_n(struct tb_price_import *im, const char *why, size_t n)
{
    size_t k;
    im->skipped += n;
    for (k = 0; k < im->nskips; k++)
        if (!strcmp(im->skips[k].why, why))
            break;
    if (k == im->nskips) {
        size_t max = sizeof im->skips / sizeof im->skips[0];
        if (im->nskips == max) /* the last one gathers the rest */
            k = max - 1;
        else
            snprintf(im->skips[im->nskips++].why, sizeof im->skips[0].why, "%s", why);
    }
    im->skips[k].n += n;
}

static void skip(struct tb_price_import *im, const char *fmt, ...) TB_PRINTF(2, 3);
static void skip(struct tb_price_import *im, const char *fmt, ...)
{
    char why[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    skip_n(im, why, 1);
}

void tb_price_import_skipped(const struct tb_price_import *im, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < im->nskips && n < len; k++)
        n += (size_t)snprintf(buf + n, len - n, "%zu x %s\n", im->skips[k].n, im->skips[k].why);
}

/* The member key of obj: 1 with *out set, 0 when absent or null (and not required). */
static int member(struct pctx *c, const json_t *obj, const char *at, const char *key,
                  json_type type, bool required, const json_t **out)
{
    static const char *const KIND[] = {"an object", "an array", "a string", "a whole number",
                                       "a number",  "true",     "false",    "null"};
    const json_t *v = json_object_get(obj, key);
    char p[512];
    snprintf(p, sizeof p, "%s%s%s", at, *at ? "." : "", key);
    *out = NULL;
    if (!v || json_is_null(v))
        return required ? jbad(c, p, "missing") : 0;
    if (json_typeof(v) != type && !(type == JSON_REAL && json_is_number(v)))
        return jbad(c, p, "not %s: %s", KIND[type], KIND[json_typeof(v)]);
    *out = v;
    return 1;
}

/* A string member into buf ("" when absent and not required). */
static int text(struct pctx *c, const json_t *obj, const char *at, const char *key, bool required,
                char *buf, size_t len)
{
    const json_t *v;
    int rc = member(c, obj, at, key, JSON_STRING, required, &v);
    buf[0] = '\0';
    if (rc == 1)
        snprintf(buf, len, "%s", json_string_value(v));
    return rc;
}

/* A price given as a string ("21.5000000000"), USD per unit, >= 0. */
static int money(struct pctx *c, const json_t *obj, const char *at, const char *key, double *out)
{
    char buf[64], p[512];
    int rc = text(c, obj, at, key, true, buf, sizeof buf);
    if (rc < 0)
        return rc;
    snprintf(p, sizeof p, "%s%s%s", at, *at ? "." : "", key);
    if (tb_parse_double(buf, 0, 1e9, out) != 0 || !isfinite(*out))
        return jbad(c, p, "not a price: '%s'", buf);
    return 0;
}

/* An ISO 8601 time ("2026-11-20T10:00:00Z", "...+00:00", "2026-11-20") to its date. */
static int iso_day(struct pctx *c, const char *jpath, const char *s, char day[12])
{
    snprintf(day, 12, "%.10s", s);
    if (!tb_import_check_date(day) || (s[10] && s[10] != 'T' && s[10] != ' '))
        return jbad(c, jpath, "not an ISO 8601 date and time: '%s'", s);
    return 0;
}

/* "us-east-2c" -> "us-east-2"; "us-east-1-dfw-2a" -> "us-east-1-dfw-2". */
static void zone_region(const char *az, char *region, size_t len)
{
    size_t n = strlen(az);
    while (n > 0 && az[n - 1] >= 'a' && az[n - 1] <= 'z')
        n--;
    snprintf(region, len, "%.*s", (int)n, az);
}

static void price_text(double v, char *buf, size_t len)
{
    snprintf(buf, len, "%.10g", v);
}

/* Append a row to im unless the same one is there. */
static int add_row(struct tb_price_import *im, const struct tb_price_row *r)
{
    for (size_t i = 0; i < im->nrows; i++) {
        const struct tb_price_row *o = &im->rows[i];
        if (!strcmp(o->instance, r->instance) && !strcmp(o->region, r->region) &&
            !strcmp(o->purchase, r->purchase) && !strcmp(o->as_of, r->as_of) &&
            !strcmp(o->status, r->status) && !strcmp(o->usd_per_hour, r->usd_per_hour))
            return 0;
    }
    if (im->nrows == im->cap) {
        size_t cap = im->cap ? 2 * im->cap : 64;
        struct tb_price_row *p = tb_alloc_array(cap, sizeof *p);
        if (!p)
            return -1;
        if (im->nrows)
            memcpy(p, im->rows, im->nrows * sizeof *p);
        free(im->rows);
        im->rows = p;
        im->cap = cap;
    }
    im->rows[im->nrows++] = *r;
    return 0;
}

static int new_row(struct pctx *c, const char *instance, const char *region, const char *purchase,
                   double usd, const char *as_of, const char *as_of_text, const char *notes)
{
    struct tb_price_row r;
    memset(&r, 0, sizeof r);
    snprintf(r.instance, sizeof r.instance, "%s", instance);
    snprintf(r.region, sizeof r.region, "%s", region);
    snprintf(r.purchase, sizeof r.purchase, "%s", purchase);
    snprintf(r.status, sizeof r.status, "%s", isnan(usd) ? "none" : "listed");
    if (!isnan(usd))
        price_text(usd, r.usd_per_hour, sizeof r.usd_per_hour);
    snprintf(r.as_of, sizeof r.as_of, "%s", as_of);
    snprintf(r.as_of_text, sizeof r.as_of_text, "%s", as_of_text);
    snprintf(r.source, sizeof r.source, "%s", c->source);
    snprintf(r.notes, sizeof r.notes, "%s", notes);
    if (add_row(&c->got, &r) != 0)
        return tb_err(c->err, c->errlen, "out of memory");
    return 0;
}

/* Whether the catalogue has the type; else the record is skipped and counted. */
static bool catalogued(struct pctx *c, const char *type)
{
    if (tb_pricing_instance(c->cat, type))
        return true;
    skip(&c->got, "%s: not in %s", type, c->cat->instances_name);
    return false;
}

/* ---- get-products ---- */

/* The USD per hour of a term's priceDimensions (the one whose unit is Hrs), and whether a
 * one-off fee (unit Quantity) comes with it. */
static int term_hourly(struct pctx *c, const json_t *term, const char *at, double *usd,
                       bool *upfront)
{
    const json_t *dims, *dim;
    const char *key;
    char p[512];
    int rc = member(c, term, at, "priceDimensions", JSON_OBJECT, true, &dims);
    *usd = NAN;
    *upfront = false;
    if (rc < 0)
        return rc;
    json_object_foreach((json_t *)dims, key, dim)
    {
        char unit[32];
        const json_t *ppu;
        double v;
        snprintf(p, sizeof p, "%s.priceDimensions.%s", at, key);
        if (!json_is_object(dim))
            return jbad(c, p, "not an object");
        if (text(c, dim, p, "unit", true, unit, sizeof unit) < 0 ||
            member(c, dim, p, "pricePerUnit", JSON_OBJECT, true, &ppu) < 0)
            return TB_EINPUT;
        snprintf(p + strlen(p), sizeof p - strlen(p), ".pricePerUnit");
        if (money(c, ppu, p, "USD", &v) != 0)
            return TB_EINPUT;
        if (!strcmp(unit, "Hrs"))
            *usd = v;
        else if (!strcmp(unit, "Quantity") && v > 0)
            *upfront = true;
    }
    return 0;
}

/* (instance, region) pairs a get-products file has Linux products for, and whether one
 * of them had an on-demand price. */
struct pair {
    char instance[64], region[40], as_of[12], market[64];
    bool priced;
};

static int products_one(struct pctx *c, const json_t *prod, const char *at, struct pair *pairs,
                        size_t *npairs, size_t maxpairs)
{
    const json_t *product, *attrs, *terms, *od = NULL, *rs = NULL, *term;
    char type[64], region[40], os[32], ten[32], sw[32], cap[32], market[64], p[512];
    const char *key;
    struct pair *pr = NULL;

    if (member(c, prod, at, "product", JSON_OBJECT, true, &product) < 0)
        return TB_EINPUT;
    snprintf(p, sizeof p, "%s.product", at);
    if (member(c, product, p, "attributes", JSON_OBJECT, true, &attrs) < 0)
        return TB_EINPUT;
    snprintf(p, sizeof p, "%s.product.attributes", at);
    if (text(c, attrs, p, "instanceType", false, type, sizeof type) < 0 ||
        text(c, attrs, p, "regionCode", false, region, sizeof region) < 0 ||
        text(c, attrs, p, "operatingSystem", false, os, sizeof os) < 0 ||
        text(c, attrs, p, "tenancy", false, ten, sizeof ten) < 0 ||
        text(c, attrs, p, "preInstalledSw", false, sw, sizeof sw) < 0 ||
        text(c, attrs, p, "capacitystatus", false, cap, sizeof cap) < 0 ||
        text(c, attrs, p, "marketoption", false, market, sizeof market) < 0)
        return TB_EINPUT;
    if (!*type) {
        skip(&c->got, "a product without instanceType (not an instance)");
        return 0;
    }
    if (!*region)
        return jbad(c, p, "instance %s without regionCode", type);
    if (strcmp(os, "Linux") || strcmp(ten, "Shared") || strcmp(sw, "NA") || strcmp(cap, "Used")) {
        skip(&c->got, "products not Linux, Shared tenancy, no pre-installed software, "
                      "capacitystatus Used");
        return 0;
    }
    if (!catalogued(c, type))
        return 0;
    for (size_t i = 0; i < *npairs && !pr; i++)
        if (!strcmp(pairs[i].instance, type) && !strcmp(pairs[i].region, region))
            pr = &pairs[i];
    if (!pr && *npairs < maxpairs) {
        pr = &pairs[(*npairs)++];
        memset(pr, 0, sizeof *pr);
        snprintf(pr->instance, sizeof pr->instance, "%s", type);
        snprintf(pr->region, sizeof pr->region, "%s", region);
    }
    if (member(c, prod, at, "terms", JSON_OBJECT, false, &terms) < 0)
        return TB_EINPUT;
    snprintf(p, sizeof p, "%s.terms", at);
    if (terms && (member(c, terms, p, "OnDemand", JSON_OBJECT, false, &od) < 0 ||
                  member(c, terms, p, "Reserved", JSON_OBJECT, false, &rs) < 0))
        return TB_EINPUT;
    if (pr && *market && !strstr(pr->market, market) &&
        strlen(pr->market) + strlen(market) + 3 < sizeof pr->market)
        snprintf(pr->market + strlen(pr->market), sizeof pr->market - strlen(pr->market), "%s%s",
                 *pr->market ? ", " : "", market);
    json_object_foreach((json_t *)od, key, term)
    {
        char eff[40], day[12], tp[640], ast[96];
        double usd;
        bool upfront;
        snprintf(tp, sizeof tp, "%s.terms.OnDemand.%s", at, key);
        if (!json_is_object(term))
            return jbad(c, tp, "not an object");
        if (text(c, term, tp, "effectiveDate", true, eff, sizeof eff) < 0 ||
            iso_day(c, tp, eff, day) != 0 || term_hourly(c, term, tp, &usd, &upfront) != 0)
            return TB_EINPUT;
        if (pr && (!*pr->as_of || strcmp(day, pr->as_of) > 0))
            snprintf(pr->as_of, sizeof pr->as_of, "%s", day);
        if (*market && strcmp(market, "OnDemand")) {
            skip(&c->got, "OnDemand terms of %s products (not the on-demand price)", market);
            continue;
        }
        if (isnan(usd) || !(usd > 0)) {
            skip(&c->got, "OnDemand terms without a positive hourly price");
            continue;
        }
        snprintf(ast, sizeof ast, "effectiveDate %s", eff);
        if (new_row(c, type, region, "on-demand", usd, day, ast,
                    "Linux, shared tenancy, no pre-installed software; AWS Price List") != 0)
            return -1;
        if (pr)
            pr->priced = true;
    }
    json_object_foreach((json_t *)rs, key, term)
    {
        char eff[40], day[12], tp[640], ast[96], len[16], opt[32], cls[32], ap[700];
        const json_t *ta;
        double usd;
        bool upfront;
        snprintf(tp, sizeof tp, "%s.terms.Reserved.%s", at, key);
        if (!json_is_object(term))
            return jbad(c, tp, "not an object");
        if (text(c, term, tp, "effectiveDate", true, eff, sizeof eff) < 0 ||
            iso_day(c, tp, eff, day) != 0 ||
            member(c, term, tp, "termAttributes", JSON_OBJECT, true, &ta) < 0)
            return TB_EINPUT;
        snprintf(ap, sizeof ap, "%s.termAttributes", tp);
        if (text(c, ta, ap, "LeaseContractLength", true, len, sizeof len) < 0 ||
            text(c, ta, ap, "PurchaseOption", true, opt, sizeof opt) < 0 ||
            text(c, ta, ap, "OfferingClass", true, cls, sizeof cls) < 0 ||
            term_hourly(c, term, tp, &usd, &upfront) != 0)
            return TB_EINPUT;
        if (strcmp(cls, "standard") || strcmp(opt, "No Upfront") || upfront ||
            (strcmp(len, "1yr") && strcmp(len, "3yr"))) {
            skip(&c->got, "Reserved terms other than standard, No Upfront, 1yr or 3yr");
            continue;
        }
        if (isnan(usd) || !(usd > 0)) {
            skip(&c->got, "Reserved terms without a positive hourly price");
            continue;
        }
        snprintf(ast, sizeof ast, "effectiveDate %s", eff);
        if (new_row(c, type, region, !strcmp(len, "1yr") ? "reserved-1y" : "reserved-3y", usd, day,
                    ast,
                    "Reserved Instance, standard offering class, payment option No Upfront (the "
                    "hourly rate is the whole price); Linux, shared tenancy; AWS Price List") != 0)
            return -1;
    }
    return 0;
}

static int import_products(struct pctx *c, const json_t *root)
{
    const json_t *list, *item;
    size_t i, npairs = 0;
    struct pair *pairs;
    int rc = 0;

    if (member(c, root, "", "PriceList", JSON_ARRAY, true, &list) < 0)
        return TB_EINPUT;
    pairs = tb_alloc_array(json_array_size(list) + 1, sizeof *pairs);
    if (!pairs)
        return tb_err(c->err, c->errlen, "out of memory");
    json_array_foreach(list, i, item)
    {
        char at[48];
        json_error_t je;
        json_t *prod;
        snprintf(at, sizeof at, "PriceList[%zu]", i);
        if (!json_is_string(item)) {
            rc = jbad(c, at, "not a string (get-products gives each product as a JSON string)");
            break;
        }
        prod = json_loads(json_string_value(item), JSON_REJECT_DUPLICATES, &je);
        if (!prod || !json_is_object(prod)) {
            rc = jbad(c, at, "not a JSON object in its string (column %d: %s)", je.column,
                      prod ? "not an object" : je.text);
            json_decref(prod);
            break;
        }
        rc = products_one(c, prod, at, pairs, &npairs, json_array_size(list) + 1);
        json_decref(prod);
        if (rc != 0)
            break;
    }
    for (i = 0; rc == 0 && i < npairs; i++) {
        char notes[512];
        if (pairs[i].priced || !*pairs[i].as_of)
            continue;
        snprintf(notes, sizeof notes,
                 "AWS Price List has no on-demand price for %s in %s: its Linux products there "
                 "are %s only",
                 pairs[i].instance, pairs[i].region,
                 *pairs[i].market ? pairs[i].market : "without OnDemand terms");
        rc = new_row(c, pairs[i].instance, pairs[i].region, "on-demand", NAN, pairs[i].as_of,
                     "newest effectiveDate of its products", notes);
    }
    free(pairs);
    return rc;
}

/* ---- spot-price-history ---- */

struct zone_price {
    char instance[64], region[40], zone[40], ts[40];
    double usd;
};

static int zone_cmp(const void *a, const void *b)
{
    const struct zone_price *x = a, *y = b;
    int d = strcmp(x->instance, y->instance);
    if (!d)
        d = strcmp(x->region, y->region);
    if (!d)
        d = (x->usd > y->usd) - (x->usd < y->usd);
    return d ? d : strcmp(x->zone, y->zone);
}

static int import_spot(struct pctx *c, const json_t *root)
{
    const json_t *list, *rec;
    struct zone_price *z;
    size_t i, nz = 0;
    int rc = 0;

    if (member(c, root, "", "SpotPriceHistory", JSON_ARRAY, true, &list) < 0)
        return TB_EINPUT;
    z = tb_alloc_array(json_array_size(list) + 1, sizeof *z);
    if (!z)
        return tb_err(c->err, c->errlen, "out of memory");
    json_array_foreach(list, i, rec)
    {
        char at[48], az[40], type[64], prod[64], ts[40], day[12];
        double usd;
        size_t k;
        snprintf(at, sizeof at, "SpotPriceHistory[%zu]", i);
        if (!json_is_object(rec)) {
            rc = jbad(c, at, "not an object");
            break;
        }
        if (text(c, rec, at, "AvailabilityZone", true, az, sizeof az) < 0 ||
            text(c, rec, at, "InstanceType", true, type, sizeof type) < 0 ||
            text(c, rec, at, "ProductDescription", true, prod, sizeof prod) < 0 ||
            text(c, rec, at, "Timestamp", true, ts, sizeof ts) < 0 ||
            money(c, rec, at, "SpotPrice", &usd) != 0) {
            rc = TB_EINPUT;
            break;
        }
        snprintf(at + strlen(at), sizeof at - strlen(at), ".Timestamp");
        if ((rc = iso_day(c, at, ts, day)) != 0)
            break;
        if (strncmp(prod, "Linux/UNIX", 10)) {
            skip(&c->got, "spot prices not for Linux/UNIX");
            continue;
        }
        if (!catalogued(c, type))
            continue;
        for (k = 0; k < nz; k++) /* each zone's newest price */
            if (!strcmp(z[k].instance, type) && !strcmp(z[k].zone, az))
                break;
        if (k < nz && strcmp(ts, z[k].ts) <= 0)
            continue;
        if (k == nz)
            nz++;
        snprintf(z[k].instance, sizeof z[k].instance, "%s", type);
        snprintf(z[k].zone, sizeof z[k].zone, "%s", az);
        zone_region(az, z[k].region, sizeof z[k].region);
        snprintf(z[k].ts, sizeof z[k].ts, "%s", ts);
        z[k].usd = usd;
    }
    qsort(z, nz, sizeof *z, zone_cmp);
    for (i = 0; rc == 0 && i < nz;) { /* one row per (instance, region): its cheapest zone */
        size_t j = i, n;
        char notes[1024], ast[96], day[12];
        while (j < nz && !strcmp(z[j].instance, z[i].instance) && !strcmp(z[j].region, z[i].region))
            j++;
        n = (size_t)snprintf(notes, sizeof notes,
                             "cheapest of %zu zone(s), each zone's newest price; range %.10g-%.10g "
                             "across zones:",
                             j - i, z[i].usd, z[j - 1].usd);
        for (size_t k = i; k < j && n < sizeof notes; k++)
            n += (size_t)snprintf(notes + n, sizeof notes - n, " %s %.10g (%s)%s", z[k].zone,
                                  z[k].usd, z[k].ts, k + 1 < j ? "," : "");
        snprintf(ast, sizeof ast, "Timestamp %s (%s)", z[i].ts, z[i].zone);
        snprintf(day, sizeof day, "%.10s", z[i].ts);
        rc = new_row(c, z[i].instance, z[i].region, "spot", z[i].usd, day, ast, notes);
        i = j;
    }
    free(z);
    return rc;
}

/* ---- capacity-block-offerings ---- */

static int import_blocks(struct pctx *c, const json_t *root)
{
    const json_t *list, *rec;
    struct zone_price *z; /* ts: the start; zone: the offering's zone */
    size_t i, nz = 0;
    int rc = 0;

    if (member(c, root, "", "CapacityBlockOfferings", JSON_ARRAY, true, &list) < 0)
        return TB_EINPUT;
    z = tb_alloc_array(json_array_size(list) + 1, sizeof *z);
    if (!z)
        return tb_err(c->err, c->errlen, "out of memory");
    json_array_foreach(list, i, rec)
    {
        char at[64], p[96], az[40], type[64], us[64], start[40], day[12], cur[8], ten[16];
        const json_t *hrs, *mins, *cnt, *ucnt;
        double fee, hours, count;
        snprintf(at, sizeof at, "CapacityBlockOfferings[%zu]", i);
        if (!json_is_object(rec)) {
            rc = jbad(c, at, "not an object");
            break;
        }
        if (text(c, rec, at, "AvailabilityZone", true, az, sizeof az) < 0 ||
            text(c, rec, at, "InstanceType", true, type, sizeof type) < 0 ||
            text(c, rec, at, "UltraserverType", false, us, sizeof us) < 0 ||
            text(c, rec, at, "StartDate", true, start, sizeof start) < 0 ||
            text(c, rec, at, "CurrencyCode", true, cur, sizeof cur) < 0 ||
            text(c, rec, at, "Tenancy", false, ten, sizeof ten) < 0 ||
            member(c, rec, at, "CapacityBlockDurationHours", JSON_INTEGER, true, &hrs) < 0 ||
            member(c, rec, at, "CapacityBlockDurationMinutes", JSON_INTEGER, false, &mins) < 0 ||
            member(c, rec, at, "InstanceCount", JSON_INTEGER, !*us, &cnt) < 0 ||
            member(c, rec, at, "UltraserverCount", JSON_INTEGER, *us != '\0', &ucnt) < 0 ||
            money(c, rec, at, "UpfrontFee", &fee) != 0) {
            rc = TB_EINPUT;
            break;
        }
        snprintf(p, sizeof p, "%s.StartDate", at);
        if ((rc = iso_day(c, p, start, day)) != 0)
            break;
        hours = (double)json_integer_value(hrs) + (mins ? json_integer_value(mins) / 60.0 : 0);
        count = (double)json_integer_value(*us ? ucnt : cnt);
        if (!(hours > 0) || !(count > 0)) {
            snprintf(p, sizeof p, "%s.%s", at,
                     !(hours > 0) ? "CapacityBlockDurationHours"
                                  : (*us ? "UltraserverCount" : "InstanceCount"));
            rc = jbad(c, p, "must be above 0");
            break;
        }
        if (strcmp(cur, "USD") || (*ten && strcmp(ten, "default"))) {
            skip(&c->got, "Capacity Block offerings not in USD or not default tenancy");
            continue;
        }
        if (!catalogued(c, *us ? us : type))
            continue;
        snprintf(z[nz].instance, sizeof z[nz].instance, "%s", *us ? us : type);
        zone_region(az, z[nz].region, sizeof z[nz].region);
        snprintf(z[nz].zone, sizeof z[nz].zone, "%s %.4gh x %.0f", az, hours, count);
        snprintf(z[nz].ts, sizeof z[nz].ts, "%s", start);
        z[nz++].usd = fee / (hours * count);
    }
    qsort(z, nz, sizeof *z, zone_cmp);
    for (i = 0; rc == 0 && i < nz;) { /* one row per (instance, region): its lowest rate */
        size_t j = i, n;
        char notes[1024], ast[96], day[12];
        while (j < nz && !strcmp(z[j].instance, z[i].instance) && !strcmp(z[j].region, z[i].region))
            j++;
        n = (size_t)snprintf(notes, sizeof notes,
                             "lowest of %zu offering(s), UpfrontFee / (hours x count); range "
                             "%.10g-%.10g:",
                             j - i, z[i].usd, z[j - 1].usd);
        for (size_t k = i; k < j && n < sizeof notes; k++)
            n += (size_t)snprintf(notes + n, sizeof notes - n, " %s from %s %.10g%s", z[k].zone,
                                  z[k].ts, z[k].usd, k + 1 < j ? "," : "");
        snprintf(ast, sizeof ast, "offering StartDate %s", z[i].ts);
        snprintf(day, sizeof day, "%.10s", z[i].ts);
        rc = new_row(c, z[i].instance, z[i].region, "capacity-block", z[i].usd, day, ast, notes);
        i = j;
    }
    free(z);
    return rc;
}

/* ---- savings-plan-rates ---- */

static int import_plans(struct pctx *c, const json_t *root, const char *file_day)
{
    const json_t *list, *rec;
    size_t i;

    if (member(c, root, "", "searchResults", JSON_ARRAY, true, &list) < 0)
        return TB_EINPUT;
    json_array_foreach(list, i, rec)
    {
        char at[48], op[64], ut[96], unit[16], plan[32], pay[32], cur[8], p[96];
        char region[40] = "", type[64] = "", prod[64] = "", ten[32] = "", ast[96];
        const json_t *offer, *props, *dur, *pv;
        double usd;
        size_t k;
        snprintf(at, sizeof at, "searchResults[%zu]", i);
        if (!json_is_object(rec))
            return jbad(c, at, "not an object");
        if (member(c, rec, at, "savingsPlanOffering", JSON_OBJECT, true, &offer) < 0 ||
            member(c, rec, at, "properties", JSON_ARRAY, true, &props) < 0 ||
            text(c, rec, at, "operation", false, op, sizeof op) < 0 ||
            text(c, rec, at, "usageType", true, ut, sizeof ut) < 0 ||
            text(c, rec, at, "unit", true, unit, sizeof unit) < 0 ||
            money(c, rec, at, "rate", &usd) != 0)
            return TB_EINPUT;
        snprintf(p, sizeof p, "%s.savingsPlanOffering", at);
        if (text(c, offer, p, "planType", true, plan, sizeof plan) < 0 ||
            text(c, offer, p, "paymentOption", true, pay, sizeof pay) < 0 ||
            text(c, offer, p, "currency", true, cur, sizeof cur) < 0 ||
            member(c, offer, p, "durationSeconds", JSON_INTEGER, true, &dur) < 0)
            return TB_EINPUT;
        json_array_foreach(props, k, pv)
        {
            char pp[96], name[32], val[64];
            snprintf(pp, sizeof pp, "%s.properties[%zu]", at, k);
            if (!json_is_object(pv))
                return jbad(c, pp, "not an object");
            if (text(c, pv, pp, "name", true, name, sizeof name) < 0 ||
                text(c, pv, pp, "value", true, val, sizeof val) < 0)
                return TB_EINPUT;
            if (!strcmp(name, "region"))
                snprintf(region, sizeof region, "%s", val);
            else if (!strcmp(name, "instanceType"))
                snprintf(type, sizeof type, "%s", val);
            else if (!strcmp(name, "productDescription"))
                snprintf(prod, sizeof prod, "%s", val);
            else if (!strcmp(name, "tenancy"))
                snprintf(ten, sizeof ten, "%s", val);
        }
        if (strcmp(plan, "Compute") || strcmp(pay, "No Upfront") || strcmp(cur, "USD") ||
            strcmp(unit, "Hrs") || strcmp(prod, "Linux/UNIX") || strcmp(ten, "shared") ||
            !strstr(ut, "BoxUsage") || !*region || !*type) {
            skip(&c->got, "Savings Plans rates other than Compute, No Upfront, USD, Linux/UNIX, "
                          "shared tenancy, instance hours (BoxUsage)");
            continue;
        }
        if (json_integer_value(dur) != 31536000 && json_integer_value(dur) != 94608000) {
            skip(&c->got, "Savings Plans of a duration other than 1 or 3 years");
            continue;
        }
        if (!catalogued(c, type))
            continue;
        snprintf(ast, sizeof ast, "file written %s (the response carries no date)", file_day);
        if (new_row(c, type, region,
                    json_integer_value(dur) == 31536000 ? "savings-plan-1y" : "savings-plan-3y",
                    usd, file_day, ast,
                    "Compute Savings Plan, payment option No Upfront; Linux/UNIX, shared "
                    "tenancy; AWS Savings Plans price list") != 0)
            return -1;
    }
    return 0;
}

/* ---- vantage: ec2instances.info's instances.json ---- */

/* The keys a vantage file's linux.reserved object holds for one purchase model. */
struct vterm {
    const char *key;      /* "yrTerm1Standard" */
    const char *purchase; /* "reserved-1y" */
    const char *what;     /* for the notes */
    const char *others;   /* how the notes name the other payment options */
};

static const struct vterm VTERMS[] = {
    {"yrTerm1Standard", "reserved-1y",
     "Reserved Instance, standard offering class, 1 year, No Upfront",
     "USD/h with the upfront fee spread over the term's hours"},
    {"yrTerm3Standard", "reserved-3y",
     "Reserved Instance, standard offering class, 3 years, No Upfront",
     "USD/h with the upfront fee spread over the term's hours"},
    {"yrTerm1Savings", "savings-plan-1y", "Compute Savings Plan, 1 year, No Upfront",
     "USD/h as the file gives them"},
    {"yrTerm3Savings", "savings-plan-3y", "Compute Savings Plan, 3 years, No Upfront",
     "USD/h as the file gives them"},
};
#define NVTERMS (sizeof VTERMS / sizeof VTERMS[0])

static const char *const VPAY[] = {"noUpfront", "partialUpfront", "allUpfront"};

#define V_SAVINGS_OLD                                                                              \
    "Savings keys of a file with no InstanceSavings key (older than ec2instances.info's split "    \
    "of Compute and EC2 Instance plans, 2026-07: either plan's rate)"

/* Whether s looks like an AWS region or zone code: "us-east-2", "us-east-1-atl-2". */
static bool region_shaped(const char *s)
{
    bool digit = false;
    if (!(s[0] >= 'a' && s[0] <= 'z' && s[1] >= 'a' && s[1] <= 'z' && s[2] == '-'))
        return false;
    for (const char *q = s + 2; *q; q++) {
        if (*q >= '0' && *q <= '9')
            digit = true;
        else if (!((*q >= 'a' && *q <= 'z') || (*q == '-' && q[1] && q[1] != '-')))
            return false;
    }
    return digit;
}

/* The regions.csv row of code, or of the region a Local Zone code is named after
 * ("us-east-1-atl-2"), as tb_pricing_load accepts a price row's region; NULL if none. */
static const struct tb_region *region_of(const struct tb_pricing *cat, const char *code)
{
    const struct tb_region *r = tb_pricing_region(cat, code);
    for (size_t i = 0; !r && i < cat->nregions; i++) {
        size_t n = strlen(cat->regions[i].region);
        if (!strncmp(code, cat->regions[i].region, n) && code[n] == '-' && code[n + 1])
            r = &cat->regions[i];
    }
    return r;
}

/* One purchase model's keys in linux.reserved (at: its JSON path). */
static int vantage_term(struct pctx *c, const char *type, const char *region, const json_t *res,
                        const char *at, const struct vterm *t, const char *day, const char *ast)
{
    double v[3];
    bool have[3];
    char key[64], notes[1024];
    size_t n;

    for (int k = 0; k < 3; k++) {
        snprintf(key, sizeof key, "%s.%s", t->key, VPAY[k]);
        have[k] = json_object_get(res, key) != NULL;
        if (have[k] && money(c, res, at, key, &v[k]) != 0)
            return TB_EINPUT;
    }
    if (!have[0]) {
        if (have[1] || have[2])
            skip_n(&c->got, "Partial or All Upfront rates without a No Upfront rate for their term",
                   (size_t)have[1] + (size_t)have[2]);
        return 0;
    }
    if (!(v[0] > 0)) {
        skip(&c->got, "No Upfront rates of 0");
        return 0;
    }
    n = (size_t)snprintf(notes, sizeof notes, "%s (ec2instances.info key %s.noUpfront); Linux",
                         t->what, t->key);
    if (have[1] || have[2]) {
        n += (size_t)snprintf(notes + n, n < sizeof notes ? sizeof notes - n : 0,
                              "; the file's other payment options, %s:", t->others);
        for (int k = 1; k < 3; k++)
            if (have[k] && n < sizeof notes)
                n += (size_t)snprintf(notes + n, sizeof notes - n, "%s %s %.10g",
                                      k == 2 && have[1] ? "," : "", VPAY[k], v[k]);
    }
    return new_row(c, type, region, t->purchase, v[0], day, ast, notes);
}

/* Whether key is one vantage_term reads ("yrTerm1Standard.allUpfront"). */
static bool vantage_mine(const char *key)
{
    for (size_t i = 0; i < NVTERMS; i++) {
        size_t n = strlen(VTERMS[i].key);
        for (int k = 0; k < 3; k++)
            if (!strncmp(key, VTERMS[i].key, n) && key[n] == '.' && !strcmp(key + n + 1, VPAY[k]))
                return true;
    }
    return false;
}

/* linux.reserved of one region: the four purchase models, the rest counted. */
static int vantage_reserved(struct pctx *c, const char *type, const char *region, const json_t *res,
                            const char *at, const char *day, const char *ast)
{
    const char *key;
    const json_t *val;

    for (size_t i = 0; i < NVTERMS; i++)
        if (vantage_term(c, type, region, res, at, &VTERMS[i], day, ast) != 0)
            return TB_EINPUT;
    json_object_foreach((json_t *)res, key, val)
    {
        if (vantage_mine(key))
            continue;
        if (strstr(key, "Convertible."))
            skip(&c->got, "Convertible Reserved Instance rates (yrTerm1Convertible.*, "
                          "yrTerm3Convertible.*)");
        else if (strstr(key, "InstanceSavings."))
            skip(&c->got, "EC2 Instance Savings Plans rates (yrTerm*InstanceSavings.*): "
                          "savings-plan-1y/-3y are Compute Savings Plans");
        else
            skip(&c->got, "linux.reserved keys of another kind");
    }
    return 0;
}

/* One region of a catalogued instance's pricing object (at: "[3].pricing.us-east-2"). */
static int vantage_region(struct pctx *c, const char *type, const char *region, const json_t *rv,
                          const char *at, const char *day, const char *ast)
{
    const struct tb_region *reg;
    const json_t *lin, *od, *res;
    char lp[320], rp[340];
    double usd;

    if (!region_shaped(region))
        return jbad(c, at, "not an AWS region code");
    reg = region_of(c->cat, region);
    if (!reg) {
        skip(&c->got, "prices in regions not in %s", c->cat->regions_name);
        return 0;
    }
    if (!strcmp(reg->partition, "aws-cn")) {
        skip(&c->got, "prices in China regions (ec2instances.info gives them in CNY)");
        return 0;
    }
    if (member(c, rv, at, "linux", JSON_OBJECT, false, &lin) < 0)
        return TB_EINPUT;
    if (!lin) {
        skip(&c->got, "regions without a Linux price");
        return 0;
    }
    snprintf(lp, sizeof lp, "%s.linux", at);
    if (member(c, lin, lp, "ondemand", JSON_STRING, false, &od) < 0 ||
        member(c, lin, lp, "reserved", JSON_OBJECT, false, &res) < 0)
        return TB_EINPUT;
    if (od) {
        if (money(c, lin, lp, "ondemand", &usd) != 0)
            return TB_EINPUT;
        if (usd > 0) {
            if (new_row(c, type, region, "on-demand", usd, day, ast,
                        "Linux on-demand rate (ec2instances.info key linux.ondemand, read by its "
                        "scraper from the AWS Price List)") != 0)
                return -1;
        } else
            skip(&c->got, "Linux on-demand rates of 0 (the scraper's placeholder for none)");
    }
    if (json_object_get(lin, "spot_min") || json_object_get(lin, "spot_max") ||
        json_object_get(lin, "spot_avg"))
        skip(&c->got, "spot figures (spot_min, spot_max, spot_avg): undated, spot_avg may be "
                      "an estimate; use --from spot-price-history");
    snprintf(rp, sizeof rp, "%s.reserved", lp);
    return res ? vantage_reserved(c, type, region, res, rp, day, ast) : 0;
}

/* One element of the array ([idx]); *instance_savings set when it has such a key. */
static int vantage_instance(struct pctx *c, const json_t *inst, size_t idx, const char *day,
                            bool *instance_savings)
{
    static const char *const NONE_PURCHASES[] = {"on-demand", "reserved-1y", "reserved-3y",
                                                 "savings-plan-1y", "savings-plan-3y"};
    const json_t *pricing, *rv;
    const char *region;
    char at[48], type[64], ast[96], p[300];

    snprintf(at, sizeof at, "[%zu]", idx);
    if (!json_is_object(inst))
        return jbad(c, at, "not an object (instances.json is an array of instances)");
    if (text(c, inst, at, "instance_type", true, type, sizeof type) < 0 ||
        member(c, inst, at, "pricing", JSON_OBJECT, true, &pricing) < 0)
        return TB_EINPUT;
    json_object_foreach((json_t *)pricing, region, rv)
    {
        const json_t *lin, *res, *v;
        const char *key;
        if (!json_is_object(rv)) {
            snprintf(p, sizeof p, "%s.pricing.%s", at, region);
            return jbad(c, p, "not an object");
        }
        lin = json_object_get(rv, "linux");
        res = json_is_object(lin) ? json_object_get(lin, "reserved") : NULL;
        json_object_foreach((json_t *)res, key,
                            v) if (strstr(key, "InstanceSavings.")) *instance_savings = true;
    }
    if (!tb_pricing_instance(c->cat, type)) {
        skip(&c->got, "instance types not in %s", c->cat->instances_name);
        return 0;
    }
    snprintf(ast, sizeof ast, "file modified %s (instances.json carries no date)", day);
    if (json_object_size(pricing) == 0) {
        char notes[512];
        snprintf(notes, sizeof notes,
                 "listed by ec2instances.info without a price: its instances.json has "
                 "\"pricing\": {} for %s (no on-demand, reserved or savings-plan rate in any "
                 "region of the AWS Price List as its scraper read it)",
                 type);
        for (size_t k = 0; k < sizeof NONE_PURCHASES / sizeof NONE_PURCHASES[0]; k++)
            if (new_row(c, type, "any", NONE_PURCHASES[k], NAN, day, ast, notes) != 0)
                return -1;
        return 0;
    }
    json_object_foreach((json_t *)pricing, region, rv)
    {
        snprintf(p, sizeof p, "%s.pricing.%s", at, region);
        if (vantage_region(c, type, region, rv, p, day, ast) != 0) {
            size_t n = strlen(c->err);
            snprintf(c->err + n, n < c->errlen ? c->errlen - n : 0, " (instance_type %s)", type);
            return TB_EINPUT;
        }
    }
    return 0;
}

static size_t skip_space(const char *s, size_t len, size_t off)
{
    while (off < len && (s[off] == ' ' || s[off] == '\t' || s[off] == '\n' || s[off] == '\r'))
        off++;
    return off;
}

/* "FILE: line L, column C: not valid JSON (why)" for a fault at chunk-relative (line,
 * column) of the text that starts at off. */
static int vantage_syntax(struct pctx *c, const char *s, size_t off, int line, int column,
                          const char *why)
{
    long l = 1, col = 1;
    for (size_t i = 0; i < off; i++)
        if (s[i] == '\n') {
            l++;
            col = 1;
        } else
            col++;
    if (line > 1) {
        l += line - 1;
        col = column;
    } else
        col += column > 0 ? column - 1 : 0;
    tb_err(c->err, c->errlen, "%s: line %ld, column %ld: not valid JSON (%s)", c->path, l, col,
           why);
    return TB_EINPUT;
}

/* The array, read one instance at a time (the real file is some 300 MB: one jansson
 * tree of it would take gigabytes), then the Savings keys' fate (see the header). */
static int import_vantage(struct pctx *c, const char *s, size_t len, const char *day)
{
    size_t off = skip_space(s, len, 0), idx = 0, kept = 0, dropped = 0;
    bool instance_savings = false;
    int rc = 0;

    if (off >= len || s[off] != '[') {
        tb_err(c->err, c->errlen,
               "%s: not a JSON array at the top (ec2instances.info's instances.json is one)",
               c->path);
        return TB_EINPUT;
    }
    off = skip_space(s, len, off + 1);
    if (off < len && s[off] == ']')
        off++;
    else
        for (;;) {
            json_error_t je;
            json_t *inst =
                json_loadb(s + off, len - off,
                           JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
            if (!inst)
                return vantage_syntax(c, s, off, je.line, je.column, je.text);
            rc = vantage_instance(c, inst, idx++, day, &instance_savings);
            json_decref(inst);
            if (rc != 0)
                return rc;
            off = skip_space(s, len, off + (size_t)je.position);
            if (off < len && s[off] == ',') {
                off = skip_space(s, len, off + 1);
                continue;
            }
            if (off < len && s[off] == ']') {
                off++;
                break;
            }
            return vantage_syntax(c, s, off, 1, 1,
                                  off < len ? "',' or ']' expected" : "the array does not end");
        }
    off = skip_space(s, len, off);
    if (off < len)
        return vantage_syntax(c, s, off, 1, 1, "data after the array");
    for (size_t i = 0; i < c->got.nrows; i++) {
        const struct tb_price_row *r = &c->got.rows[i];
        if (!instance_savings && !strncmp(r->purchase, "savings-plan", 12) &&
            !strcmp(r->status, "listed")) {
            dropped++;
            continue;
        }
        c->got.rows[kept++] = *r;
    }
    c->got.nrows = kept;
    if (dropped)
        skip_n(&c->got, V_SAVINGS_OLD, dropped);
    return 0;
}

/* ---- the file ---- */

static void base_name(const char *path, char *buf, size_t len)
{
    const char *s = strrchr(path, '/');
    snprintf(buf, len, "%s", s ? s + 1 : path);
}

int tb_price_import_file(struct tb_price_import *im, const struct tb_pricing *cat,
                         enum tb_price_format f, const char *path, const char *today, char *err,
                         size_t errlen)
{
    struct pctx c;
    char *data = NULL, name[160], file_day[12] = "";
    size_t len = 0;
    json_error_t je;
    json_t *root;
    struct stat st;
    int rc;

    if ((unsigned)f >= TB_PRICES_NFORMATS)
        return tb_err(err, errlen, "unknown price format");
    memset(&c, 0, sizeof c);
    c.cat = cat;
    c.path = path;
    c.err = err;
    c.errlen = errlen;
    base_name(path, name, sizeof name);
    snprintf(c.source, sizeof c.source, "%s (imported %s, %s)", FORMAT_TOOLS[f], name, today);
    if (tb_read_file(path, &data, &len, err, errlen) != 0)
        return -1;
    if (stat(path, &st) == 0) {
        struct tm tm;
        gmtime_r(&st.st_mtime, &tm);
        strftime(file_day, sizeof file_day, "%Y-%m-%d", &tm);
    }
    if (f == TB_PRICES_VANTAGE) { /* an array, read one element at a time */
        rc = import_vantage(&c, data, len, file_day);
        free(data);
        goto merge;
    }
    root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &je);
    free(data);
    if (!root) {
        tb_err(err, errlen, "%s: line %d, column %d: not valid JSON (%s)", path, je.line, je.column,
               je.text);
        return TB_EINPUT;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        tb_err(err, errlen, "%s: not a JSON object at the top (the AWS CLI writes one)", path);
        return TB_EINPUT;
    }
    switch (f) {
    case TB_PRICES_GET_PRODUCTS:
        rc = import_products(&c, root);
        break;
    case TB_PRICES_SPOT_HISTORY:
        rc = import_spot(&c, root);
        break;
    case TB_PRICES_CAPACITY_BLOCKS:
        rc = import_blocks(&c, root);
        break;
    default:
        rc = import_plans(&c, root, file_day);
        break;
    }
    json_decref(root);
merge:
    for (size_t i = 0; rc == 0 && i < c.got.nrows; i++)
        if (add_row(im, &c.got.rows[i]) != 0)
            rc = tb_err(err, errlen, "out of memory");
    for (size_t k = 0; rc == 0 && k < c.got.nskips; k++)
        skip_n(im, c.got.skips[k].why, c.got.skips[k].n);
    free(c.got.rows);
    return rc;
}

/* ---- merging into DIR/prices.csv ---- */

static const char *const COLS[] = {"instance", "region",     "purchase", "usd_per_hour", "status",
                                   "as_of",    "as_of_text", "source",   "notes",        NULL};

static const char *row_field(const struct tb_price_row *r, const char *col)
{
    if (!strcmp(col, "instance"))
        return r->instance;
    if (!strcmp(col, "region"))
        return r->region;
    if (!strcmp(col, "purchase"))
        return r->purchase;
    if (!strcmp(col, "usd_per_hour"))
        return r->usd_per_hour;
    if (!strcmp(col, "status"))
        return r->status;
    if (!strcmp(col, "as_of"))
        return r->as_of;
    if (!strcmp(col, "as_of_text"))
        return r->as_of_text;
    if (!strcmp(col, "source"))
        return r->source;
    if (!strcmp(col, "notes"))
        return r->notes;
    return "";
}

static bool same_price(const char *a, const char *b)
{
    double x, y;
    if (!*a || !*b)
        return !*a && !*b;
    return tb_parse_double(a, 0, 1e9, &x) == 0 && tb_parse_double(b, 0, 1e9, &y) == 0 &&
           fabs(x - y) <= 1e-9 * fmax(1, fabs(x));
}

/* Whether t already holds r (same instance, region, purchase, status, as_of and price). */
static bool in_table(const struct tb_csv_table *t, const struct tb_price_row *r)
{
    for (size_t i = 0; t && i < t->nrows; i++)
        if (!strcmp(tb_csv_field(t, i, "instance"), r->instance) &&
            !strcmp(tb_csv_field(t, i, "region"), r->region) &&
            !strcmp(tb_csv_field(t, i, "purchase"), r->purchase) &&
            !strcmp(tb_csv_field(t, i, "status"), r->status) &&
            !strcmp(tb_csv_field(t, i, "as_of"), r->as_of) &&
            same_price(tb_csv_field(t, i, "usd_per_hour"), r->usd_per_hour))
            return true;
    return false;
}

int tb_price_import_write(const struct tb_price_import *im, const char *dir, size_t *added,
                          char *err, size_t errlen)
{
    char path[4096];
    struct tb_csv_table t, *old = NULL;
    const char *const *cols = COLS;
    size_t ncols = 9;
    char *buf = NULL;
    size_t len = 0;
    FILE *m;
    int rc = 0;

    *added = 0;
    if (snprintf(path, sizeof path, "%s/prices.csv", dir) >= (int)sizeof path)
        return tb_err(err, errlen, "folder name too long: '%s'", dir);
    if (tb_mkdir_p(dir, err, errlen) != 0)
        return -1;
    if (tb_file_exists(path)) {
        if (tb_csv_load(&t, path, err, errlen) != 0)
            return TB_EINPUT;
        old = &t;
        if (tb_csv_require(old, COLS, err, errlen) != 0) {
            tb_csv_release(old);
            return TB_EINPUT;
        }
        cols = (const char *const *)old->header;
        ncols = old->ncols;
    }
    m = open_memstream(&buf, &len);
    if (!m) {
        if (old)
            tb_csv_release(old);
        return tb_err(err, errlen, "out of memory");
    }
    for (size_t k = 0; k < ncols; k++)
        rc |= tb_csv_put(m, cols[k], k + 1 < ncols ? ',' : '\n');
    for (size_t i = 0; old && i < old->nrows; i++)
        for (size_t k = 0; k < ncols; k++)
            rc |= tb_csv_put(m, tb_csv_get(old, i, (int)k), k + 1 < ncols ? ',' : '\n');
    for (size_t i = 0; i < im->nrows; i++) {
        if (in_table(old, &im->rows[i]))
            continue;
        for (size_t k = 0; k < ncols; k++)
            rc |= tb_csv_put(m, row_field(&im->rows[i], cols[k]), k + 1 < ncols ? ',' : '\n');
        (*added)++;
    }
    if (fclose(m) != 0 || rc != 0)
        rc = tb_err(err, errlen, "%s: cannot format the table", path);
    else if (*added)
        rc = tb_write_file_atomic(path, buf, len, err, errlen);
    free(buf);
    if (old)
        tb_csv_release(old);
    return rc;
}

void tb_price_import_release(struct tb_price_import *im)
{
    free(im->rows);
    memset(im, 0, sizeof *im);
}
