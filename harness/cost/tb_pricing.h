/*
 * harness/cost/tb_pricing.h: the catalogue and price tables in pricing/ (chips.csv,
 * instances.csv, prices.csv, and regions.csv: the AWS region codes a price or a --region
 * may name; columns in pricing/README.md), loaded with tb_csv_load, looked up by header
 * name and validated field by field.
 *
 * Ownership: a struct tb_pricing owns the three CSV tables and the row arrays; every
 * `const char *` in a tb_chip, tb_instance or tb_price points into those tables and
 * lives until tb_pricing_release. Lookups return borrowed pointers. Not thread-safe
 * while loading; read-only lookups afterwards are.
 *
 * Prices are per instance-hour in USD. A price row has a status: `listed` (a published
 * price), `secondary` (a published price known only through a secondary summary, with a
 * second source that agrees: used like `listed`, but weak, and the report says so beside
 * every saving that rests on it), `none` (a source says there is no public price:
 * usd_per_hour is empty), `suspect` or `rejected` (kept for the record, never used by a
 * lookup).
 */
#ifndef TB_PRICING_H
#define TB_PRICING_H

#include "tb_csv.h"
#include "tb_range.h"

#include <stdbool.h>
#include <stddef.h>

/* One accelerator (chips.csv). Figures the source does not give are NAN (or 0 for
 * the integers). */
struct tb_chip {
    const char *chip; /* key, e.g. "trainium2" */
    const char *name; /* vendor's name, e.g. "Trainium2" */
    const char *vendor;
    long year;
    double bf16_dense_tflops; /* per chip, dense */
    double fp8_dense_tflops;
    double fp32_tflops;
    double tf32_tflops;
    double fp4_dense_tflops;
    double hbm_gib;  /* as the vendor states it (GB or GiB: see notes) */
    double hbm_tbps; /* memory bandwidth, TB/s */
    double sram_mib;
    long cores;
    const char *core_type; /* "NeuronCore-v3", "SM" */
    double interconnect_gbps;
    double tdp_w;
    const char *as_of; /* ISO date (YYYY[-MM[-DD]]) or "" */
    const char *source;
    const char *notes;
    long line; /* line in chips.csv */
};

/* One instance type or UltraServer (instances.csv). */
struct tb_instance {
    const char *instance;    /* EC2 type, e.g. "trn1.32xlarge" */
    const char *kind;        /* "instance" or "ultraserver" */
    const char *accelerator; /* as the source names it */
    const char *chip;        /* key into chips.csv */
    long accel_count;        /* chips (physical packages) in the instance, >= 1 */
    long vcpu;               /* 0 when not published */
    double mem_gib;          /* host memory; NAN when not published */
    double accel_mem_gib;    /* all chips together; NAN when not published */
    double network_gbps;     /* NAN when not published */
    const char *as_of;
    const char *source;
    const char *notes;
    long line;
};

/* One price observation (prices.csv). */
struct tb_price {
    const char *instance;
    const char *region;     /* AWS region code, "any" or "unspecified" */
    const char *purchase;   /* on-demand, spot, capacity-block, reserved-1y, ... */
    double usd_per_hour;    /* NAN when status is "none" */
    const char *status;     /* listed | secondary | none | suspect | rejected */
    const char *as_of;      /* ISO date (YYYY[-MM[-DD]]) or "" when undated */
    const char *as_of_text; /* the date as the source gives it */
    const char *source;
    const char *notes;
    long line; /* line in prices.csv */
};

/* One AWS region (regions.csv). */
struct tb_region {
    const char *region;    /* code, e.g. "us-west-1" */
    const char *name;      /* "US West (N. California)" */
    const char *partition; /* "aws", "aws-cn", "aws-us-gov" */
    const char *source;
    long line;
};

/* A user's discount for a purchase model (`--discount savings-plan-1y=0.28`): that
 * purchase model's price of an instance in a region is its on-demand price there less the
 * fraction, labelled as the user's own. It stands in for rates no public source gives
 * (AWS publishes no machine-readable savings-plan rate for these instances) and wins over
 * a table row of that purchase model, as --usd-per-hour wins over the table. */
#define TB_PRICING_NDISCOUNT 6 /* every purchase model but on-demand */
struct tb_pricing_discount {
    char purchase[32]; /* one of TB_PRICING_PURCHASES other than on-demand */
    double fraction;   /* off on-demand, in (0, 1) */
};
struct tb_pricing_discounts {
    struct tb_pricing_discount d[TB_PRICING_NDISCOUNT]; /* in the order given */
    size_t n;
};
/* Add one "PURCHASE=FRACTION" to ds. Returns 0, or -1 with e.g. "--discount: unknown
 * purchase model 'lease' (...)", "--discount: not a fraction in (0, 1): 'savings-plan-1y=28'",
 * "--discount: savings-plan-1y given twice" (ds unchanged). */
