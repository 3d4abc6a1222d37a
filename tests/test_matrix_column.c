// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_column.c -- column picking (src/matrix/column.c) over rows
 * built on a pool (matrixutil.h): columns as aligned prefixes of the rows
 * (test_column_pick), and step 5's small L1 neighbours over a modelled L1
 * (test_column_merge) and on fixed cases (test_column_merge_rule).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "matrix/column.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "matrixutil.h"
#include "testutil.h"
#include "util/status.h"

static int cmp_tkv_buf(const void *a, const void *b)
{
    const tkv_buf *x = a, *y = b;
    return ukey_cmp(slice(x->data, x->len), slice(y->data, y->len));
}

/* user_key_at -- the user key of entry i of d. */
static tkv_slice user_key_at(const row_data *d, size_t i) { return ikey_user(ekey(&d->e[i])); }

/* An L1 level for test_column_merge: sorted disjoint user-key ranges with
 * sizes, entry counts, busy flags, and the column that wrote each file
 * (-1: there before the compactor). */
typedef struct l1_model {
    tkv_buf lo[256], hi[256];
    uint64_t bytes[256], entries[256];
    uint8_t busy[256];
    int writer[256];
    size_t n;
} l1_model;

/* l1_replace -- files [a, b) give way to one output covering them and
 * [lo, hi], of `bytes`, written by column `col`. */
static void l1_replace(l1_model *m, size_t a, size_t b, tkv_slice lo, tkv_slice hi, uint64_t bytes, uint64_t entries,
                       int col)
{
    tkv_buf nlo = {0}, nhi = {0};
    tkv_slice l =
        a < b && ukey_cmp(slice(m->lo[a].data, m->lo[a].len), lo) < 0 ? slice(m->lo[a].data, m->lo[a].len) : lo;
    tkv_slice h = a < b && ukey_cmp(slice(m->hi[b - 1].data, m->hi[b - 1].len), hi) > 0
                      ? slice(m->hi[b - 1].data, m->hi[b - 1].len)
                      : hi;
    assert_int_equal(buf_append(&nlo, l.p, l.n), 0);
    assert_int_equal(buf_append(&nhi, h.p, h.n), 0);
    for (size_t i = a; i < b; i++) {
        buf_free(&m->lo[i]);
        buf_free(&m->hi[i]);
    }
    size_t gone = b - a; /* b - a files out, one in */
    if (gone == 0) {
        assert_true(m->n < 256);
        memmove(&m->lo[a + 1], &m->lo[a], (m->n - a) * sizeof m->lo[0]);
        memmove(&m->hi[a + 1], &m->hi[a], (m->n - a) * sizeof m->hi[0]);
        memmove(&m->bytes[a + 1], &m->bytes[a], (m->n - a) * sizeof m->bytes[0]);
        memmove(&m->entries[a + 1], &m->entries[a], (m->n - a) * sizeof m->entries[0]);
        memmove(&m->busy[a + 1], &m->busy[a], (m->n - a) * sizeof m->busy[0]);
        memmove(&m->writer[a + 1], &m->writer[a], (m->n - a) * sizeof m->writer[0]);
        m->n++;
    } else if (gone > 1) {
        size_t k = gone - 1;
        memmove(&m->lo[a + 1], &m->lo[b], (m->n - b) * sizeof m->lo[0]);
        memmove(&m->hi[a + 1], &m->hi[b], (m->n - b) * sizeof m->hi[0]);
        memmove(&m->bytes[a + 1], &m->bytes[b], (m->n - b) * sizeof m->bytes[0]);
        memmove(&m->entries[a + 1], &m->entries[b], (m->n - b) * sizeof m->entries[0]);
        memmove(&m->busy[a + 1], &m->busy[b], (m->n - b) * sizeof m->busy[0]);
        memmove(&m->writer[a + 1], &m->writer[b], (m->n - b) * sizeof m->writer[0]);
        m->n -= k;
    }
    m->lo[a] = nlo;
    m->hi[a] = nhi;
    m->bytes[a] = bytes;
    m->entries[a] = entries;
    m->busy[a] = 0;
    m->writer[a] = col;
}

