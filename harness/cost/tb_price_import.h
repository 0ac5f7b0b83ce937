/*
 * harness/cost/tb_price_import.h: AWS's own price readings, as the AWS CLI writes them,
 * turned into pricing/prices.csv rows (columns in pricing/README.md) and merged into a
 * folder's prices.csv (`trnbench prices import`).
 *
 * The formats, as AWS documents them (read in the API references, not from a capture):
 *
 *   get-products   `aws pricing get-products --service-code AmazonEC2 ...` (Price List
 *                  Query API, GetProducts: FormatVersion, PriceList (an array of JSON
 *                  strings, one product each), NextToken; a product is the price list
 *                  file's product and terms: product.attributes (instanceType,
 *                  regionCode, operatingSystem, tenancy, preInstalledSw, capacitystatus,
 *                  marketoption), terms.OnDemand and terms.Reserved, each term with
 *                  effectiveDate, termAttributes (LeaseContractLength, OfferingClass,
 *                  PurchaseOption) and priceDimensions (unit, pricePerUnit.USD)). Billing
 *                  User Guide, "Reading the service price list file for an AWS service".
 *   spot-price-history  `aws ec2 describe-spot-price-history` (EC2 API
 *                  DescribeSpotPriceHistory: SpotPriceHistory[] of SpotPrice:
 *                  AvailabilityZone, InstanceType, ProductDescription, SpotPrice (a
 *                  string, USD per hour), Timestamp).
 *   capacity-block-offerings  `aws ec2 describe-capacity-block-offerings` (EC2 API
 *                  DescribeCapacityBlockOfferings: CapacityBlockOfferings[] of
 *                  CapacityBlockOffering: CapacityBlockOfferingId, InstanceType,
 *                  AvailabilityZone, InstanceCount, StartDate, EndDate,
 *                  CapacityBlockDurationHours (+ CapacityBlockDurationMinutes),
 *                  UpfrontFee (a string, the whole reservation), CurrencyCode, Tenancy,
 *                  UltraserverType and UltraserverCount for an UltraServer block).
 *   savings-plan-rates  `aws savingsplans describe-savings-plans-offering-rates`
 *                  (Savings Plans API DescribeSavingsPlansOfferingRates: searchResults[]
 *                  of SavingsPlanOfferingRate: savingsPlanOffering (planType,
 *                  paymentOption, durationSeconds, currency), rate (a string), unit,
 *                  usageType, operation, properties[] of {name, value}: region,
 *                  instanceType, productDescription, tenancy). Savings Plans are not in
 *                  get-products: AWS publishes them in this separate list.
 *   vantage        ec2instances.info's public instances.json
 *                  (https://instances.vantage.sh/instances.json, no credentials), as its
 *                  scraper writes it (vantage-sh/ec2instances.info, scraper/aws/ec2/:
 *                  ec2_instance.go EC2Instance and EC2PricingData, process_data.go,
 *                  reserved_pricing.go; scraper/aws/awsutils/get_savings_plans.go): a JSON
 *                  array of instances, each with instance_type and pricing, an object of
 *                  region code -> operating system ("linux", "mswin", "dedicated", ...) ->
 *                  {ondemand, reserved: {TERM: rate}, spot_min, spot_max, spot_avg, ...};
 *                  every rate a string, USD per hour. TERM is yrTerm1|yrTerm3, then
 *                  Standard|Convertible (Reserved Instances; the rate includes the upfront
 *                  fee spread over the term's hours), Savings (Compute Savings Plans) or
 *                  InstanceSavings (EC2 Instance Savings Plans), then .noUpfront,
 *                  .partialUpfront or .allUpfront. An instance AWS lists without any
 *                  price has "pricing": {}. The file carries no date.
 *                  tests/data/vantage/README.md gives the details and the commits read.
 *
 * What is kept: Linux, shared tenancy, no pre-installed software, capacitystatus Used,
 * USD; on-demand, Reserved Instances standard No Upfront 1yr/3yr (reserved-1y/-3y),
 * Compute Savings Plans No Upfront 1yr/3yr (savings-plan-1y/-3y), spot (each zone's
 * newest price; the row is the cheapest zone's, the notes give every zone and the
 * range), Capacity Blocks (UpfrontFee / (hours x instances or UltraServers); the row is
 * the lowest offering, the notes give the range). A get-products file that has products
 * for an instance and region but no on-demand price (Capacity Block products only)
 * gives a `none` row saying so. From a vantage file: linux.ondemand (on-demand),
 * yrTerm1Standard.noUpfront / yrTerm3Standard.noUpfront (reserved-1y/-3y) and
 * yrTerm1Savings.noUpfront / yrTerm3Savings.noUpfront (savings-plan-1y/-3y, Compute
 * Savings Plans), in the regions of regions.csv (a Local Zone of one included) outside
 * China (whose prices are in CNY); the same term's Partial and All Upfront rates go into
 * the No Upfront row's notes; an instance listed with "pricing": {} gives `none` rows for
 * those five purchase models, region `any`. Left out and counted: Convertible RIs, EC2
 * Instance Savings Plans, spot (undated; spot_avg may be an estimate), an on-demand of
 * "0" (the scraper's "no price"), and the Savings keys of a file with no InstanceSavings
 * key (written before the scraper told the two plan types apart: either plan's rate).
 * Everything else is counted in `skipped` with why.
 *
 * Every row is dated by the data (effectiveDate, Timestamp, StartDate; a Savings Plans
 * response and a vantage file carry no date: the file's modification date, said so) and
 * sourced "aws pricing get-products (imported FILE, DATE)" ("ec2instances.info
 * instances.json (imported FILE, DATE)") with FILE the file's name and DATE the day of
 * the import.
 */
