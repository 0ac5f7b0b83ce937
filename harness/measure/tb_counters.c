/* harness/measure/tb_counters.c: see tb_counters.h. */
#include "tb_counters.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef TB_HAVE_PAPI
#include <papi.h>
#endif

/* ---- process-wide state (written once under pthread_once, then only by the
 *      counting thread) ---- */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static bool g_available;      /* an event set with >= 1 event exists */
static bool g_running;        /* between a successful start and its stop */
static char g_status[1100];   /* see tb_counters_status (PAPI reasons reach 1024) */
static char g_start_err[160]; /* why the last start failed, for the next stop */

#ifdef TB_HAVE_PAPI
static int g_eventset = PAPI_NULL;
static int g_nevents;
static char g_names[TB_COUNTERS_MAX][32];
#endif

static void set_status(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_status, sizeof g_status, fmt, ap);
    va_end(ap);
}

#ifdef TB_HAVE_PAPI

/* Each slot takes the first of its alternatives that the event set accepts. The
 * engine is fp32, so single-precision operations come before the any-precision
 * count. */
static const char *const g_slots[][2] = {
    {"PAPI_TOT_CYC", NULL},
    {"PAPI_TOT_INS", NULL},
    {"PAPI_SP_OPS", "PAPI_FP_OPS"},
    {"PAPI_L3_TCM", NULL},
};

static int add_named_event(int es, const char *name)
{
    int code = 0, rc;

    rc = PAPI_event_name_to_code(name, &code);
    if (rc != PAPI_OK)
        return rc;
    rc = PAPI_query_event(code);
    if (rc != PAPI_OK)
        return rc;
    return PAPI_add_event(es, code);
}

static void init_once(void)
{
    const PAPI_component_info_t *ci;
    char dropped[256] = "";
    char events[256] = "";
    int rc, cidx, es = PAPI_NULL;
    long ver;

    rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        if (rc > 0)
            set_status("unavailable: PAPI_library_init: library version %d.%d differs from "
                       "header %d.%d",
                       PAPI_VERSION_MAJOR(rc), PAPI_VERSION_MINOR(rc),
                       PAPI_VERSION_MAJOR(PAPI_VER_CURRENT), PAPI_VERSION_MINOR(PAPI_VER_CURRENT));
        else
            set_status("unavailable: PAPI_library_init: %s", PAPI_strerror(rc));
        return;
    }
    cidx = PAPI_get_component_index("perf_event");
    ci = cidx >= 0 ? PAPI_get_component_info(cidx) : NULL;
    if (!ci) {
        set_status("unavailable: perf_event component not in this PAPI build");
        return;
    }
    if (ci->disabled) {
        set_status("unavailable: perf_event disabled: %s", ci->disabled_reason);
        return;
    }
    rc = PAPI_create_eventset(&es);
    if (rc != PAPI_OK) {
        set_status("unavailable: PAPI_create_eventset: %s", PAPI_strerror(rc));
        return;
    }
    for (size_t s = 0; s < sizeof g_slots / sizeof g_slots[0]; s++) {
        for (int alt = 0; alt < 2 && g_slots[s][alt]; alt++) {
            const char *name = g_slots[s][alt];
            size_t used = strlen(dropped);
            if (g_nevents >= TB_COUNTERS_MAX)
                break;
            rc = add_named_event(es, name);
            if (rc == PAPI_OK) {
                snprintf(g_names[g_nevents], sizeof g_names[0], "%s", name);
                g_nevents++;
                break;
            }
            /* dropped: remember why, for the status when nothing is left */
            snprintf(dropped + used, sizeof dropped - used, "%s%s: %s", used ? "; " : "", name,
                     PAPI_strerror(rc));
        }
    }
    if (g_nevents == 0) {
        /* leave no probe event set behind */
        PAPI_cleanup_eventset(es);
        PAPI_destroy_eventset(&es);
        set_status("unavailable: no PAPI event could be added (%s)", dropped);
        return;
    }
    for (int i = 0; i < g_nevents; i++) {
        size_t used = strlen(events);
        snprintf(events + used, sizeof events - used, "%s%s", i ? "," : "", g_names[i]);
    }
    ver = PAPI_get_opt(PAPI_LIB_VERSION, NULL);
    set_status("ok: PAPI %d.%d.%d.%d, events: %s (calling thread)", PAPI_VERSION_MAJOR(ver),
               PAPI_VERSION_MINOR(ver), PAPI_VERSION_REVISION(ver), PAPI_VERSION_INCREMENT(ver),
               events);
    g_eventset = es;
    g_available = true;
}

#else /* !TB_HAVE_PAPI */

static void init_once(void)
{
    set_status("unavailable: built without PAPI");
}

#endif

/* ---- public API ---- */

int tb_counters_init(void)
{
    pthread_once(&g_once, init_once);
    return 0;
}

bool tb_counters_available(void)
{
    tb_counters_init();
    return g_available;
}

const char *tb_counters_status(void)
{
    tb_counters_init();
    return g_status;
}

int tb_counters_start(void)
{
    tb_counters_init();
    if (!g_available || g_running)
        return -1;
#ifdef TB_HAVE_PAPI
    {
        int rc = PAPI_start(g_eventset);
        if (rc != PAPI_OK) {
            snprintf(g_start_err, sizeof g_start_err, "unavailable: PAPI_start: %s",
                     PAPI_strerror(rc));
            return -1;
        }
    }
    g_start_err[0] = '\0';
    g_running = true;
    return 0;
#else
    return -1;
#endif
}

int tb_counters_stop(struct tb_counter_values *v)
{
    memset(v, 0, sizeof *v);
    tb_counters_init();
    if (!g_available) {
        snprintf(v->reason, sizeof v->reason, "%s", g_status);
        return -1;
    }
    if (!g_running) {
        snprintf(v->reason, sizeof v->reason, "%s",
                 g_start_err[0] ? g_start_err : "unavailable: counters were not started");
        return -1;
    }
    g_running = false;
#ifdef TB_HAVE_PAPI
    {
        long long raw[TB_COUNTERS_MAX] = {0};
        int rc = PAPI_stop(g_eventset, raw);
        if (rc != PAPI_OK) {
            snprintf(v->reason, sizeof v->reason, "unavailable: PAPI_stop: %s", PAPI_strerror(rc));
            return -1;
        }
        v->n = g_nevents;
        for (int i = 0; i < g_nevents; i++) {
            memcpy(v->names[i], g_names[i], sizeof v->names[i]);
            v->values[i] = raw[i];
        }
    }
    return 0;
#else
    snprintf(v->reason, sizeof v->reason, "%s", g_status);
    return -1;
#endif
}

int tb_counters_format(const struct tb_counter_values *v, char *buf, size_t len)
{
    size_t used = 0;

    if (!buf || !len)
        return -1;
    buf[0] = '\0';
    if (v->n <= 0) {
        const char *why = v->reason[0] ? v->reason : "unavailable: no counts";
        return snprintf(buf, len, "%s", why) < (int)len ? 0 : -1;
    }
    for (int i = 0; i < v->n && i < TB_COUNTERS_MAX; i++) {
        int k =
            snprintf(buf + used, len - used, "%s%s=%lld", i ? ";" : "", v->names[i], v->values[i]);
        if (k < 0 || (size_t)k >= len - used) {
            buf[used] = '\0'; /* keep only whole entries */
            return -1;
        }
        used += (size_t)k;
    }
    return 0;
}
