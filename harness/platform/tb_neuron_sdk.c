/* harness/platform/tb_neuron_sdk.c: see tb_neuron_sdk.h. */
#include "tb_neuron_sdk.h"

#include <ctype.h>
#include <dirent.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const struct {
    const char *package; /* the name pip or dpkg knows */
    const char *label;   /* in the one-line description */
    const char *key;     /* in `trnbench detect` */
    bool python;         /* a Python distribution (else a dpkg package) */
} parts[TB_NEURON_SDK_NPARTS] = {
    [TB_NEURON_SDK_NEURONX_CC] = {"neuronx-cc", "neuronx-cc", "sdk_neuronx_cc", true},
    [TB_NEURON_SDK_TORCH_NEURONX] = {"torch-neuronx", "torch-neuronx", "sdk_torch_neuronx", true},
    [TB_NEURON_SDK_NXD] = {"neuronx-distributed", "neuronx-distributed", "sdk_nxd", true},
    [TB_NEURON_SDK_NXDI] = {"neuronx-distributed-inference", "neuronx-distributed-inference",
                            "sdk_nxd_inference", true},
    [TB_NEURON_SDK_VLLM_NEURON] = {"vllm-neuron", "vllm-neuron", "sdk_vllm_neuron", true},
    [TB_NEURON_SDK_RUNTIME] = {"aws-neuronx-runtime-lib", "runtime", "sdk_runtime", false},
    [TB_NEURON_SDK_COLLECTIVES] = {"aws-neuronx-collectives", "collectives", "sdk_collectives",
                                   false},
    [TB_NEURON_SDK_TOOLS] = {"aws-neuronx-tools", "tools", "sdk_tools", false},
    [TB_NEURON_SDK_DKMS] = {"aws-neuronx-dkms", "driver", "sdk_driver", false},
};

#define DPKG_STATUS "/var/lib/dpkg/status"
#define MAX_ENVS    64 /* site-packages folders looked at, at most */

const char *tb_neuron_sdk_package(enum tb_neuron_sdk_part part)
{
    return part < TB_NEURON_SDK_NPARTS ? parts[part].package : "";
}

const char *tb_neuron_sdk_label(enum tb_neuron_sdk_part part)
{
    return part < TB_NEURON_SDK_NPARTS ? parts[part].label : "";
}

/* ---- small helpers ---- */

/* root + rel into buf; false when it does not fit. */
static bool join(char *buf, size_t len, const char *root, const char *rel)
{
    return (size_t)snprintf(buf, len, "%s%s", root, rel) < len;
}

/* A distribution name as Python's packaging normalises it, with "_" for the separator
 * (PEP 503, and the wheel format's escaping): lower case, runs of -_. as one "_". Stops
 * at n bytes. */
static void normalise(const char *s, size_t n, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < n && s[i] && o + 1 < len; i++) {
        if (s[i] == '-' || s[i] == '_' || s[i] == '.') {
            if (o == 0 || out[o - 1] != '_')
                out[o++] = '_';
        } else {
            out[o++] = (char)tolower((unsigned char)s[i]);
        }
    }
    out[o] = '\0';
}

/* strcmp, but runs of digits compare as numbers: "pytorch_2_10" > "pytorch_2_9". */
static int natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            size_t na, nb;
            int c;
            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            for (na = 0; isdigit((unsigned char)a[na]); na++)
                ;
            for (nb = 0; isdigit((unsigned char)b[nb]); nb++)
                ;
            if (na != nb)
                return na < nb ? -1 : 1;
            if ((c = strncmp(a, b, na)) != 0)
                return c;
            a += na;
            b += nb;
        } else if (*a != *b) {
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        } else {
            a++;
            b++;
        }
    }
    return *a ? 1 : *b ? -1 : 0;
}

static int natural_cmp_desc(const void *x, const void *y)
{
    return -natural_cmp(*(char *const *)x, *(char *const *)y);
}

static char *trim(char *s)
{
    char *e;
    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

/* ---- Python metadata ---- */

/* The Name: and Version: headers of a core-metadata file (METADATA, PKG-INFO): the
 * headers end at the first empty line, where the description begins. */
static bool read_metadata(const char *path, char *name, size_t nlen, char *version, size_t vlen)
{
    FILE *f = fopen(path, "r");
    char line[512];

    name[0] = version[0] = '\0';
    if (!f)
        return false;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n' || (line[0] == '\r' && line[1] == '\n'))
            break;
        if (strncasecmp(line, "Name:", 5) == 0)
            snprintf(name, nlen, "%s", trim(line + 5));
        else if (strncasecmp(line, "Version:", 8) == 0)
            snprintf(version, vlen, "%s", trim(line + 8));
    }
    fclose(f);
    return name[0] && version[0];
}

/* Look in one site-packages folder (its path with the root) for every Python part;
 * versions into v. Returns how many it found. */
