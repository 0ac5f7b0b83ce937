/* tests/unit/pricing.c: the catalogue and price tables in pricing/: known values, the
 * lookup rules (newest row, honest gaps, rejected rows never used), the host price and
 * field-level errors on bad tables. */
#include "tb_pricing.h"
#include "tb_util.h"

#include "tests/tap/basic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void write_file(const char *path, const char *text)
{
    char err[512];
    if (tb_write_file_atomic(path, text, strlen(text), err, sizeof err) != 0)
        bail("%s", err);
}

/* Copy the real tables into dir, replacing one of them with text. */
static void make_tables(const char *dir, const char *replace, const char *text)
{
    static const char *const names[] = {"chips.csv", "instances.csv", "prices.csv"};
    char err[512], from[4096], to[4096];
    char *src = test_src_path("pricing");
    if (tb_mkdir_p(dir, err, sizeof err) != 0)
        bail("%s", err);
    for (int i = 0; i < 3; i++) {
        char *data = NULL;
        size_t len = 0;
        snprintf(to, sizeof to, "%s/%s", dir, names[i]);
        if (!strcmp(names[i], replace)) {
            write_file(to, text);
            continue;
        }
        snprintf(from, sizeof from, "%s/%s", src, names[i]);
        if (tb_read_file(from, &data, &len, err, sizeof err) != 0 ||
            tb_write_file_atomic(to, data, len, err, sizeof err) != 0)
            bail("%s", err);
        free(data);
    }
    free(src);
}

