/* tests/unit/price_import.c: the price readings importer (tb_price_import.h) on the
 * fixtures of tests/data/aws_prices/ (built from AWS's documented shapes) and
 * tests/data/vantage/ (ec2instances.info's instances.json, written from its scraper's
 * code): the values each format gives, what is left out, errors naming file and JSON
 * path, and the merge into a prices.csv that tb_pricing_load then reads. */
#include "tb_price_import.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utime.h>

static const struct tb_price_row *find(const struct tb_price_import *im, const char *instance,
                                       const char *purchase)
{
    for (size_t i = 0; i < im->nrows; i++)
        if (!strcmp(im->rows[i].instance, instance) && !strcmp(im->rows[i].purchase, purchase))
            return &im->rows[i];
    return NULL;
}

static const struct tb_price_row *find_at(const struct tb_price_import *im, const char *instance,
                                          const char *region, const char *purchase)
{
    for (size_t i = 0; i < im->nrows; i++)
        if (!strcmp(im->rows[i].instance, instance) && !strcmp(im->rows[i].region, region) &&
            !strcmp(im->rows[i].purchase, purchase))
            return &im->rows[i];
    return NULL;
}

static double usd(const struct tb_price_row *r)
{
    return r && *r->usd_per_hour ? strtod(r->usd_per_hour, NULL) : NAN;
}

static int import(struct tb_price_import *im, const struct tb_pricing *cat, enum tb_price_format f,
                  const char *name, char *err, size_t errlen)
{
    char rel[256], *path;
    int rc;
    snprintf(rel, sizeof rel, "tests/data/aws_prices/%s", name);
    path = test_src_path(rel);
    rc = tb_price_import_file(im, cat, f, path, "2026-11-24", err, errlen);
    free(path);
    return rc;
}

/* tests/data/vantage/NAME, copied to build/tests/tmp/vantage/NAME with its modification
 * time set to 2026-11-20 12:00 UTC (a vantage file is dated by it); the copy's path. */
static char *vantage_copy(const char *name)
{
    char rel[256], *src, *dst, *data = NULL, err[512];
    size_t len = 0;
    struct utimbuf t;
    snprintf(rel, sizeof rel, "tests/data/vantage/%s", name);
    src = test_src_path(rel);
    snprintf(rel, sizeof rel, "vantage/%s", name);
    dst = test_tmp_path(rel);
    *strrchr(dst, '/') = '\0';
    if (tb_mkdir_p(dst, err, sizeof err) != 0)
        bail("%s", err);
    dst[strlen(dst)] = '/';
    if (tb_read_file(src, &data, &len, err, sizeof err) != 0 ||
        tb_write_file_atomic(dst, data, len, err, sizeof err) != 0)
        bail("%s", err);
    t.actime = t.modtime = 1795176000; /* 2026-11-20T12:00:00Z */
    if (utime(dst, &t) != 0)
        bail("cannot set the time of %s", dst);
    free(data);
    free(src);
    return dst;
}

static int vimport(struct tb_price_import *im, const struct tb_pricing *cat, const char *name,
                   char *err, size_t errlen)
{
    char rel[256], *path;
    int rc;
    snprintf(rel, sizeof rel, "tests/data/vantage/%s", name);
    path = test_src_path(rel);
    rc = tb_price_import_file(im, cat, TB_PRICES_VANTAGE, path, "2026-11-24", err, errlen);
    free(path);
    return rc;
}