static int scan_site(const char *dir, char v[][64])
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        const char *name = e->d_name, *suffix = strstr(name, ".dist-info");
        char meta[2048], norm[128], pkg[128], mname[128], mversion[64];
        size_t stem;
        struct stat st;
        bool egg = false;

        if (!suffix || suffix[10]) {
            suffix = strstr(name, ".egg-info");
            if (!suffix || suffix[9])
                continue;
            egg = true;
        }
        /* "<name>-<version>.dist-info", "<name>-<version>-py3.10.egg-info", or an
         * editable "<name>.egg-info": the name ends at the first "-" */
        stem = strcspn(name, "-");
        if (stem > (size_t)(suffix - name))
            stem = (size_t)(suffix - name);
        normalise(name, stem, norm, sizeof norm);
        for (int p = 0; p < TB_NEURON_SDK_NPARTS; p++) {
            if (!parts[p].python)
                continue;
            normalise(parts[p].package, strlen(parts[p].package), pkg, sizeof pkg);
            if (strcmp(norm, pkg) != 0)
                continue;
            snprintf(meta, sizeof meta, "%s/%s", dir, name);
            if (egg && stat(meta, &st) == 0 && S_ISDIR(st.st_mode))
                snprintf(meta, sizeof meta, "%s/%s/PKG-INFO", dir, name);
            else if (!egg)
                snprintf(meta, sizeof meta, "%s/%s/METADATA", dir, name);
            if (!read_metadata(meta, mname, sizeof mname, mversion, sizeof mversion))
                continue;
            normalise(mname, strlen(mname), norm, sizeof norm);
            if (strcmp(norm, pkg) != 0)
                continue;
            /* two records of one package (a broken upgrade): the higher version, so
             * that readdir's order does not decide */
            if (!v[p][0])
                found++;
            if (!v[p][0] || natural_cmp(mversion, v[p]) > 0)
                snprintf(v[p], 64, "%s", mversion);
        }
    }
    closedir(d);
    return found;
}

/* The site-packages folders to look in, in order, as paths with the root (owned, into
 * envs; *n of them). */
struct envs {
    char *path[MAX_ENVS];       /* owned: with the root */
    const char *from[MAX_ENVS]; /* static: where it came from */
    int n;
};

static void add_glob(const char *root, const char *pattern, bool newest_first, const char *from,
                     struct envs *e)
{
    char full[2048];
    glob_t g;

    if (!join(full, sizeof full, root, pattern) || glob(full, 0, NULL, &g) != 0)
        return;
    if (newest_first)
        qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, natural_cmp_desc);
    for (size_t i = 0; i < g.gl_pathc && e->n < MAX_ENVS; i++) {
        struct stat st;
        if (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode) &&
            (e->path[e->n] = strdup(g.gl_pathv[i])))
            e->from[e->n++] = from;
    }
    globfree(&g);
}