/* test_column_pick -- columns drain compactor rows as prefixes: each column
 * ends on a user-key change in every row, everything in it sorts before
 * everything left, it reaches its target (half of it when it stops before an
 * L1 file), it leaves nothing or at least a quarter of its target, the L1 files it rewrites are exactly those overlapping it and
 * none reaches into the keys left; the columns together take every entry. */
static void test_column_pick(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 13);
    for (int round = 0; round < 6; round++) {
        fixture f = fx_new("rows-column");
        pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
        size_t k = 1 + (size_t)tu_rng_below(&rng, 5);
        row_data rows[6];
        rowtable *rt[6];
        uint64_t seq = 0, universe = 5000, total_entries = 0;
        for (size_t i = 0; i < k; i++) {
            rows[i] = gen_row(&rng, 300 + tu_rng_below(&rng, 2000), universe, &seq, round % 2 ? 40 : 400, 0);
            rt[i] = build_row(p, i + 1, &rows[i], i ? rt[i - 1] : NULL, 1);
            total_entries += rows[i].n;
        }
        /* L1: disjoint ranges between sorted random keys of the universe
         * (none in round 0; few and wide in round 5) */
        enum { MAXB = 128 };
        tkv_buf bk[MAXB];
        size_t nb = round == 0 ? 0 : round == 5 ? 6 : 2 * (8 + tu_rng_below(&rng, 50));
        for (size_t i = 0; i < nb; i++) {
            char kb[40];
            memset(&bk[i], 0, sizeof bk[i]);
            size_t kn =
                i % 2 ? ukey_of(tu_rng_range(&rng, 1, universe), kb) : absent_key_of(tu_rng_below(&rng, universe), kb);
            assert_int_equal(buf_append(&bk[i], kb, kn), 0);
        }
        qsort(bk, nb, sizeof *bk, cmp_tkv_buf);
        tkv_slice l1s[MAXB / 2], l1l[MAXB / 2];
        size_t nl1 = 0;
        for (size_t i = 0; i + 1 < nb; i += 2) {
            if (ukey_cmp(slice(bk[i].data, bk[i].len), slice(bk[i + 1].data, bk[i + 1].len)) == 0) continue;
            if (nl1 && ukey_cmp(l1l[nl1 - 1], slice(bk[i].data, bk[i].len)) >= 0) continue;
            l1s[nl1] = slice(bk[i].data, bk[i].len);
            l1l[nl1] = slice(bk[i + 1].data, bk[i + 1].len);
            nl1++;
        }
        uint32_t cursors[6] = {0};
        uint64_t target = 2000 + tu_rng_below(&rng, 40000), taken = 0;
        int columns = 0;
        for (;;) {
            column_input in = {.rows = rt,
                               .cursors = cursors,
                               .nrows = k,
                               .l1_smallest = l1s,
                               .l1_largest = l1l,
                               .nl1 = nl1,
                               .target_bytes = target};
            column_plan plan;
            int rc = column_pick(&in, &plan);
            if (rc) fail_msg("round %d: column_pick: %d %s", round, rc, tkv_errmsg());
            if (plan.empty) {
                column_plan_free(&plan);
                break;
            }
            columns++;
            /* the rows' entries in the column and the first key left */
            tkv_slice max_in = {0}, min_left = {0};
            int have_in = 0, have_left = 0;
            uint64_t entries = 0;
            for (size_t r = 0; r < k; r++) {
                uint32_t c = cursors[r], nc = plan.new_cursors[r];
                assert_true(nc >= c && nc <= rows[r].n);
                if (nc > 0 && nc < rows[r].n && ukey_cmp(user_key_at(&rows[r], nc - 1), user_key_at(&rows[r], nc)) == 0)
                    fail_msg("round %d column %d row %zu: cursor %u splits a user key", round, columns, r, nc);
                entries += nc - c;
                if (nc > c && (!have_in || ukey_cmp(user_key_at(&rows[r], nc - 1), max_in) > 0)) {
                    max_in = user_key_at(&rows[r], nc - 1);
                    have_in = 1;
                }
                if (nc < rows[r].n && (!have_left || ukey_cmp(user_key_at(&rows[r], nc), min_left) < 0)) {
                    min_left = user_key_at(&rows[r], nc);
                    have_left = 1;
                }
            }
            assert_true(have_in);
            assert_int_equal(entries, plan.row_entries);
            assert_int_equal(plan.to_end, !have_left);
            if (have_left && ukey_cmp(max_in, min_left) >= 0)
                fail_msg("round %d column %d: key %s in the column, %s left", round, columns,
                         tu_hex(max_in.p, max_in.n), tu_hex(min_left.p, min_left.n));
            assert_int_equal(ukey_cmp(slice(plan.hi.data, plan.hi.len), max_in), 0);
            if (!plan.to_end && plan.row_bytes < target / 2)
                fail_msg("round %d column %d: %llu bytes for a target of %llu", round, columns,
                         (unsigned long long)plan.row_bytes, (unsigned long long)target);
            /* the tail rule: a column leaves nothing or at least a quarter of its target */
            uint64_t left = 0;
            for (size_t r = 0; r < k; r++) {
                uint64_t at, end;
                assert_int_equal(rowtable_data_offset(rt[r], plan.new_cursors[r], &at), 0);
                assert_int_equal(rowtable_data_offset(rt[r], rowtable_count(rt[r]), &end), 0);
                left += end - at;
            }
            if (!plan.to_end && left < target / 4)
                fail_msg("round %d column %d: leaves a tail of %llu bytes for a target of %llu", round, columns,
                         (unsigned long long)left, (unsigned long long)target);
            /* L1: [l1_first, l1_end) = the files overlapping [lo, hi]; none of them reaches the keys left */
            tkv_slice lo = slice(plan.lo.data, plan.lo.len), hi = slice(plan.hi.data, plan.hi.len);
            for (size_t i = 0; i < nl1; i++) {
                int overlaps = ukey_cmp(l1l[i], lo) >= 0 && ukey_cmp(l1s[i], hi) <= 0;
                int chosen = i >= plan.l1_first && i < plan.l1_end;
                if (overlaps != chosen)
                    fail_msg("round %d column %d: L1 file %zu overlaps %d chosen %d", round, columns, i, overlaps,
                             chosen);
                if (chosen && have_left && ukey_cmp(l1l[i], min_left) >= 0)
                    fail_msg("round %d column %d: rewritten L1 file %zu reaches into the keys left", round, columns, i);
            }
            taken += entries;
            memcpy(cursors, plan.new_cursors, k * sizeof *cursors);
            column_plan_free(&plan);
            assert_true(columns < 100000);
        }
        assert_int_equal(taken, total_entries);
        uint64_t row_bytes = 0;
        for (size_t i = 0; i < k; i++) {
            rowtable_props pr;
            rowtable_get_props(rt[i], &pr);
            row_bytes += pr.data_bytes;
        }
        print_message("column round %d: %zu rows, %zu L1 files, target %llu: %d columns for %llu bytes\n", round, k,
                      nl1, (unsigned long long)target, columns, (unsigned long long)row_bytes);
        if (row_bytes > 4 * target && nl1 == 0) assert_true(columns >= 2);
        for (size_t i = 0; i < nb; i++) buf_free(&bk[i]);
        for (size_t i = 0; i < k; i++) {
            rowtable_close(rt[i]);
            free_row(&rows[i]);
        }
        pool_close(p);
        fx_free(&f);
    }
}

