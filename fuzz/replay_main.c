// SPDX-License-Identifier: Apache-2.0
/*
 * replay_main.c -- runs a fuzz target without libFuzzer: calls
 * LLVMFuzzerTestOneInput once on each file named on the command line, or
 * found in a directory named there. With no argument it replays the
 * target's checked-in corpus, FUZZ_CORPUS_ROOT/<target>, where <target> is
 * this program's name less its "replay_" prefix. Any crash, sanitizer report
 * or failed property ends the run; otherwise it prints how many inputs it
 * replayed and exits 0 (an empty or missing corpus is a failure).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzzutil.h"

#ifndef FUZZ_CORPUS_ROOT
#define FUZZ_CORPUS_ROOT "fuzz/corpus"
#endif

/* replay_file -- one input; 1 if it was replayed, 0 if it could not be read. */
static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    fclose(f);
    if (!buf) return 0;
    /* An exact-size copy: a read past the input's end is then seen by ASan. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return 0;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 1;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* replay_path -- a file, or every regular file of a directory (sorted);
 * returns the count replayed, -1 if the path cannot be read. */
static long replay_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return -1;
    if (!S_ISDIR(sb.st_mode)) return replay_file(path) ? 1 : -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        if (n == cap && !(names = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names))) return -1;
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    long done = 0;
    char file[4096];
    for (size_t i = 0; i < n; i++) {
        snprintf(file, sizeof file, "%s/%s", path, names[i]);
        if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (!replay_file(file)) return -1;
            done++;
        }
        free(names[i]);
    }
    free(names);
    return done;
}

int main(int argc, char **argv)
{
    const char *name = strrchr(argv[0], '/');
    name = name ? name + 1 : argv[0];
    if (!strncmp(name, "replay_", 7)) name += 7;
    long total = 0;
    if (argc < 2) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", FUZZ_CORPUS_ROOT, name);
        total = replay_path(dir);
        if (total <= 0) {
            fprintf(stderr, "replay %s: no corpus at %s\n", name, dir);
            return 1;
        }
    }
    for (int i = 1; i < argc; i++) {
        long n = replay_path(argv[i]);
        if (n < 0) {
            fprintf(stderr, "replay %s: cannot read %s\n", name, argv[i]);
            return 1;
        }
        total += n;
    }
    printf("replay %s: %ld inputs replayed\n", name, total);
    return 0;
}