/* The first python3 on path under root: its installation's site-packages folders. */
static void add_python3(const char *root, const char *path, struct envs *e)
{
    while (path && *path) {
        size_t len = strcspn(path, ":");
        char dir[1024], file[2048], prefix[1024], pattern[1200];
        struct stat st;
        char *slash;

        snprintf(dir, sizeof dir, "%.*s", (int)len, path);
        path += len + (path[len] == ':');
        if (dir[0] != '/') /* relative entries: not looked in */
            continue;
        snprintf(file, sizeof file, "%s%s/python3", root, dir);
        if (lstat(file, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
            continue;
        /* the prefix is the bin folder's parent: /usr for /usr/bin */
        snprintf(prefix, sizeof prefix, "%s", dir);
        while ((slash = strrchr(prefix, '/')) && slash[1] == '\0' && slash != prefix)
            *slash = '\0';
        slash = strrchr(prefix, '/');
        if (slash)
            *slash = '\0';
        snprintf(file, sizeof file, "%s%s/pyvenv.cfg", root, prefix);
        snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages", prefix);
        add_glob(root, pattern, true, "python3 on PATH", e);
        if (stat(file, &st) == 0) /* a virtual environment: nothing else is its own */
            return;
        snprintf(pattern, sizeof pattern, "%s/local/lib/python3*/dist-packages", prefix);
        add_glob(root, pattern, true, "python3 on PATH", e);
        snprintf(pattern, sizeof pattern, "%s/lib/python3/dist-packages", prefix);
        add_glob(root, pattern, false, "python3 on PATH", e);
        return;
    }
}

/* ---- dpkg ---- */

/* One stanza ended: keep its version when it is an installed part. */
static void dpkg_stanza(struct tb_neuron_sdk *s, const char *pkg, const char *status,
                        const char *version)
{
    size_t sl = strlen(status);
    if (sl < 9 || strcmp(status + sl - 9, "installed") != 0 || (sl > 9 && status[sl - 10] != ' '))
        return;
    for (int p = 0; p < TB_NEURON_SDK_NPARTS; p++)
        if (!parts[p].python && strcmp(pkg, parts[p].package) == 0)
            snprintf(s->version[p], sizeof s->version[p], "%s", version);
}

static void read_dpkg(struct tb_neuron_sdk *s, const char *root)
{
    char path[1024], pkg[128] = "", status[128] = "", version[64] = "";
    char *line = NULL;
    size_t cap = 0;
    FILE *f;

    if (!join(path, sizeof path, root, DPKG_STATUS) || !(f = fopen(path, "r")))
        return;
    s->dpkg_read = true;
    while (getline(&line, &cap, f) >= 0) {
        char *t = line;
        if (line[0] == ' ' || line[0] == '\t') /* a continuation line */
            continue;
        t = trim(line);
        if (!*t) {
            if (pkg[0])
                dpkg_stanza(s, pkg, status, version);
            pkg[0] = status[0] = version[0] = '\0';
        } else if (strncasecmp(t, "Package:", 8) == 0) {
            snprintf(pkg, sizeof pkg, "%s", trim(t + 8));
        } else if (strncasecmp(t, "Status:", 7) == 0) {
            snprintf(status, sizeof status, "%s", trim(t + 7));
        } else if (strncasecmp(t, "Version:", 8) == 0) {
            snprintf(version, sizeof version, "%s", trim(t + 8));
        }
    }
    if (pkg[0]) /* the last stanza, without a blank line after it */
        dpkg_stanza(s, pkg, status, version);
    free(line);
    fclose(f);
}

/* ---- public API ---- */

int tb_neuron_sdk_detect(struct tb_neuron_sdk *s, const char *root, const char *virtual_env,
                         const char *path)
{
    struct envs e = {.n = 0};

    memset(s, 0, sizeof *s);
    root = root && strcmp(root, "/") != 0 ? root : "";
    if (virtual_env && virtual_env[0] == '/') {
        char pattern[1200];
        snprintf(pattern, sizeof pattern, "%s/lib/python3*/site-packages", virtual_env);
        add_glob(root, pattern, true, "VIRTUAL_ENV", &e);
    }
    add_python3(root, path, &e);
    add_glob(root, "/opt/aws_neuronx_venv_*/lib/python3*/site-packages", true,
             "a Neuron DLAMI environment", &e);

    for (int i = 0; i < e.n; i++) {
        char other[TB_NEURON_SDK_NPARTS][64];
        bool seen = false;
        for (int j = 0; j < i && !seen; j++)
            seen = strcmp(e.path[i], e.path[j]) == 0;
        if (seen)
            continue;
        memset(other, 0, sizeof other);
        if (scan_site(e.path[i], s->python_env[0] ? other : s->version) == 0)
            continue;
        if (!s->python_env[0]) {
            snprintf(s->python_env, sizeof s->python_env, "%s", e.path[i] + strlen(root));
            snprintf(s->python_env_from, sizeof s->python_env_from, "%s", e.from[i]);
        }
        s->python_envs++;
    }
    for (int i = 0; i < e.n; i++)
        free(e.path[i]);
    read_dpkg(s, root);
    for (int p = 0; p < TB_NEURON_SDK_NPARTS; p++)
        s->found += s->version[p][0] != '\0';
    if (!s->found)
        snprintf(s->why, sizeof s->why,
                 "no neuronx-cc, torch-neuronx, neuronx-distributed(-inference) or vllm-neuron "
                 "in $VIRTUAL_ENV, python3's environment or /opt/aws_neuronx_venv_*, and %s",
                 s->dpkg_read ? "no aws-neuronx-* package installed in " DPKG_STATUS
                              : "no " DPKG_STATUS " (not a Debian system)");
    return s->found;
}

void tb_neuron_sdk_describe(const struct tb_neuron_sdk *s, char *buf, size_t len)
{
    size_t used = 0;

    if (len)
        buf[0] = '\0';
    for (int p = 0; p < TB_NEURON_SDK_NPARTS; p++) {
        if (!s->version[p][0])
            continue;
        if (used < len)
            snprintf(buf + used, len - used, "%s%s %s",
                     used ? ", " : "Neuron SDK: ", parts[p].label, s->version[p]);
        used = strlen(buf);
    }
}

void tb_neuron_sdk_each(const struct tb_neuron_sdk *s,
                        void (*fn)(const char *key, const char *value, void *ctx), void *ctx)
{
    char v[1024];

    if (s->found)
        tb_neuron_sdk_describe(s, v, sizeof v);
    else
        snprintf(v, sizeof v, "not found: %s", s->why);
    fn("neuron_sdk", v, ctx);
    if (!s->python_env[0])
        snprintf(v, sizeof v, "none");
    else if (s->python_envs > 1 && strcmp(s->python_env_from, "VIRTUAL_ENV") != 0)
        snprintf(v, sizeof v,
                 "%s (%s; the first of %d environments with Neuron packages: activate the "
                 "one your runs use)",
                 s->python_env, s->python_env_from, s->python_envs);
    else
        snprintf(v, sizeof v, "%s (%s)", s->python_env, s->python_env_from);
    fn("neuron_python_env", v, ctx);
    for (int p = 0; p < TB_NEURON_SDK_NPARTS; p++) {
        snprintf(v, sizeof v, "%s (%s)", s->version[p][0] ? s->version[p] : "not found",
                 parts[p].package);
        fn(parts[p].key, v, ctx);
    }
}