int tb_pricing_discount_add(struct tb_pricing_discounts *ds, const char *arg, char *err,
                            size_t errlen);
/* ds's discount for purchase, or NULL. */
const struct tb_pricing_discount *tb_pricing_discount_of(const struct tb_pricing_discounts *ds,
                                                         const char *purchase);
/* "user discount 28% off on-demand, given on the command line": how a report labels it. */
void tb_pricing_discount_text(const struct tb_pricing_discount *d, char *buf, size_t len);

struct tb_pricing {
    struct tb_csv_table chips_csv;     /* owned */
    struct tb_csv_table instances_csv; /* owned */
    struct tb_csv_table prices_csv;    /* owned */
    struct tb_csv_table regions_csv;   /* owned */
    struct tb_chip *chips;             /* owned: nchips */
    size_t nchips;
    struct tb_instance *instances; /* owned: ninstances, in file order */
    size_t ninstances;
    struct tb_price *prices; /* owned: nprices, in file order */
    size_t nprices;
    struct tb_region *regions; /* owned: nregions, in file order */
    size_t nregions;
    /* the tables as reasons name them: "pricing/prices.csv" for the data folder's (no
     * machine's path in a report), else the path given */
    char instances_name[512], prices_name[512], regions_name[512];
    /* the user's discounts (empty after a load: set them after tb_pricing_load), applied
     * by tb_pricing_target_price and tb_pricing_host_price, never by tb_pricing_best */
    struct tb_pricing_discounts discounts;
};

/* Load dir/prices.csv with dir/chips.csv, dir/instances.csv and dir/regions.csv (dir
 * NULL: the data folder's pricing/, see tb_datadir). A folder of one's own may hold only
 * prices.csv (what `trnbench prices import` writes): each of the other three it lacks
 * comes from the data folder's pricing/. Every numeric field is checked, every
 * instance's chip must be in chips.csv, every price's instance in instances.csv and its
 * region in regions.csv ("any", "unspecified" and a Local Zone "REGION-xxx" of a listed
 * region also pass). Returns 0, or -1 with e.g.
 * "pricing/prices.csv: line 12: field 'usd_per_hour': not a number: 'abc'"; p is then
 * empty (safe to release). */
/* The numeric fields of chips.csv, instances.csv and prices.csv and their ranges
 * (README.md, "Input ranges"). */
extern const struct tb_range TB_CHIPS_RANGES[];
extern const struct tb_range TB_INSTANCES_RANGES[];
extern const struct tb_range TB_PRICES_RANGES[];

int tb_pricing_load(struct tb_pricing *p, const char *dir, char *err, size_t errlen);
/* The same with the four paths given one by one. */
int tb_pricing_load_files(struct tb_pricing *p, const char *chips_csv, const char *instances_csv,
                          const char *prices_csv, const char *regions_csv, char *err,
                          size_t errlen);
/* Free everything p owns and zero it. */
void tb_pricing_release(struct tb_pricing *p);

/* Instance type or chip key -> its row, or NULL. */
const struct tb_instance *tb_pricing_instance(const struct tb_pricing *p, const char *type);
const struct tb_chip *tb_pricing_chip(const struct tb_pricing *p, const char *chip);
/* All instances in file order; returns the count and sets *out. */
size_t tb_pricing_instances(const struct tb_pricing *p, const struct tb_instance **out);

/* The purchase models a price row or a user may name, as one text for messages. */
#define TB_PRICING_PURCHASES                                                                       \
    "on-demand, reserved-1y, reserved-3y, savings-plan-1y, savings-plan-3y, spot, capacity-block"
/* Whether purchase is one of TB_PRICING_PURCHASES. */
bool tb_pricing_known_purchase(const char *purchase);
/* Whether region is an AWS region of regions.csv or some row of prices.csv names it (a
 * Local Zone such as "us-east-1-dfw"). A real region without a price row is known: its
 * targets then have no price, with the reason. */
bool tb_pricing_known_region(const struct tb_pricing *p, const char *region);
/* The regions.csv row of code, or NULL. */
const struct tb_region *tb_pricing_region(const struct tb_pricing *p, const char *code);
/* Check a (region, purchase) choice: 0, or -1 with e.g. "unknown region 'mars-1' (no
 * row of pricing/regions.csv or pricing/prices.csv names it)" or "unknown purchase model
 * 'lease' (on-demand, ...)". NULL means the default and passes. */
int tb_pricing_check_choice(const struct tb_pricing *p, const char *region, const char *purchase,
                            char *err, size_t errlen);