/* The vantage format: each key's purchase model, what is left out, bad input refused. */
static void vantage(const struct tb_pricing *cat)
{
    struct tb_price_import im, old, bad;
    struct tb_pricing back;
    const struct tb_price_row *r;
    const struct tb_price *x;
    char err[2048] = "", why[4096], *path = vantage_copy("instances.json"), *dir;
    enum tb_price_format f;
    size_t added = 0, nnone = 0;

    memset(&im, 0, sizeof im);
    memset(&old, 0, sizeof old);
    memset(&bad, 0, sizeof bad);
    IS_INT(0, tb_price_format_from_string("vantage", &f), "format vantage by name");
    IS_INT(TB_PRICES_VANTAGE, f, "vantage");
    IS_INT(0,
           tb_price_import_file(&im, cat, TB_PRICES_VANTAGE, path, "2026-11-24", err, sizeof err),
           "vantage read: %s", err);
    IS_INT(14, (long long)im.nrows, "14 rows: 7 trn1, 1 p4d, 1 inf2, 5 none for trn2");
    r = find_at(&im, "trn1.32xlarge", "us-east-2", "on-demand");
    IS_DOUBLE(19.8765, usd(r), 1e-12, "on-demand from linux.ondemand");
    IS_STRING("2026-11-20", r ? r->as_of : "", "dated by the file's modification day");
    IS_STRING("file modified 2026-11-20 (instances.json carries no date)", r ? r->as_of_text : "",
              "and says so");
    IS_STRING("ec2instances.info instances.json (imported instances.json, 2026-11-24)",
              r ? r->source : "", "sourced by file and import day");
    r = find_at(&im, "trn1.32xlarge", "us-east-2", "reserved-1y");
    IS_DOUBLE(12.2, usd(r), 1e-12,
              "yrTerm1Standard.noUpfront -> reserved-1y (not dedicated's 15.1, not convertible)");
    OK(r && strstr(r->notes, "other payment options") && strstr(r->notes, "partialUpfront 11.9") &&
           strstr(r->notes, "allUpfront 11.6"),
       "Partial and All Upfront in the notes: %s", r ? r->notes : "");
    IS_DOUBLE(8.4, usd(find_at(&im, "trn1.32xlarge", "us-east-2", "reserved-3y")), 1e-12,
              "yrTerm3Standard.noUpfront -> reserved-3y");
    r = find_at(&im, "trn1.32xlarge", "us-east-2", "savings-plan-1y");
    IS_DOUBLE(14.6, usd(r), 1e-12,
              "yrTerm1Savings.noUpfront -> savings-plan-1y (not InstanceSavings' 12.8)");
    OK(r && strstr(r->notes, "Compute Savings Plan") && strstr(r->notes, "partialUpfront 14.25"),
       "a Compute Savings Plan, said: %s", r ? r->notes : "");
    IS_DOUBLE(10.3, usd(find_at(&im, "trn1.32xlarge", "us-east-2", "savings-plan-3y")), 1e-12,
              "yrTerm3Savings.noUpfront -> savings-plan-3y");
    IS_DOUBLE(22.1, usd(find_at(&im, "trn1.32xlarge", "eu-west-1", "on-demand")), 1e-12,
              "eu-west-1 on-demand");
    IS_DOUBLE(13.6, usd(find_at(&im, "trn1.32xlarge", "eu-west-1", "reserved-1y")), 1e-12,
              "eu-west-1 reserved-1y");
    IS_DOUBLE(40.3, usd(find_at(&im, "p4d.24xlarge", "us-east-1-atl-1", "on-demand")), 1e-12,
              "a Local Zone of a listed region is kept");
    OK(!find_at(&im, "trn1.32xlarge", "mx-central-1", "on-demand"),
       "a region not in regions.csv is left out");
    OK(!find_at(&im, "inf2.xlarge", "cn-northwest-1", "on-demand"), "China (CNY) is left out");
    OK(!find_at(&im, "inf2.xlarge", "us-east-1", "on-demand"), "an on-demand of \"0\" is no price");
    IS_DOUBLE(0.5432, usd(find_at(&im, "inf2.xlarge", "us-east-1", "savings-plan-1y")), 1e-12,
              "but its savings plan rate is kept");
    OK(!find(&im, "m7i.large", "on-demand"), "types outside instances.csv left out");
    OK(!find(&im, "trn1.32xlarge", "spot"), "no spot row (undated)");
    for (size_t i = 0; i < im.nrows; i++)
        if (!strcmp(im.rows[i].instance, "trn2.48xlarge") && !strcmp(im.rows[i].region, "any") &&
            !strcmp(im.rows[i].status, "none") && !*im.rows[i].usd_per_hour &&
            strstr(im.rows[i].notes, "listed by ec2instances.info without a price"))
            nnone++;
    IS_INT(5, (long long)nnone, "\"pricing\": {} -> 5 none rows (on-demand, reserved, savings)");
    OK(find_at(&im, "trn2.48xlarge", "any", "savings-plan-3y") != NULL,
       "savings-plan-3y among them");
    IS_INT(8, (long long)im.skipped, "8 left out");
    tb_price_import_skipped(&im, why, sizeof why);
    OK(strstr(why, "1 x instance types not in ") && strstr(why, "instances.csv\n") &&
           strstr(why, "1 x prices in regions not in ") && strstr(why, "regions.csv\n") &&
           strstr(why, "1 x prices in China regions") &&
           strstr(why, "1 x Linux on-demand rates of 0") && strstr(why, "1 x spot figures") &&
           strstr(why, "1 x Convertible Reserved Instance") &&
           strstr(why, "1 x EC2 Instance Savings Plans") &&
           strstr(why, "1 x regions without a Linux price"),
       "each reason, counted:\n%s", why);

    /* a file without any InstanceSavings key: its Savings keys may be either plan */
    free(path);
    path = vantage_copy("instances-before-2026-07.json");
    IS_INT(0,
           tb_price_import_file(&old, cat, TB_PRICES_VANTAGE, path, "2026-11-24", err, sizeof err),
           "an older file read: %s", err);
    IS_INT(2, (long long)old.nrows, "on-demand and reserved-1y only");
    OK(!find(&old, "trn1.32xlarge", "savings-plan-1y") &&
           !find(&old, "trn1.32xlarge", "savings-plan-3y"),
       "no savings-plan row from it");
    tb_price_import_skipped(&old, why, sizeof why);
    OK(strstr(why, "2 x Savings keys of a file with no InstanceSavings key") != NULL, "%s", why);

    /* bad input: file and JSON path named, nothing appended */
    IS_INT(-2, vimport(&bad, cat, "bad-price.json", err, sizeof err),
           "a price that is not a number");
    OK(strstr(err, "bad-price.json: [1].pricing.us-east-1.linux.ondemand: not a price: 'abc' "
                   "(instance_type inf2.xlarge)") != NULL,
       "%s", err);
    IS_INT(0, (long long)bad.nrows, "nothing kept from it (its first instance was fine)");
    IS_INT(-2, vimport(&bad, cat, "number-price.json", err, sizeof err),
           "a price as a JSON number");
    OK(strstr(err,
              "number-price.json: [0].pricing.us-east-2.linux.ondemand: not a string: a number") !=
           NULL,
       "%s", err);
    IS_INT(-2, vimport(&bad, cat, "pricing-not-object.json", err, sizeof err),
           "\"pricing\" not an object");
    OK(strstr(err, "pricing-not-object.json: [0].pricing: not an object: an array") != NULL, "%s",
       err);
    IS_INT(-2, vimport(&bad, cat, "bad-region.json", err, sizeof err), "a region key not a code");
    OK(strstr(err, "bad-region.json: [0].pricing.US East (Ohio): not an AWS region code") != NULL,
       "%s", err);
    IS_INT(-2, vimport(&bad, cat, "bad-syntax.json", err, sizeof err), "not JSON");
    OK(strstr(err, "bad-syntax.json: line 5, column 3: not valid JSON") != NULL, "%s", err);
    {
        char *gp = test_src_path("tests/data/aws_prices/get-products.json");
        IS_INT(
            -2,
            tb_price_import_file(&bad, cat, TB_PRICES_VANTAGE, gp, "2026-11-24", err, sizeof err),
            "the wrong format");
        OK(strstr(err, "get-products.json: not a JSON array at the top") != NULL, "%s", err);
        free(gp);
    }
    IS_INT(0, (long long)bad.nrows, "nothing appended by any bad file");

    /* the merge: the folder loads (Local Zone and "any" regions pass), lookups use it */
    dir = test_tmp_path("vantage/prices");
    {
        char old_csv[4200];
        snprintf(old_csv, sizeof old_csv, "%s/prices.csv", dir);
        remove(old_csv);
    }
    IS_INT(0, tb_price_import_write(&im, dir, &added, err, sizeof err), "written: %s", err);
    IS_INT(14, (long long)added, "14 rows");
    IS_INT(0, tb_pricing_load(&back, dir, err, sizeof err), "the folder loads: %s", err);
    IS_INT(0,
           tb_pricing_best(&back, "trn1.32xlarge", "eu-west-1", "reserved-1y", &x, why, sizeof why),
           "reserved-1y in eu-west-1 priced from it");
    IS_DOUBLE(13.6, x ? x->usd_per_hour : NAN, 1e-12, "at the imported price");
    IS_INT(1,
           tb_pricing_best(&back, "trn2.48xlarge", "us-east-2", "reserved-1y", &x, why, sizeof why),
           "trn2 reserved-1y: none, with why");
    OK(strstr(why, "listed by ec2instances.info without a price") != NULL, "%s", why);
    tb_pricing_release(&back);

    free(path);
    free(dir);
    tb_price_import_release(&im);
    tb_price_import_release(&old);
    tb_price_import_release(&bad);
}

