/* MPI-IO hints: built from --hint KEY=VALUE and --hints-file, reported as JSON, and moved
 * between ranks (the record shows the hints in effect on one writer, which may not be rank 0). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

static void trim(char *s)
{
    size_t n = strlen(s), i = 0;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    while (isspace((unsigned char)s[i]))
        i++;
    memmove(s, s + i, n - i + 1);
}

int hints_split(const char *item, int allow_space, char *key, size_t keylen, char *value, size_t vallen,
                char *err, size_t errlen)
{
    const char *sep = strchr(item, '=');
    if (!sep && allow_space) {
        /* ROMIO's own hints-file format: "KEY VALUE". */
        const char *p = item;
        while (isspace((unsigned char)*p))
            p++;
        sep = p + strcspn(p, " \t");
        if (!*sep)
            sep = NULL;
    }
    if (!sep) {
        snprintf(err, errlen, "malformed hint '%s': use KEY=VALUE, e.g. cb_nodes=4", item);
        return -1;
    }
    size_t klen = (size_t)(sep - item);
    if (klen >= keylen || strlen(sep + 1) >= vallen) {
        snprintf(err, errlen, "hint too long: '%.60s'", item);
        return -1;
    }
    memcpy(key, item, klen);
    key[klen] = '\0';
    snprintf(value, vallen, "%s", sep + 1);
    trim(key);
    trim(value);
    if (!key[0] || !value[0] || strpbrk(key, " \t")) {
        snprintf(err, errlen, "malformed hint '%s': use KEY=VALUE, e.g. cb_nodes=4", item);
        return -1;
    }
    return 0;
}

static int add(MPI_Info *info, const char *item, int allow_space, char *err, size_t errlen)
{
    char key[MPI_MAX_INFO_KEY + 1], value[MPI_MAX_INFO_VAL + 1];
    if (hints_split(item, allow_space, key, sizeof key, value, sizeof value, err, errlen) != 0)
        return -1;
    if (*info == MPI_INFO_NULL)
        MPI_Info_create(info);
    MPI_Info_set(*info, key, value);
    return 0;
}

int hints_add_item(MPI_Info *info, const char *item, char *err, size_t errlen)
{
    return add(info, item, 0, err, errlen);
}

int hints_add_text(MPI_Info *info, const char *text, const char *source, char *err, size_t errlen)
{
    char *copy = strdup(text), *save = NULL;
    int lineno = 0;
    if (!copy) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        line[strcspn(line, "#\r")] = '\0';
        trim(line);
        if (!line[0])
            continue;
        char e[256];
        if (add(info, line, 1, e, sizeof e) != 0) {
            snprintf(err, errlen, "%s: %s", source, e);
            free(copy);
            return -1;
        }
    }
    (void)lineno;
    free(copy);
    return 0;
}

void hints_json(struct jsonl *j, const char *key, MPI_Info info)
{
    jsonl_begin(j, key);
    if (info != MPI_INFO_NULL) {
        int n = 0;
        MPI_Info_get_nkeys(info, &n);
        for (int i = 0; i < n; i++) {
            char k[MPI_MAX_INFO_KEY + 1], v[MPI_MAX_INFO_VAL + 1];
            int len = 0, flag = 0;
            if (MPI_Info_get_nthkey(info, i, k) != MPI_SUCCESS)
                continue;
            MPI_Info_get_valuelen(info, k, &len, &flag);
            if (!flag)
                continue;
            if (len > MPI_MAX_INFO_VAL)
                len = MPI_MAX_INFO_VAL;
            MPI_Info_get(info, k, len, v, &flag);
            v[len] = '\0';
            jsonl_str(j, k, v);
        }
    }
    jsonl_end(j);
}

char *hints_pack(MPI_Info info, int *len)
{
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    int nkeys = 0;
    if (!buf)
        return NULL;
    if (info != MPI_INFO_NULL)
        MPI_Info_get_nkeys(info, &nkeys);
    for (int i = 0; i < nkeys; i++) {
        char k[MPI_MAX_INFO_KEY + 1], v[MPI_MAX_INFO_VAL + 1];
        int vlen = 0, flag = 0;
        MPI_Info_get_nthkey(info, i, k);
        MPI_Info_get_valuelen(info, k, &vlen, &flag);
        if (!flag)
            continue;
        if (vlen > MPI_MAX_INFO_VAL)
            vlen = MPI_MAX_INFO_VAL;
        MPI_Info_get(info, k, vlen, v, &flag);
        v[vlen] = '\0';
        size_t need = strlen(k) + strlen(v) + 2;
        if (n + need > cap) {
            while (n + need > cap)
                cap *= 2;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                return NULL;
            }
            buf = p;
        }
        memcpy(buf + n, k, strlen(k) + 1);
        n += strlen(k) + 1;
        memcpy(buf + n, v, strlen(v) + 1);
        n += strlen(v) + 1;
    }
    *len = (int)n;
    return buf;
}

MPI_Info hints_unpack(const char *buf, int len)
{
    MPI_Info info;
    int i = 0;
    MPI_Info_create(&info);
    while (i < len) {
        const char *k = buf + i;
        i += (int)strlen(k) + 1;
        if (i >= len)
            break;
        const char *v = buf + i;
        i += (int)strlen(v) + 1;
        if (*k && *v)   /* MPI_Info_set rejects empty values */
            MPI_Info_set(info, k, v);
    }
    return info;
}

#define HINTS_FILE_MAX (1 << 20)

/* Rank 0 reads the hints file (one reader, whatever the file system) and every rank parses
 * the same text. */
int hints_build(const char *hints_file, const char *const *items, int nitems, MPI_Info *info, char *err)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    *info = MPI_INFO_NULL;
    if (hints_file) {
        long len = 0;
        char *text = NULL;
        if (rank == 0) {
            FILE *fp = fopen(hints_file, "r");
            if (!fp) {
                snprintf(err, PARIO_ERR_LEN, "cannot read hints file %s: %s", hints_file, strerror(errno));
                len = -1;
            } else {
                text = malloc(HINTS_FILE_MAX + 1);
                len = (long)fread(text, 1, HINTS_FILE_MAX, fp);
                if (ferror(fp)) {
                    snprintf(err, PARIO_ERR_LEN, "cannot read hints file %s: %s", hints_file, strerror(errno));
                    len = -1;
                } else if (!feof(fp)) {
                    snprintf(err, PARIO_ERR_LEN, "hints file %s is larger than 1 MiB", hints_file);
                    len = -1;
                }
                fclose(fp);
            }
        }
        if (agree_failed(MPI_COMM_WORLD, err)) {
            free(text);
            return -1;
        }
        MPI_Bcast(&len, 1, MPI_LONG, 0, MPI_COMM_WORLD);
        if (rank != 0)
            text = malloc((size_t)len + 1);
        MPI_Bcast(text, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
        text[len] = '\0';
        int rc = hints_add_text(info, text, hints_file, err, PARIO_ERR_LEN);
        free(text);
        if (rc != 0)
            return -1;
    }
    for (int i = 0; i < nitems; i++)
        if (hints_add_item(info, items[i], err, PARIO_ERR_LEN) != 0)
            return -1;
    return 0;
}
