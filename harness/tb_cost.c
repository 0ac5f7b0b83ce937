/* harness/tb_cost.c: see tb_cost.h. */
#include "tb_cost.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (Howard Hinnant's
 * days_from_civil algorithm). */
static long days_from_civil(long y, long m, long d)
{
    long era, yoe, doy, doe;
    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int digits(const char *s, int n, long *out)
{
    long v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int tb_cost_days(const char *s, long *days)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    long y, m = 1, d = 1;
    if (!s || digits(s, 4, &y) != 0 || y < 1970)
        return -1;
    s += 4;
    if (*s == '-') {
        if (digits(s + 1, 2, &m) != 0 || m < 1 || m > 12)
            return -1;
        s += 3;
        if (*s == '-') {
            if (digits(s + 1, 2, &d) != 0 || d < 1 || d > mdays[m - 1])
                return -1;
            s += 3;
        }
    }
    if (isdigit((unsigned char)*s))
        return -1;
    *days = days_from_civil(y, m, d);
    return 0;
}

long tb_cost_age_days(const char *as_of, const char *now)
{
    long a, b;
    if (tb_cost_days(as_of, &a) != 0 || tb_cost_days(now, &b) != 0)
        return -1;
    return b - a;
}

static bool positive(double v)
{
    return v > 0 && isfinite(v);
}

double tb_cost_usd_per(double usd_per_hour, double per_s, double per)
{
    if (!positive(usd_per_hour) || !positive(per_s) || !positive(per))
        return NAN;
    return usd_per_hour / (per_s * 3600.0) * per;
}

double tb_cost_instance_share(long instances, long chips_used, long chips_per_instance)
{
    if (chips_used > 0 && chips_per_instance > 0)
        return (double)chips_used / (double)chips_per_instance;
    return (double)instances;
}

double tb_cost_train_days(double tokens, double tokens_per_s)
{
    if (!positive(tokens) || !positive(tokens_per_s))
        return NAN;
    return tokens / tokens_per_s / 86400.0;
}

double tb_cost_train_usd(double tokens, double tokens_per_s, double usd_per_hour)
{
    if (!positive(usd_per_hour))
        return NAN;
    return tb_cost_train_days(tokens, tokens_per_s) * 24.0 * usd_per_hour;
}

bool tb_cost_meets(double ttft_ms, double tpot_ms, double ttft_limit_ms, double tpot_limit_ms)
{
    if (positive(ttft_limit_ms) && !(ttft_ms <= ttft_limit_ms))
        return false;
    if (positive(tpot_limit_ms) && !(tpot_ms <= tpot_limit_ms))
        return false;
    return true;
}

double tb_cost_price_perf(double baseline_usd, double usd)
{
    if (!positive(baseline_usd) || !positive(usd))
        return NAN;
    return baseline_usd / usd;
}
