/* tests/unit/price_import.c: the AWS price readings importer (tb_price_import.h) on the
 * fixtures of tests/data/aws_prices/ (built from AWS's documented shapes): the values
 * each format gives, what is left out, errors naming file and JSON path, and the merge
 * into a prices.csv that tb_pricing_load then reads. */
#include "tb_price_import.h"
#include "tb_pricing.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct tb_price_row *find(const struct tb_price_import *im, const char *instance,
                                       const char *purchase)
{
    for (size_t i = 0; i < im->nrows; i++)
        if (!strcmp(im->rows[i].instance, instance) && !strcmp(im->rows[i].purchase, purchase))
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
    tb_pricing_release(&cat);
    free(dir);
    free(out);
    return 0;
}
