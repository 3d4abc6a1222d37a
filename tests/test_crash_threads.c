/*
 * test_crash_threads.c -- crashes of a database with writer threads.
 *
 * wal_switch_sync: an OS crash right after a TKV_SYNC write that followed a
 * WAL switch keeps the writes acknowledged before it (they sit in the
 * switched-away WAL). The I/O layer's fault hook notes the size of each WAL
 * at every fdatasync; the "crash" copies the directory and cuts the copy's
 * WALs back to those sizes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "testutil.h"

#define CR_MAX_THREADS 16
#define CR_MAX_WALS 512

/* ---------------------------------------------------------------- shared with the child */

typedef struct cr_slot {
    uint64_t issued;     /* operations started (the next one's index) */
    uint64_t acked;      /* operations acknowledged */
    uint64_t acked_sync; /* operations up to the last acknowledged TKV_SYNC one */
} cr_slot;

typedef struct cr_wal {
    uint64_t number, synced; /* a WAL file and its size at its last fdatasync */
} cr_wal;

typedef struct cr_shared {
    int opened;   /* the child's tkv_open returned */
    int failed;   /* the child met an error: msg */
    char msg[600];
    int wal_lock; /* spin lock over wals (child only) */
    unsigned nwals;
    cr_wal wals[CR_MAX_WALS];
    cr_slot slot[CR_MAX_THREADS];
} cr_shared;

static cr_shared *g_sh;

/* ---------------------------------------------------------------- child */

/* cr_note_synced -- records that WAL `number` was fdatasync'd at `size` bytes or more. */
static void cr_note_synced(uint64_t number, uint64_t size)
{
    while (__atomic_exchange_n(&g_sh->wal_lock, 1, __ATOMIC_ACQUIRE)) {
    }
    unsigned i = 0;
    while (i < g_sh->nwals && g_sh->wals[i].number != number) i++;
    if (i == g_sh->nwals && i < CR_MAX_WALS) {
        g_sh->wals[i].number = number;
        g_sh->wals[i].synced = 0;
        __atomic_store_n(&g_sh->nwals, i + 1, __ATOMIC_RELEASE);
    }
    if (i < CR_MAX_WALS && g_sh->wals[i].synced < size) g_sh->wals[i].synced = size;
    __atomic_store_n(&g_sh->wal_lock, 0, __ATOMIC_RELEASE);
}

/* cr_wal_sync_hook -- (powercut rounds) the I/O layer's hook before every
 * sync: for a WAL, everything written so far (its current size) is what
 * the fdatasync that follows makes durable. Never injects a fault. */
static int cr_wal_sync_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    size_t n = strlen(path);
    if (op != IO_OP_SYNC || n < 4 || strcmp(path + n - 4, ".wal") != 0) return 0;
    const char *base = strrchr(path, '/');
    struct stat st;
    if (stat(path, &st) == 0) cr_note_synced(strtoull(base ? base + 1 : path, NULL, 10), (uint64_t)st.st_size);
    return 0;
}

/* ---------------------------------------------------------------- WAL switch, then a sync write */

/* The hook of wal_switch_sync: notes WAL sync sizes (cr_wal_sync_hook) and
 * holds the flush thread at its SST's open while `hold` is set, so the
 * switched-away WAL stays the only copy of its memtable's writes. */
static int g_hold;
static int ws_hook(io_op op, const char *path, size_t len, void *arg)
{
    if (op == IO_OP_OPEN && tu_is_sst(path) && tu_thread_is("tkv-flush"))
        while (__atomic_load_n(&g_hold, __ATOMIC_ACQUIRE)) usleep(1000);
    return cr_wal_sync_hook(op, path, len, arg);
}

/* wal_switch_sync -- non-sync writes fill a memtable, which switches to a new
 * WAL (its flush held back), then one TKV_SYNC write. An OS crash at that
 * moment keeps of each WAL only what was fdatasync'd: the sync write must
 * come back, and with it every write acknowledged before it, which sit in the
 * previous WAL (a sync write makes earlier writes durable too: recovery
 * replays the WALs in order, so a lost earlier WAL tail would leave a hole
 * behind the sync write). The "crash" copies the directory while the
 * database is open and cuts the copy's WALs back to their synced sizes. */
static void wal_switch_sync(void **state)
{
    (void)state;
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    memset(g_sh, 0, sizeof *g_sh);
    char *dir = tu_tmpdir("wal-switch-sync"), *copy = tu_tmpdir("wal-switch-sync-copy");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(ws_hook, NULL);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    char kb[32], vb[300];
    unsigned n = 0;
    while (tu_prop_u64(db, "tkv.num-immutable-mem", "") == 0) {
        size_t kn = (size_t)sprintf(kb, "k%06u", n), vn = (size_t)sprintf(vb, "%0200u", n);
        assert_int_equal(tkv_put(db, kb, kn, vb, vn, 0), TKV_OK);
        tu_model_put(m, kb, kn, vb, vn);
        assert_true(++n < 100000);
    }
    assert_int_equal(tkv_put(db, "synced", 6, "yes", 3, TKV_SYNC), TKV_OK);
    tu_model_put(m, "synced", 6, "yes", 3);

    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", dir, copy);
    assert_int_equal(system(cmd), 0);
    uint64_t *nums;
    size_t nw = tu_list_numbered(copy, ".wal", &nums);
    assert_int_equal(nw, 2); /* the switched-away WAL and the new one */
    for (size_t i = 0; i < nw; i++) {
        uint64_t synced = 0;
        for (unsigned w = 0; w < g_sh->nwals; w++)
            if (g_sh->wals[w].number == nums[i]) synced = g_sh->wals[w].synced;
        char name[64];
        snprintf(name, sizeof name, "%06llu.wal", (unsigned long long)nums[i]);
        char *p = tu_path(copy, name);
        assert_int_equal(truncate(p, (off_t)synced), 0);
        free(p);
    }
    free(nums);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    tu_close_ok(db);
    io_set_fault_hook(NULL, NULL);

    db = tu_open_ok(copy, o);
    tu_check_db(db, NULL, m, "after an OS crash right after a sync write behind a WAL switch");
    tu_close_ok(db);
    tu_model_free(m);
    tkv_options_free(o);
    munmap(g_sh, sizeof *g_sh);
    tu_tmpdir_free(copy);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wal_switch_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