int main(void)
{
    struct tb_pricing cat, back;
    struct tb_price_import im, bad;
    const struct tb_price_row *r;
    const struct tb_price *x;
    char err[2048] = "", why[2048];
    char *dir = test_src_path("pricing"), *out = test_tmp_path("price_import");
    enum tb_price_format f;
    size_t added = 0;

    plan_lazy();
    if (tb_pricing_load(&cat, dir, err, sizeof err) != 0)
        bail("%s", err);
    memset(&im, 0, sizeof im);
    memset(&bad, 0, sizeof bad);
    IS_INT(0, tb_price_format_from_string("capacity-block-offerings", &f), "format by name");
    IS_INT(TB_PRICES_CAPACITY_BLOCKS, f, "capacity-block-offerings");
    IS_INT(-1, tb_price_format_from_string("csv", &f), "an unknown format");

    /* get-products */
    IS_INT(0, import(&im, &cat, TB_PRICES_GET_PRODUCTS, "get-products.json", err, sizeof err),
           "get-products read: %s", err);
    IS_INT(4, (long long)im.nrows, "4 rows: on-demand, reserved-1y, reserved-3y, a none row");
    r = find(&im, "trn1.32xlarge", "on-demand");
    IS_DOUBLE(20.1234, usd(r), 1e-12, "on-demand from pricePerUnit.USD");
    IS_STRING("us-east-2", r ? r->region : "", "region from regionCode");
    IS_STRING("2026-11-01", r ? r->as_of : "", "dated by effectiveDate");
    OK(r && !strcmp(r->source, "aws pricing get-products (imported get-products.json, 2026-11-24)"),
       "sourced: %s", r ? r->source : "");
    IS_DOUBLE(14.1, usd(find(&im, "trn1.32xlarge", "reserved-1y")), 1e-12,
              "1yr standard No Upfront -> reserved-1y");
    IS_DOUBLE(9.2, usd(find(&im, "trn1.32xlarge", "reserved-3y")), 1e-12,
              "3yr standard No Upfront -> reserved-3y");
    r = find(&im, "trn1.32xlarge", "reserved-1y");
    OK(r && strstr(r->notes, "No Upfront"), "the payment option is in the notes");
    r = find(&im, "trn2.48xlarge", "on-demand");
    OK(r && !strcmp(r->status, "none") && !*r->usd_per_hour,
       "Capacity Block products only: a none row, not their $0.00");
    OK(r && strstr(r->notes, "CapacityBlock only"), "saying so: %s", r ? r->notes : "");
    OK(find(&im, "m7i.large", "on-demand") == NULL, "types outside instances.csv left out");
    IS_INT(5, (long long)im.skipped, "5 left out: All Upfront, convertible, Windows, CB, m7i");
    tb_price_import_skipped(&im, why, sizeof why);
    OK(strstr(why, "2 x Reserved terms other than standard, No Upfront") != NULL,
       "the reasons, counted");

    /* spot: each zone's newest price; the row is the cheapest zone */
    IS_INT(0, import(&im, &cat, TB_PRICES_SPOT_HISTORY, "spot-price-history.json", err, sizeof err),
           "spot read: %s", err);
    r = find(&im, "trn1.32xlarge", "spot");
    IS_DOUBLE(2.15, usd(r), 1e-12, "cheapest zone's newest price (us-east-2c)");
    IS_STRING("2026-11-19", r ? r->as_of : "", "dated by its Timestamp");
    OK(r && strstr(r->notes, "range 2.15-4.5") && strstr(r->notes, "us-east-2a 2.9 (") &&
           !strstr(r->notes, " 3.1 "),
       "zone a's newer 2.9, not its older 3.1; the range: %s", r ? r->notes : "");

    /* Capacity Blocks: UpfrontFee / (hours x count) */
    IS_INT(0,
           import(&im, &cat, TB_PRICES_CAPACITY_BLOCKS, "capacity-block-offerings.json", err,
                  sizeof err),
           "capacity blocks read: %s", err);
    r = find(&im, "trn2.48xlarge", "capacity-block");
    IS_DOUBLE(35, usd(r), 1e-12, "840 / (24 h x 1) = 35, the lower of 35 and 3600/(48x2)=37.5");
    IS_STRING("2026-11-25", r ? r->as_of : "", "dated by StartDate");
    IS_DOUBLE(160, usd(find(&im, "u-trn2x64", "capacity-block")), 1e-12,
              "UltraServer block: 3840 / (24 h x 1 UltraServer)");

    /* Savings Plans rates */
    IS_INT(
        0,
        import(&im, &cat, TB_PRICES_SAVINGS_PLAN_RATES, "savings-plan-rates.json", err, sizeof err),
        "savings plans read: %s", err);
    IS_DOUBLE(15.05, usd(find(&im, "trn1.32xlarge", "savings-plan-1y")), 1e-12,
              "Compute 1yr No Upfront -> savings-plan-1y (the EC2 Instance plan left out)");

    /* bad input: file and JSON path named, nothing appended */
    IS_INT(
        -2,
        import(&bad, &cat, TB_PRICES_GET_PRODUCTS, "get-products-bad-price.json", err, sizeof err),
        "a price that is not a number");
    OK(strstr(err, "get-products-bad-price.json: PriceList[1].terms.OnDemand.") &&
           strstr(err, ".pricePerUnit.USD: not a price: 'abc'"),
       "%s", err);
    IS_INT(0, (long long)bad.nrows, "nothing kept from it (its first product was fine)");
    IS_INT(-2, import(&bad, &cat, TB_PRICES_SPOT_HISTORY, "bad-syntax.json", err, sizeof err),
           "not JSON");
    OK(strstr(err, "bad-syntax.json: line 3, column") && strstr(err, "not valid JSON"), "%s", err);
    IS_INT(-2, import(&bad, &cat, TB_PRICES_SPOT_HISTORY, "get-products.json", err, sizeof err),
           "the wrong format");
    OK(strstr(err, "get-products.json: SpotPriceHistory: missing") != NULL, "%s", err);
    IS_INT(-1, import(&bad, &cat, TB_PRICES_SPOT_HISTORY, "absent.json", err, sizeof err),
           "a missing file");

    /* the merge: written, loaded, not duplicated */
    {
        char old[4200];
        snprintf(old, sizeof old, "%s/prices.csv", out);
        remove(old); /* a previous run's */
    }
    IS_INT(0, tb_price_import_write(&im, out, &added, err, sizeof err), "written: %s", err);
    IS_INT(8, (long long)added, "8 rows");
    IS_INT(0, tb_pricing_load(&back, out, err, sizeof err), "the folder loads: %s", err);
    IS_INT(0,
           tb_pricing_best(&back, "trn1.32xlarge", "us-east-2", "on-demand", &x, why, sizeof why),
           "priced from it");
    IS_DOUBLE(20.1234, x ? x->usd_per_hour : NAN, 1e-12, "at the imported price");
    IS_INT(1,
           tb_pricing_best(&back, "trn2.48xlarge", "us-east-2", "on-demand", &x, why, sizeof why),
           "trn2 on-demand: none, with why");
    OK(strstr(why, "no public on-demand price for 'trn2.48xlarge'") != NULL, "%s", why);
    tb_pricing_release(&back);
    IS_INT(0, tb_price_import_write(&im, out, &added, err, sizeof err), "written again");
    IS_INT(0, (long long)added, "nothing added twice");

    tb_price_import_release(&im);
    tb_price_import_release(&bad);
    vantage(&cat);
    tb_pricing_release(&cat);
    free(dir);
    free(out);
    return 0;
}