/* test_column_merge -- step 5 of column.h over a compactor drained column
 * by column into a model of L1 (each column's files replaced by one
 * output): the files a column rewrites are those it overlaps plus a run of
 * adjacent neighbours on each side; the neighbours are never busy, hold at
 * most sst_size bytes and COLUMN_MAX_MERGED (16) files; one on the right
 * lies wholly below every key left in the rows; and no column rewrites a
 * file an earlier column of the compactor wrote unless it took that file
 * in as a neighbour (so a right neighbour never puts an output in a later
 * column's way). Without sizes nothing is taken in (test_column_pick). */
static void test_column_merge(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 17);
    uint64_t merged_files = 0, merged_right = 0;
    for (int round = 0; round < 12; round++) {
        fixture f = fx_new("rows-merge");
        pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
        size_t k = 1 + (size_t)tu_rng_below(&rng, 4);
        row_data rows[5];
        rowtable *rt[5];
        uint64_t seq = 0, universe = 5000, compactor_entries = 0;
        for (size_t i = 0; i < k; i++) {
            rows[i] = gen_row(&rng, 300 + tu_rng_below(&rng, 1500), universe, &seq, 200, 0);
            rt[i] = build_row(p, i + 1, &rows[i], i ? rt[i - 1] : NULL, 1);
            compactor_entries += rows[i].n;
        }
        /* L1: many narrow files of mixed sizes (a few busy) between sorted
         * random keys, so columns overlap some and fall between others */
        static l1_model m;
        memset(&m, 0, sizeof m);
        uint64_t sst = 4000 + tu_rng_below(&rng, 40000);
        enum { MAXB = 400 };
        static tkv_buf bk[MAXB];
        size_t nb = round % 2 ? MAXB : 40; /* even rounds: few files, wide gaps */
        for (size_t i = 0; i < nb; i++) {
            char kb[40];
            memset(&bk[i], 0, sizeof bk[i]);
            size_t kn =
                i % 2 ? ukey_of(tu_rng_range(&rng, 1, universe), kb) : absent_key_of(tu_rng_below(&rng, universe), kb);
            assert_int_equal(buf_append(&bk[i], kb, kn), 0);
        }
        qsort(bk, nb, sizeof *bk, cmp_tkv_buf);
        for (size_t i = 0; i + 1 < nb; i += 2) {
            tkv_slice a = slice(bk[i].data, bk[i].len), b = slice(bk[i + 1].data, bk[i + 1].len);
            if (ukey_cmp(a, b) == 0 || (m.n && ukey_cmp(slice(m.hi[m.n - 1].data, m.hi[m.n - 1].len), a) >= 0))
                continue;
            assert_int_equal(buf_append(&m.lo[m.n], a.p, a.n), 0);
            assert_int_equal(buf_append(&m.hi[m.n], b.p, b.n), 0);
            m.bytes[m.n] = tu_rng_below(&rng, 4) ? 1 + tu_rng_below(&rng, sst / 4) : tu_rng_range(&rng, sst / 2, sst);
            m.entries[m.n] = 1 + m.bytes[m.n] / 100;
            m.busy[m.n] = tu_rng_below(&rng, 10) == 0;
            m.writer[m.n] = -1;
            m.n++;
        }
        for (size_t i = 0; i < nb; i++) buf_free(&bk[i]);
        uint32_t cursors[5] = {0};
        uint64_t target = 2000 + tu_rng_below(&rng, 20000);
        int columns = 0;
        for (;;) {
            tkv_slice l1s[256], l1l[256];
            for (size_t i = 0; i < m.n; i++) {
                l1s[i] = slice(m.lo[i].data, m.lo[i].len);
                l1l[i] = slice(m.hi[i].data, m.hi[i].len);
            }
            column_input in = {rt,     cursors, k,         l1s,    l1l, m.n,
                               target, m.bytes, m.entries, m.busy, sst, compactor_entries};
            column_plan plan;
            int rc = column_pick(&in, &plan);
            if (rc) fail_msg("round %d: column_pick: %d %s", round, rc, tkv_errmsg());
            if (plan.empty) {
                column_plan_free(&plan);
                break;
            }
            columns++;
            tkv_slice lo = slice(plan.lo.data, plan.lo.len), hi = slice(plan.hi.data, plan.hi.len);
            size_t o_first = m.n, o_end = 0;
            for (size_t i = 0; i < m.n; i++)
                if (ukey_cmp(l1l[i], lo) >= 0 && ukey_cmp(l1s[i], hi) <= 0) {
                    if (o_first == m.n) o_first = i;
                    o_end = i + 1;
                }
            if (o_first == m.n) { /* overlaps nothing: the gap the column falls in */
                o_first = 0;
                while (o_first < m.n && ukey_cmp(l1l[o_first], lo) < 0) o_first++;
                o_end = o_first;
            }
            if (plan.l1_first > o_first || plan.l1_end < o_end)
                fail_msg("round %d column %d: rewrites [%zu, %zu) but overlaps [%zu, %zu)", round, columns,
                         plan.l1_first, plan.l1_end, o_first, o_end);
            assert_int_equal(plan.l1_merged, (o_first - plan.l1_first) + (plan.l1_end - o_end));
            uint64_t extra = 0;
            for (size_t i = plan.l1_first; i < plan.l1_end; i++) {
                int neighbour = i < o_first || i >= o_end;
                if (neighbour) {
                    extra += m.bytes[i];
                    if (m.busy[i]) fail_msg("round %d column %d: took in busy file %zu", round, columns, i);
                } else if (m.writer[i] >= 0) {
                    fail_msg("round %d column %d: overlaps file %zu that column %d of the compactor wrote", round,
                             columns, i, m.writer[i]);
                }
            }
            assert_int_equal(extra, plan.l1_merged_bytes);
            assert_true(extra <= sst && plan.l1_merged <= 16);
            /* a right neighbour lies below every key left */
            for (size_t r = 0; r < k && plan.l1_end > o_end; r++)
                if (plan.new_cursors[r] < rows[r].n &&
                    ukey_cmp(l1l[plan.l1_end - 1], user_key_at(&rows[r], plan.new_cursors[r])) >= 0)
                    fail_msg("round %d column %d: right neighbour reaches the keys left", round, columns);
            for (size_t i = plan.l1_first; i < plan.l1_end; i++) assert_false(m.busy[i] && (i < o_first || i >= o_end));
            merged_files += plan.l1_merged;
            merged_right += plan.l1_end - o_end;
            uint64_t out = extra + plan.row_bytes / 8, ents = plan.row_entries; /* compressed 8x */
            for (size_t i = o_first; i < o_end; i++) {
                out += m.bytes[i];
                ents += m.entries[i];
            }
            l1_replace(&m, plan.l1_first, plan.l1_end, lo, hi, out, ents, columns);
            for (size_t i = 0; i < m.n; i++) m.busy[i] = m.writer[i] < 0 && tu_rng_below(&rng, 10) == 0;
            memcpy(cursors, plan.new_cursors, k * sizeof *cursors);
            column_plan_free(&plan);
            assert_true(columns < 100000);
        }
        print_message("merge round %d: %zu rows, sst %llu, target %llu: %d columns, %zu L1 files left\n", round, k,
                      (unsigned long long)sst, (unsigned long long)target, columns, m.n);
        for (size_t i = 0; i < m.n; i++) {
            buf_free(&m.lo[i]);
            buf_free(&m.hi[i]);
        }
        for (size_t i = 0; i < k; i++) {
            rowtable_close(rt[i]);
            free_row(&rows[i]);
        }
        pool_close(p);
        fx_free(&f);
    }
    print_message("merged %llu neighbours, %llu of them on the right\n", (unsigned long long)merged_files,
                  (unsigned long long)merged_right);
    assert_true(merged_files > 0);
}

