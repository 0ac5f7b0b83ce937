/* tests/unit/counters.c: PAPI counters initialise and either count a loop of known work
 * or say exactly why they cannot (on a machine without hardware counters: "unavailable:
 * perf_event disabled: <PAPI's own reason>"). Never a failure for lack of counters. */
#include "tb_counters.h"

#include "tests/tap/basic.h"

#include <stdio.h>
#include <string.h>

#ifdef TB_HAVE_PAPI
#include <papi.h>
#endif

#define LOOP_ITERS 10000000L

/* At least one instruction per iteration that the compiler cannot remove. */
static long busy_loop(void)
{
    volatile long acc = 0;
    for (long i = 0; i < LOOP_ITERS; i++)
        acc += i;
    return acc;
}

int main(void)
{
    struct tb_counter_values v;
    char buf[1200];
    const char *status;

    plan_lazy();

    IS_INT(0, tb_counters_init(), "init succeeds");
    IS_INT(0, tb_counters_init(), "a second init is harmless");
    status = tb_counters_status();
    OK(status && status[0], "status is not empty");
    printf("# counters: %s\n", status);
    OK(strncmp(status, "ok: ", 4) == 0 || strncmp(status, "unavailable: ", 13) == 0,
       "status starts with 'ok: ' or 'unavailable: ': %s", status);
    IS_INT(strncmp(status, "ok", 2) == 0, tb_counters_available(), "available agrees");

#ifdef TB_HAVE_PAPI
    /* The reason must be PAPI's own: ask PAPI (initialised by the module) directly. */
    {
        int cidx = PAPI_get_component_index("perf_event");
        const PAPI_component_info_t *ci = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
        if (ci && ci->disabled) {
            snprintf(buf, sizeof buf, "unavailable: perf_event disabled: %s", ci->disabled_reason);
            IS_STRING(buf, status, "a disabled perf_event is reported with its reason");
        } else {
            OK(ci != NULL, "PAPI has a perf_event component");
        }
    }
#else
    IS_STRING("unavailable: built without PAPI", status, "a build without PAPI says so");
#endif

    /* formatting, on hand-made values (works without counters) */
    memset(&v, 0, sizeof v);
    v.n = 2;
    strcpy(v.names[0], "PAPI_TOT_CYC");
    strcpy(v.names[1], "PAPI_TOT_INS");
    v.values[0] = 123;
    v.values[1] = 456;
    IS_INT(0, tb_counters_format(&v, buf, sizeof buf), "format hand-made values");
    IS_STRING("PAPI_TOT_CYC=123;PAPI_TOT_INS=456", buf, "NAME=value joined by ';'");
    IS_INT(-1, tb_counters_format(&v, buf, 20), "a short buffer is reported");
    IS_STRING("PAPI_TOT_CYC=123", buf, "and holds the whole entries that fitted");

    if (!tb_counters_available()) {
        IS_INT(-1, tb_counters_start(), "start refuses when unavailable");
        IS_INT(-1, tb_counters_stop(&v), "stop refuses when unavailable");
        IS_INT(0, v.n, "no values");
        IS_STRING(status, v.reason, "the values carry the reason");
        IS_INT(0, tb_counters_format(&v, buf, sizeof buf), "format succeeds");
        IS_STRING(status, buf, "format gives the reason");
        skip_block(5, "%s", status);
        return 0;
    }

    IS_INT(0, tb_counters_start(), "start");
    IS_INT(-1, tb_counters_start(), "a second start while counting is refused");
    busy_loop();
    IS_INT(0, tb_counters_stop(&v), "stop");
    OK(v.n >= 1, "%d events counted", v.n);
    {
        long long ins = -1;
        for (int i = 0; i < v.n; i++)
            if (strcmp(v.names[i], "PAPI_TOT_INS") == 0)
                ins = v.values[i];
        if (ins < 0)
            skip("PAPI_TOT_INS was dropped on this machine");
        else
            OK(ins >= LOOP_ITERS, "PAPI_TOT_INS %lld >= %ld loop iterations", ins, LOOP_ITERS);
    }
    IS_INT(0, tb_counters_format(&v, buf, sizeof buf), "format");
    OK(strncmp(buf, v.names[0], strlen(v.names[0])) == 0 && strchr(buf, '=') != NULL,
       "format is NAME=value;...: %s", buf);
    IS_INT(-1, tb_counters_stop(&v), "stop without start is refused");
    return 0;
}