#ifndef TB_PRICE_IMPORT_H
#define TB_PRICE_IMPORT_H

#include "tb_pricing.h"

#include <stddef.h>

enum tb_price_format {
    TB_PRICES_GET_PRODUCTS,
    TB_PRICES_SPOT_HISTORY,
    TB_PRICES_CAPACITY_BLOCKS,
    TB_PRICES_SAVINGS_PLAN_RATES,
    TB_PRICES_VANTAGE,
};
#define TB_PRICES_NFORMATS 5

/* "get-products", "spot-price-history", "capacity-block-offerings", "savings-plan-rates",
 * "vantage". */
const char *tb_price_format_to_string(enum tb_price_format f);
/* The name above to the format; -1 for any other. */
int tb_price_format_from_string(const char *s, enum tb_price_format *f);

/* One prices.csv row. */
struct tb_price_row {
    char instance[64];
    char region[40];
    char purchase[24];
    char usd_per_hour[32]; /* as written, "" for status none */
    char status[12];       /* listed | none */
    char as_of[12];        /* YYYY-MM-DD */
    char as_of_text[128];
    char source[256];
    char notes[1024];
};

struct tb_price_import {
    struct tb_price_row *rows; /* owned */
    size_t nrows, cap;
    size_t skipped; /* products, terms, records, offerings, instances, regions or rates
                       left out */
    struct {
        char why[160];
        size_t n;
    } skips[16]; /* each reason, with its count (the 16th gathers any further) */
    size_t nskips;
};

/* Read path (one format) and append its rows to im. Only instance types in cat's
 * instances.csv are kept (others are skipped and counted). today (YYYY-MM-DD) goes into
 * each row's source. Returns 0; -2 on bad input with "FILE: JSON.PATH: why" in err and
 * nothing appended; -1 when the file cannot be read. */
int tb_price_import_file(struct tb_price_import *im, const struct tb_pricing *cat,
                         enum tb_price_format f, const char *path, const char *today, char *err,
                         size_t errlen);
/* Merge im's rows into dir/prices.csv (created, with dir, when absent): rows already
 * there (same instance, region, purchase, price, status and as_of) are not added again;
 * the file's own rows and columns are kept. Written atomically. *added gets the count.
 * Returns 0, -2 when the existing file is not a prices table, -1 on a write error. */
int tb_price_import_write(const struct tb_price_import *im, const char *dir, size_t *added,
                          char *err, size_t errlen);
/* What was left out, one "N x why" line per reason, into buf ("" when nothing). */
void tb_price_import_skipped(const struct tb_price_import *im, char *buf, size_t len);
void tb_price_import_release(struct tb_price_import *im);

#endif