/* test_column_merge_rule -- step 5's rule on a fixed L1: one row of keys
 * 100..199 drained in one column (to_end) next to files of known sizes:
 * small neighbours within twice the output are taken, left then right, a
 * busy one stops the walk, a big one is taken only if the merge stays one
 * file, and the bytes taken in stop at sst_size. */
static void test_column_merge_rule(void **state)
{
    (void)state;
    fixture f = fx_new("rows-merge-rule");
    pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
    row_data d = {calloc(100, sizeof(ent)), 0};
    assert_non_null(d.e);
    uint64_t seq = 0;
    char kb[40];
    for (uint64_t u = 100; u < 200; u++) {
        ent *e = &d.e[d.n++];
        size_t kn = (size_t)sprintf(kb, "k%05llu", (unsigned long long)u);
        e->kn = kn + IKEY_TRAILER;
        e->k = malloc(e->kn);
        assert_non_null(e->k);
        ikey_encode(e->k, kb, kn, ++seq, IKEY_VALUE);
        e->vn = 0;
        e->v = NULL;
    }
    rowtable *rt = build_row(p, 1, &d, NULL, 1);
    /* four files left of the row's keys, three right of them */
    static const struct {
        const char *lo, *hi;
    } R[] = {{"k00010", "k00019"}, {"k00020", "k00029"}, {"k00030", "k00039"}, {"k00040", "k00049"},
             {"k00300", "k00309"}, {"k00310", "k00319"}, {"k00320", "k00329"}};
    enum { N = 7 };
    tkv_slice l1s[N], l1l[N];
    for (size_t i = 0; i < N; i++) {
        l1s[i] = slice(R[i].lo, 6);
        l1l[i] = slice(R[i].hi, 6);
    }
    uint8_t busy[N];
    uint32_t cursor = 0;
    /* L1's bytes per entry is sum(bytes) / sum(entries); the column's 100
     * entries at that rate are its estimated output */
    static const struct {
        uint64_t bytes[N], entries[N];
        size_t busy; /* index + 1 of a busy file, 0: none */
        uint64_t sst, compactor_entries;
        size_t first, end; /* expected [l1_first, l1_end) */
    } C[] = {
        /* 10 per entry, output 1000: every small file within 2000 is taken, left then right */
        {{100, 100, 100, 100, 100, 100, 100}, {10, 10, 10, 10, 10, 10, 10}, 0, 100000, 100, 0, 7},
        /* a busy file stops the walk */
        {{100, 100, 100, 100, 100, 100, 100}, {10, 10, 10, 10, 10, 10, 10}, 2, 100000, 100, 2, 7},
        /* 100 per entry, output 10000: 3000 and 9000 are taken (22000 then); 30000 is within twice that,
         * but big, and 22000 + 30000 would not fit in one file of 50000 */
        {{30000, 30000, 9000, 3000, 100, 100, 100}, {300, 300, 90, 30, 1, 1, 1}, 0, 50000, 100, 2, 7},
        /* ... while a big 25000 that fits (47000) is taken */
        {{30000, 25000, 9000, 3000, 100, 100, 100}, {300, 250, 90, 30, 1, 1, 1}, 0, 50000, 100, 1, 7},
        /* 10 per entry, output 1000: a small 20000 is more than twice that and stops the walk ... */
        {{100, 100, 100, 20000, 100, 100, 100}, {10, 10, 10, 2000, 10, 10, 10}, 0, 100000, 100, 4, 7},
        /* ... unless the compactor's whole output (its last column: 10000 entries, 100000 bytes) is */
        {{100, 100, 100, 20000, 100, 100, 100}, {10, 10, 10, 2000, 10, 10, 10}, 0, 100000, 10000, 0, 7},
        /* the bytes taken in stop at sst_size: 400 + 24000 + 24000 fit in 50000, 2000 more do not */
        {{100, 100, 100, 100, 24000, 24000, 2000}, {1, 1, 1, 1, 240, 240, 20}, 0, 50000, 100000, 0, 6},
    };
    for (size_t c = 0; c < sizeof C / sizeof C[0]; c++) {
        memset(busy, 0, sizeof busy);
        if (C[c].busy) busy[C[c].busy - 1] = 1;
        column_input in = {
            &rt, &cursor, 1, l1s, l1l, N, 1u << 30, C[c].bytes, C[c].entries, busy, C[c].sst, C[c].compactor_entries};
        column_plan plan;
        assert_int_equal(column_pick(&in, &plan), 0);
        assert_true(plan.to_end);
        if (plan.l1_first != C[c].first || plan.l1_end != C[c].end)
            fail_msg("case %zu: rewrites [%zu, %zu), expected [%zu, %zu)", c, plan.l1_first, plan.l1_end, C[c].first,
                     C[c].end);
        assert_int_equal(plan.l1_merged, C[c].end - C[c].first);
        column_plan_free(&plan);
    }
    /* without sizes: nothing taken in */
    column_input plain = {.rows = &rt,
                          .cursors = &cursor,
                          .nrows = 1,
                          .l1_smallest = l1s,
                          .l1_largest = l1l,
                          .nl1 = N,
                          .target_bytes = 1u << 30};
    column_plan plan;
    assert_int_equal(column_pick(&plain, &plan), 0);
    assert_int_equal(plan.l1_first, 4);
    assert_int_equal(plan.l1_end, 4);
    assert_int_equal(plan.l1_merged, 0);
    column_plan_free(&plan);
    rowtable_close(rt);
    free_row(&d);
    pool_close(p);
    fx_free(&f);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_column_pick),
        cmocka_unit_test(test_column_merge),
        cmocka_unit_test(test_column_merge_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