int main(void)
{
    struct tb_pricing p, q;
    const struct tb_instance *in;
    const struct tb_chip *chip;
    const struct tb_price *x;
    struct tb_price_choice c;
    char err[1024] = "", why[1024] = "";
    char *dir = test_src_path("pricing");
    char *bad = test_tmp_path("pricing_bad");
    int rc;

    plan_lazy();
    if (tb_pricing_load(&p, dir, err, sizeof err) != 0)
        bail("cannot load %s: %s", dir, err);
    OK(p.nchips >= 12 && p.ninstances >= 25 && p.nprices >= 127,
       "tables loaded: %zu chips, %zu instances, %zu prices", p.nchips, p.ninstances, p.nprices);

    /* catalogue */
    in = tb_pricing_instance(&p, "trn1.32xlarge");
    OK(in != NULL, "trn1.32xlarge is catalogued");
    if (in) {
        IS_INT(16, in->accel_count, "trn1.32xlarge has 16 chips");
        IS_STRING("trainium1", in->chip, "trn1.32xlarge chip key");
        IS_INT(128, in->vcpu, "trn1.32xlarge vCPUs");
    }
    in = tb_pricing_instance(&p, "trn2.48xlarge");
    IS_INT(16, in ? in->accel_count : -1, "trn2.48xlarge has 16 Trainium2 chips");
    IS_DOUBLE(1536, in ? in->accel_mem_gib : NAN, 0,
              "trn2.48xlarge HBM from the Neuron docs, not the EC2 API's 8192");
    IS_INT(8,
           tb_pricing_instance(&p, "p5.48xlarge")
               ? tb_pricing_instance(&p, "p5.48xlarge")->accel_count
               : -1,
           "p5.48xlarge has 8 GPUs");
    OK(tb_pricing_instance(&p, "x9.huge") == NULL, "unknown type is NULL");
    chip = tb_pricing_chip(&p, "trainium2");
    IS_DOUBLE(667, chip ? chip->bf16_dense_tflops : NAN, 0,
              "Trainium2 dense BF16 TFLOPS (newer Neuron docs)");
    IS_DOUBLE(2.9, chip ? chip->hbm_tbps : NAN, 0, "Trainium2 HBM TB/s");
    chip = tb_pricing_chip(&p, "h100-sxm");
    IS_DOUBLE(989.4, chip ? chip->bf16_dense_tflops : NAN, 0, "H100 SXM dense BF16");
    chip = tb_pricing_chip(&p, "h200-sxm");
    OK(chip && isnan(chip->fp32_tflops), "H200 FP32 not published: NAN, not invented");
    {
        const struct tb_instance *all;
        size_t n = tb_pricing_instances(&p, &all), chipless = 0;
        for (size_t i = 0; i < n; i++)
            chipless += tb_pricing_chip(&p, all[i].chip) == NULL;
        IS_INT(0, (long long)chipless, "every instance names a chip in chips.csv (%zu)", n);
    }

    /* prices */
    rc = tb_pricing_best(&p, "trn1.32xlarge", "us-east-1", "on-demand", &x, why, sizeof why);
    IS_INT(0, rc, "trn1.32xlarge on-demand us-east-1 has a price");
    IS_DOUBLE(21.50, x ? x->usd_per_hour : NAN, 1e-12, "trn1.32xlarge $21.50/h");
    rc = tb_pricing_best(&p, "p5.48xlarge", "us-east-1", "on-demand", &x, why, sizeof why);
    IS_INT(0, rc, "p5.48xlarge on-demand us-east-1 has a price");
    IS_DOUBLE(55.04, x ? x->usd_per_hour : NAN, 1e-12,
              "p5.48xlarge $55.04/h: the newest row, after the cut");
    OK(x && strcmp(x->as_of, "2025-06-01") > 0, "dated after 2025-06-01: %s", x ? x->as_of : "");
    OK(x && *x->source, "the price names its source");
    {
        bool precut = false;
        for (size_t i = 0; i < p.nprices; i++)
            precut |= !strcmp(p.prices[i].instance, "p5.48xlarge") &&
                      !strcmp(p.prices[i].region, "us-east-1") &&
                      fabs(p.prices[i].usd_per_hour - 98.32) < 1e-9;
        OK(precut, "the pre-cut $98.32 row is kept as history");
    }
    rc = tb_pricing_best(&p, "p4d.24xlarge", "us-east-1", "on-demand", &x, why, sizeof why);
    IS_DOUBLE(21.9576, rc == 0 && x ? x->usd_per_hour : NAN, 1e-12,
              "p4d 2026-09-19 row beats the 2026-03 and undated rows");

    rc = tb_pricing_best(&p, "trn2.48xlarge", "us-east-2", "on-demand", &x, why, sizeof why);
    IS_INT(1, rc, "trn2.48xlarge has no on-demand price in us-east-2");
    OK(x && !strcmp(x->status, "none"), "the row saying so is returned, not the suspect $85.964");
    OK(strstr(why, "no public on-demand price for 'trn2.48xlarge'") != NULL, "reason: %s", why);
    rc = tb_pricing_best(&p, "trn2.48xlarge", "us-east-1", "on-demand", &x, why, sizeof why);
    IS_INT(1, rc, "nor in us-east-1");
    OK(x && !strcmp(x->status, "none") && !strcmp(x->region, "any") &&
           strstr(why, "\"pricing\": {}") != NULL,
       "the Vantage extract's empty pricing says so for every region: %s", why);
    rc = tb_pricing_best(&p, "trn2.48xlarge", "us-east-2", "capacity-block", &x, why, sizeof why);
    IS_DOUBLE(35.7608, rc == 0 && x ? x->usd_per_hour : NAN, 1e-12,
              "trn2.48xlarge Capacity Block in Ohio");
    rc = tb_pricing_best(&p, "p5.48xlarge", "unspecified", "unspecified", &x, why, sizeof why);
    IS_INT(1, rc, "rejected claims ($9.80, $80.62) are never a price");
    rc = tb_pricing_best(&p, "trn3-ultraserver-gen1", "us-east-2", "spot", &x, why, sizeof why);
    IS_INT(1, rc, "Trn3 has no price in any region or purchase model");
    /* Trainium3 as the Neuron driver names it: chips read from its platform table, no
     * price of any kind (the savings-plan lookup included) */
    {
        static const char *const trn3[] = {"trn3.48xlarge", "trn3p.48xlarge", "trn3e.24xlarge"};
        static const long chips[] = {16, 16, 4};
        for (size_t i = 0; i < 3; i++) {
            const struct tb_instance *t = tb_pricing_instance(&p, trn3[i]);
            IS_INT(chips[i], t ? t->accel_count : -1, "%s: chips as the driver maps them", trn3[i]);
            IS_STRING("trainium3", t ? t->chip : "", "%s: a Trainium3", trn3[i]);
            IS_DOUBLE(144.0 * (double)chips[i], t ? t->accel_mem_gib : NAN, 1e-9,
                      "%s: 144 GiB per chip", trn3[i]);
            OK(t && t->vcpu == 0 && isnan(t->mem_gib) && isnan(t->network_gbps),
               "%s: vCPU, host memory and network left empty (not published)", trn3[i]);
            OK(t && strstr(t->source, "aws-neuron-driver v4/neuron_dhal_v4.c @ 9cc489ec") &&
                   strstr(t->source, "trn3-arch.rst"),
               "%s: sourced to the driver's table and the Trn3 page", trn3[i]);
            rc = tb_pricing_best(&p, trn3[i], "us-east-1", "savings-plan-1y", &x, why, sizeof why);
            OK(rc == 1 && x && !strcmp(x->status, "none"), "%s: no public price (%s)", trn3[i],
               why);
        }
    }
    {
        size_t bad_rows = 0;
        for (size_t i = 0; i < p.nprices; i++) {
            const struct tb_price *r = &p.prices[i];
            bool listed = !strcmp(r->status, "listed") || !strcmp(r->status, "secondary");
            if (!*r->source || !*r->as_of_text || (listed && !(r->usd_per_hour > 0)) ||
                (!strcmp(r->status, "none") && !isnan(r->usd_per_hour)))
                bad_rows++;
        }
        IS_INT(0, (long long)bad_rows,
               "every price row has a source and a date; listed > 0; none empty");
    }
    {
        /* a secondary price is used, and known to be weak */
        struct tb_price_choice pc;
        OK(tb_pricing_target_price(&p, "trn2.48xlarge", "us-east-2", "capacity-block", &pc, err,
                                   sizeof err) == 0 &&
               pc.have && pc.secondary && pc.usd_per_hour == 35.7608,
           "trn2.48xlarge capacity-block in us-east-2: $35.7608/h, secondary");
        OK(tb_pricing_target_price(&p, "p5.48xlarge", "us-east-1", "on-demand", &pc, err,
                                   sizeof err) == 0 &&
               pc.have && !pc.secondary && pc.usd_per_hour == 55.04,
           "p5.48xlarge on-demand in us-east-1: $55.04/h, listed");
    }

    /* gaps stated in the table (2026-11-24 review) */
    rc = tb_pricing_best(&p, "p5en.48xlarge", "us-west-2", "reserved-1y", &x, why, sizeof why);
    OK(rc == 1 && x && !strcmp(x->status, "none") && strstr(why, "no Reserved Instances"),
       "AWS offers no RI for p5en: %s", why);
    rc = tb_pricing_best(&p, "trn1.32xlarge", "us-east-2", "savings-plan-1y", &x, why, sizeof why);
    OK(rc == 1 && x && strstr(why, "no public Compute Savings Plans 1y rate found"),
       "no Savings Plans rate found, said: %s", why);
    rc = tb_pricing_best(&p, "u-trn2x64", "us-east-2", "capacity-block", &x, why, sizeof why);
    OK(rc == 1 && strstr(why, "Trn2 UltraServer"), "the Trn2 UltraServer: no price found: %s", why);
    rc = tb_pricing_best(&p, "trn1.32xlarge", "ap-southeast-4", "capacity-block", &x, why,
                         sizeof why);
    IS_INT(1, rc, "the undated third-party mirror's 2024 rate is suspect, never used");

    /* regions: a real region without price rows is known, and has no price, with why */
    OK(tb_pricing_region(&p, "us-west-1") &&
           !strcmp(tb_pricing_region(&p, "us-west-1")->name, "US West (N. California)"),
       "us-west-1 is in regions.csv");
    OK(tb_pricing_known_region(&p, "us-west-1"), "us-west-1 is a known region");
    OK(!tb_pricing_known_region(&p, "mars-1"), "mars-1 is not");
    OK(tb_pricing_known_region(&p, "us-east-1-dfw"), "a Local Zone a price row names is known");
    IS_INT(0, tb_pricing_check_choice(&p, "us-west-1", "on-demand", err, sizeof err),
           "--region us-west-1 accepted");
    IS_INT(-1, tb_pricing_check_choice(&p, "mars-1", NULL, err, sizeof err), "--region mars-1 not");
    OK(strstr(err, "unknown region 'mars-1' (no row of ") && strstr(err, "regions.csv or ") &&
           strstr(err, "prices.csv names it)"),
       "%s", err);
    rc = tb_pricing_best(&p, "trn1.32xlarge", "af-south-1", "on-demand", &x, why, sizeof why);
    IS_INT(1, rc, "trn1.32xlarge has no price in af-south-1");
    OK(x == NULL && !strncmp(why, "no price in af-south-1 (Africa (Cape Town)): ", 45),
       "reason: %s", why);
    IS_INT(0, tb_pricing_target_price(&p, "p5.48xlarge", "af-south-1", NULL, &c, err, sizeof err),
           "a target in af-south-1");
    OK(!c.have && strstr(c.why, "no price in af-south-1") != NULL, "no price, why: %s", c.why);
    rc = tb_pricing_best(&p, "trn1.32xlarge", "us-west-1", "on-demand", &x, why, sizeof why);
    OK(rc == 1 && x == NULL &&
           strstr(why, "no on-demand price for 'trn1.32xlarge' in 'us-west-1'") &&
           strstr(why, "; it lists on-demand us-east-1"),
       "a priced region without the target's row says what the target has: %s", why);

    /* a user's discount for a purchase model: on-demand less the fraction, labelled */
    {
        struct tb_pricing_discounts ds = {0};
        struct tb_price_choice od, sp;
        IS_INT(0, tb_pricing_discount_add(&ds, "savings-plan-1y=0.28", err, sizeof err),
               "--discount savings-plan-1y=0.28 taken: %s", err);
        IS_INT(-1, tb_pricing_discount_add(&ds, "savings-plan-1y=0.3", err, sizeof err),
               "the same purchase model twice refused");
        IS_STRING("--discount: savings-plan-1y given twice", err, "said so");
        IS_INT(-1, tb_pricing_discount_add(&ds, "lease=0.3", err, sizeof err), "unknown model");
        OK(strstr(err, "unknown purchase model 'lease'") != NULL, "%s", err);
        IS_INT(-1, tb_pricing_discount_add(&ds, "reserved-1y=1", err, sizeof err), "1 refused");
        IS_INT(-1, tb_pricing_discount_add(&ds, "reserved-1y=0", err, sizeof err), "0 refused");
        IS_INT(-1, tb_pricing_discount_add(&ds, "on-demand=0.1", err, sizeof err),
               "on-demand itself refused");
        IS_INT(1, (long)ds.n, "only the good one kept");
        IS_INT(0,
               tb_pricing_target_price(&p, "p5.48xlarge", "us-east-1", "on-demand", &od, err,
                                       sizeof err),
               "p5.48xlarge on-demand");
        /* without the discount: savings plans have no public rate (a none row) */
        IS_INT(0,
               tb_pricing_target_price(&p, "p5.48xlarge", "us-east-1", "savings-plan-1y", &sp, err,
                                       sizeof err),
               "p5.48xlarge savings-plan-1y, no discount");
        OK(!sp.have, "no savings-plan price of its own: %s", sp.why);
        p.discounts = ds;
        IS_INT(0,
               tb_pricing_target_price(&p, "p5.48xlarge", "us-east-1", "savings-plan-1y", &sp, err,
                                       sizeof err),
               "p5.48xlarge savings-plan-1y with the discount");
        OK(od.have && sp.have, "both priced");
        IS_DOUBLE(55.04 * 0.72, sp.usd_per_hour, 1e-9, "55.04 x (1 - 0.28)");
        IS_DOUBLE(od.usd_per_hour * 0.72, sp.usd_per_hour, 1e-12, "the on-demand price less 28%%");
        IS_STRING("savings-plan-1y", sp.purchase, "under the purchase model discounted");
        IS_DOUBLE(0.28, sp.discount, 0, "the discount carried");
        IS_INT(od.line, sp.line, "dated by the on-demand row it is taken off");
        {
            static const char label[] = "user discount 28% off on-demand, given on the command "
                                        "line (--discount savings-plan-1y=0.28), of on-demand "
                                        "$55.04/h: ";
            OK(!strncmp(sp.source, label, sizeof label - 1), "labelled as the user's: %s",
               sp.source);
        }
        /* on-demand itself is untouched; no on-demand price, no discounted one */
        IS_INT(0,
               tb_pricing_target_price(&p, "p5.48xlarge", "us-east-1", "on-demand", &c, err,
                                       sizeof err),
               "on-demand again");
        IS_DOUBLE(od.usd_per_hour, c.usd_per_hour, 0, "on-demand not discounted");
        IS_INT(0,
               tb_pricing_target_price(&p, "trn3.48xlarge", "us-east-1", "savings-plan-1y", &c, err,
                                       sizeof err),
               "trn3.48xlarge savings-plan-1y with the discount");
        OK(!c.have && strstr(c.why, "user discount 28% off on-demand") &&
               strstr(c.why, "no public on-demand price for 'trn3.48xlarge'"),
           "none: no on-demand price to take it off: %s", c.why);
        memset(&p.discounts, 0, sizeof p.discounts);
    }

    /* host price */
    IS_INT(-1, tb_pricing_host_price(&p, "x9.huge", NULL, NULL, NAN, &c, err, sizeof err),
           "unknown --instance refused");
    OK(strstr(err, "unknown instance type 'x9.huge'") != NULL, "message names it: %s", err);
    IS_INT(0, tb_pricing_host_price(&p, "trn1.32xlarge", NULL, NULL, NAN, &c, err, sizeof err),
           "host priced as trn1.32xlarge");
    OK(c.have && fabs(c.usd_per_hour - 21.5) < 1e-12 && c.line > 0, "at $21.50/h from line %ld",
       c.line);
    IS_INT(0, tb_pricing_host_price(&p, NULL, NULL, NULL, 0.36, &c, err, sizeof err), "user price");
    OK(c.have && c.usd_per_hour == 0.36 && strstr(c.source, "--usd-per-hour"),
       "user price named: %s", c.source);
    IS_INT(
        0,
        tb_pricing_host_price(&p, "trn2.48xlarge", "us-east-2", NULL, 35.76, &c, err, sizeof err),
        "user price for an instance without an on-demand price");
    OK(c.have && c.usd_per_hour == 35.76 && !strcmp(c.instance, "trn2.48xlarge"),
       "priced as given");
    IS_INT(0, tb_pricing_host_price(&p, NULL, NULL, NULL, NAN, &c, err, sizeof err),
           "no price given");
    OK(!c.have && strstr(c.why, "--instance"), "no price, with why: %s", c.why);
    IS_INT(0,
           tb_pricing_host_price(&p, "trn2.48xlarge", "us-east-2", NULL, NAN, &c, err, sizeof err),
           "trn2.48xlarge host");
    OK(!c.have && strstr(c.why, "no public on-demand price"), "no price: %s", c.why);
    IS_INT(-1, tb_pricing_host_price(&p, NULL, NULL, NULL, -1, &c, err, sizeof err),
           "negative price refused");
    IS_INT(-1, tb_pricing_target_price(&p, "host", NULL, NULL, &c, err, sizeof err),
           "host is not a target type");
    tb_pricing_release(&p);

    /* bad tables: -1 with file, line and field */
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "trn1.32xlarge,us-east-1,on-demand,21.5,listed,2026-09-01,2026-09-01,test,\n"
                "trn1.32xlarge,us-east-2,on-demand,abc,listed,2026-09-01,2026-09-01,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a price that is not a number");
    OK(strstr(err, "prices.csv: line 3: field 'usd_per_hour': expected a number in [0, 1000000] "
                   "(USD per instance-hour), got 'abc'") != NULL,
       "%s", err);
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "trn1.32xlarge,us-east-1,on-demand,,listed,2026-09-01,2026-09-01,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a listed row without a price");
    OK(strstr(err, "line 2: field 'usd_per_hour': empty") != NULL, "%s", err);
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "trn1.32xlarge,us-east-1,on-demand,21.5,listed,2026-13-01,x,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a bad date");
    OK(strstr(err, "line 2: field 'as_of'") != NULL, "%s", err);
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "x9.huge,us-east-1,on-demand,1,listed,2026,2026,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a price for an unknown instance");
    OK(strstr(err, "field 'instance': not in instances.csv: 'x9.huge'") != NULL, "%s", err);
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "trn1.32xlarge,us-east-1,hourly,1,listed,2026,2026,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "an unknown purchase model");
    OK(strstr(err, "field 'purchase'") != NULL, "%s", err);
    make_tables(bad, "instances.csv",
                "instance,kind,accelerator,chip,accel_count,vcpu,mem_gib,accel_mem_gib,network_"
                "gbps,as_of,source,notes\n"
                "trn1.32xlarge,instance,Trainium,trainium1,sixteen,128,512,512,800,,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a chip count that is not a number");
    OK(strstr(err, "instances.csv: line 2: field 'accel_count': expected an integer in [1, 65536] "
                   "(accelerator chips), got 'sixteen'") != NULL,
       "%s", err);
    make_tables(bad, "instances.csv",
                "instance,kind,accelerator,chip,accel_count,vcpu,mem_gib,accel_mem_gib,network_"
                "gbps,as_of,source,notes\n"
                "trn1.32xlarge,instance,Trainium,trainium1,16,128,512,512,5e6,,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "an absurd network speed");
    OK(strstr(err, "instances.csv: line 2: field 'network_gbps': expected a number in [0, 1000000] "
                   "(Gbit/s), got '5e6'") != NULL,
       "%s", err);
    make_tables(bad, "chips.csv", "chip,name\ntrainium1,Trainium1\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a chips table without its columns");
    OK(strstr(err, "missing column") != NULL, "%s", err);
    IS_INT(-1, tb_pricing_load(&q, "/nonexistent", err, sizeof err), "a missing folder");
    OK(strstr(err, "/nonexistent/prices.csv: no such file") != NULL, "%s", err);
    make_tables(bad, "prices.csv",
                "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                "trn1.32xlarge,mars-north-1,on-demand,1,listed,2026,2026,test,\n");
    IS_INT(-1, tb_pricing_load(&q, bad, err, sizeof err), "a price in a region that is not one");
    OK(strstr(err, "line 2: field 'region': not a region of regions.csv") != NULL, "%s", err);

    /* a folder holding only prices.csv (what `prices import` writes): the rest comes from
     * the data folder's pricing/ */
    {
        char *only = test_tmp_path("pricing_only");
        char path[4096];
        if (tb_mkdir_p(only, err, sizeof err) != 0)
            bail("%s", err);
        snprintf(path, sizeof path, "%s/prices.csv", only);
        write_file(path,
                   "instance,region,purchase,usd_per_hour,status,as_of,as_of_text,source,notes\n"
                   "trn1.32xlarge,eu-north-1,on-demand,12.34,listed,2026-11-01,2026-11-01,test,\n");
        IS_INT(0, tb_pricing_load(&q, only, err, sizeof err), "a folder with prices.csv alone: %s",
               err);
        OK(q.ninstances == 29 && q.nregions >= 30,
           "instances and regions from the data folder: %zu, %zu", q.ninstances, q.nregions);
        IS_STRING("pricing/instances.csv", q.instances_name, "named as shipped");
        OK(strstr(q.prices_name, "pricing_only/prices.csv") != NULL, "prices named by path: %s",
           q.prices_name);
        rc = tb_pricing_best(&q, "trn1.32xlarge", "eu-north-1", "on-demand", &x, why, sizeof why);
        IS_DOUBLE(12.34, rc == 0 && x ? x->usd_per_hour : NAN, 1e-12, "its own price is used");
        tb_pricing_release(&q);
        free(only);
    }

    free(dir);
    free(bad);
    return 0;
}
