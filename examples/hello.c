// SPDX-License-Identifier: Apache-2.0
/* hello.c -- tierkv's C API in one page: open, put (with and without TKV_SYNC), get, iterate, close. */
#include <stdio.h>
#include <tierkv.h>

/* fail -- prints what failed and why, closes db (NULL is a no-op) and returns the exit status. */
static int fail(tkv_db *db, const char *what, int rc)
{
    fprintf(stderr, "%s: %s: %s\n", what, tkv_strerror(rc), tkv_errmsg());
    tkv_close(db);
    return 1;
}

int main(int argc, char **argv)
{
    tkv_options *opts = tkv_options_new();              /* every default: docs/options.md */
    int rc = opts == NULL ? TKV_NO_MEMORY : tkv_options_set(opts, "memtable_size", "64M");
    tkv_db *db = NULL;
    if (rc == TKV_OK)                                   /* creates the database if missing; copies opts */
        rc = tkv_open(argc > 1 ? argv[1] : "/tmp/tierkv-hello", opts, &db);
    tkv_options_free(opts);
    if (rc != TKV_OK)
        return fail(NULL, "open", rc);

    /* No flag: kept if the process crashes; a power cut may lose it, but only with every write after it. */
    if ((rc = tkv_put(db, "hello", 5, "world", 5, 0)) != TKV_OK)
        return fail(db, "put", rc);
    /* TKV_SYNC: on the device, with every write before it, when the call returns. */
    if ((rc = tkv_put(db, "tier", 4, "pmem", 4, TKV_SYNC)) != TKV_OK)
        return fail(db, "put", rc);

    void *val;
    size_t vlen;
    rc = tkv_get(db, NULL, "hello", 5, &val, &vlen);    /* NULL snapshot: the latest state */
    if (rc == TKV_OK) {
        printf("hello -> %.*s\n", (int)vlen, (char *)val);
        tkv_free(val);                                  /* the caller owns returned values */
    } else if (rc != TKV_NOT_FOUND) {
        return fail(db, "get", rc);
    }

    tkv_iter *it;
    if ((rc = tkv_iter_new(db, NULL, &it)) != TKV_OK)
        return fail(db, "iter", rc);
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) {
        size_t klen, vl;
        const char *k = tkv_iter_key(it, &klen);        /* owned by the iterator, valid until it moves */
        const char *v = tkv_iter_value(it, &vl);
        printf("%.*s = %.*s\n", (int)klen, k, (int)vl, v);
    }
    rc = tkv_iter_status(it);                           /* the end of the keys, or an error */
    tkv_iter_free(it);                                  /* before tkv_close, which is TKV_BUSY otherwise */
    if (rc != TKV_OK)
        return fail(db, "scan", rc);
    if ((rc = tkv_close(db)) != TKV_OK)                 /* frees the handle even when it fails */
        return fail(NULL, "close", rc);
    return 0;
}