/* The best price for (instance, region, purchase): among the rows with status listed,
 * secondary or none whose region is `region` or "any" and whose purchase is `purchase` or "any",
 * the newest as_of wins (undated rows lose to dated ones; ties go to the earlier line).
 * Returns 0 with *out set to a listed or secondary row, or 1 when there is no price, with *out the
 * row saying so (or NULL when no row matched) and the reason in why, e.g.
 *   "no public on-demand price for 'trn2.48xlarge' in 'us-east-2' (as of 2026-10-03): ..."
 */
int tb_pricing_best(const struct tb_pricing *p, const char *instance, const char *region,
                    const char *purchase, const struct tb_price **out, char *why, size_t whylen);

/* The price that applies to a run, and where it comes from. */
struct tb_price_choice {
    bool have; /* a price applies; else why says why not */
    double usd_per_hour;
    char instance[64]; /* instance type priced, or "" */
    char region[32];
    char purchase[32];
    char as_of[96];   /* ISO date, or the source's text when undated */
    char source[512]; /* the price row's source, or "user-given (--usd-per-hour)", or
                         "user discount 28% off on-demand, given on the command line
                         (--discount savings-plan-1y=0.28), of on-demand $X/h: SOURCE" */
    long line;        /* line in prices.csv (the on-demand row a discount is taken off),
                         0 when user-given */
    double discount;  /* the user's fraction off on-demand this price is (--discount), or 0 */
    bool secondary;   /* from a row of status secondary: a weak price (see above) */
    char why[512];    /* when !have: "no price: <reason>"-style reason */
};

/* The host's price. usd_per_hour (not NAN) is a user-given rate and wins: it is the
 * price actually paid (a negotiated or Capacity Block rate); instance, when given, then
 * only names what was priced. Else instance (not NULL) must be in instances.csv (else
 * -1, "unknown instance type 'x' (not in .../instances.csv)") and its best price for
 * (region, purchase) applies, or none with the reason. With neither, no price: "no
 * --instance or --usd-per-hour given". region/purchase NULL: us-east-1, on-demand.
 * Returns 0 (check out->have) or -1 on error. */
int tb_pricing_host_price(const struct tb_pricing *p, const char *instance, const char *region,
                          const char *purchase, double usd_per_hour, struct tb_price_choice *out,
                          char *err, size_t errlen);

/* The price of a catalogued target (an instance type in a results row), as above
 * without a user rate. With a user's discount for purchase (p->discounts): the on-demand
 * price in region less it (usd_per_hour, as_of and line those of the on-demand row,
 * discount set, source saying so), or none when there is no on-demand price to take it
 * off, with the reason. Returns 0 (check out->have) or -1 when target is not in the
 * catalogue. */
int tb_pricing_target_price(const struct tb_pricing *p, const char *target, const char *region,
                            const char *purchase, struct tb_price_choice *out, char *err,
                            size_t errlen);

/* ---- purchase models as AWS sells them ---- */

/* A job of `hours` wall-clock hours on `instances` instances bought as EC2 Capacity Blocks
 * for ML, as AWS sells them (EC2 User Guide, "Find and purchase Capacity Blocks"): a
 * block lasts whole days, in 1-day steps up to 14 days and 7-day steps up to 182 days
 * (so 1..14, 21, 28, ..., 182), holds at most 64 instances, is paid up front, and
 * accounts hold at most 256 instances across blocks. A job longer than 182 days buys
 * consecutive blocks (182-day ones, then the rest rounded as above). usd is what is paid:
 * days x 24 x instances x usd_per_hour; used is the share of the bought hours the job
 * uses. Returns 0, or -1 (out left NAN) unless every figure is positive and finite and
 * instances a whole number. */
#define TB_CBLOCK_MAX_DAYS          182
#define TB_CBLOCK_DAILY_UNTIL       14
#define TB_CBLOCK_MAX_INSTANCES     64
#define TB_CBLOCK_ACCOUNT_INSTANCES 256
struct tb_pricing_cblock {
    double days;     /* days bought, every block in time together */
    double blocks;   /* blocks bought: ceil(instances / 64) side by side, x those in time */
    double usd;      /* paid up front */
    double used;     /* hours / (days x 24), in (0, 1] */
    bool over_quota; /* more than 256 instances: past what one account may hold */
};
/* What a job of `hours` hours on `instances` instances (a share of one allowed) costs
 * at price p: by the hour (hours x instances x usd_per_hour), or at capacity-block the
 * Capacity Blocks it must buy (whole instances: a share of one buys all of it;
 * tb_pricing_cblock, what is bought in *cb). cb->days is NAN unless priced as blocks.
 * NAN when p has no price or a figure is not positive and finite. */
double tb_pricing_job_usd(const struct tb_price_choice *p, double hours, double instances,
                          struct tb_pricing_cblock *cb);
double tb_pricing_cblock_days(double hours);
int tb_pricing_cblock(double hours, double instances, double usd_per_hour,
                      struct tb_pricing_cblock *out);

#endif
