// SPDX-License-Identifier: Apache-2.0
/*
 * throttle.c -- the block-I/O cgroup throttle of throttle.h (cgroup v1
 * blkio: blkio.throttle.{read,write}_bps_device).
 *
 * State: the cgroup the process started in (from /proc/self/cgroup) and the
 * one it made, /sys/fs/cgroup/blkio/<start>/tkv_bench-<pid>. Entering writes
 * the limits, then the pid to the new group's cgroup.procs (which moves
 * every thread of the process); leaving writes the pid back to the start
 * group and removes the new one.
 */
#include "bench/throttle.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define BLKIO_ROOT "/sys/fs/cgroup/blkio"

static char g_home[PATH_MAX / 2]; /* the start cgroup's directory */
static char g_group[PATH_MAX];    /* ours, "" when not throttled */
static char g_desc[160] = "off";

static int errf(char *err, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
    return -1;
}

/* write_file -- writes s to path; 0 or errno. */
static int write_file(const char *path, const char *s)
{
    FILE *f = fopen(path, "w");
    if (!f) return errno;
    int rc = fputs(s, f) < 0 ? errno : 0;
    if (fclose(f) != 0 && !rc) rc = errno;
    return rc;
}

/* start_cgroup -- the blkio cgroup path of this process ("/" or "/a/b"). */
static int start_cgroup(char *out, size_t n)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    if (!f) return -1;
    char line[1024];
    int found = -1;
    while (fgets(line, sizeof line, f)) {
        /* "7:blkio:/path" (v1); a v2-only system has just "0::/path" */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        if (strcmp(c1 + 1, "blkio") != 0) continue;
        c2[1 + strcspn(c2 + 1, "\n")] = '\0';
        snprintf(out, n, "%s", c2 + 1);
        found = 0;
        break;
    }
    fclose(f);
    return found;
}

/* whole_disk -- the major:minor blk-throttle needs for the device of dir:
 * the disk itself, also when dir is on one of its partitions. */
static int whole_disk(const char *dir, unsigned *maj, unsigned *min, char *err, size_t n)
{
    struct stat st;
    if (stat(dir, &st) != 0) return errf(err, n, "stat %s: %s", dir, strerror(errno));
    *maj = major(st.st_dev);
    *min = minor(st.st_dev);
    if (*maj == 0)
        return errf(err, n, "%s is on a filesystem without a block device (%u:%u: tmpfs, overlay?)", dir, *maj, *min);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/partition", *maj, *min);
    if (access(p, F_OK) != 0) return 0; /* a whole disk */
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/../dev", *maj, *min);
    FILE *f = fopen(p, "r");
    if (!f || fscanf(f, "%u:%u", maj, min) != 2) {
        if (f) fclose(f);
        return errf(err, n, "cannot find the disk of partition %u:%u (%s)", *maj, *min, p);
    }
    fclose(f);
    return 0;
}

int throttle_enter(const char *dir, uint64_t bps, char *err, size_t errlen)
{
    if (g_group[0]) return errf(err, errlen, "already throttled");
    if (bps == 0) return errf(err, errlen, "a throttle of 0 bytes/s");
    unsigned maj, min;
    if (whole_disk(dir, &maj, &min, err, errlen) != 0) return -1;
    char home[PATH_MAX / 4];
    if (access(BLKIO_ROOT "/blkio.throttle.read_bps_device", F_OK) != 0 || start_cgroup(home, sizeof home) != 0)
        return errf(err, errlen,
                    "no cgroup v1 blkio controller at " BLKIO_ROOT " (cgroup v2 is not supported by --throttle; "
                    "tierkv's --opt ssd_bandwidth=... throttles tierkv alone)");
    snprintf(g_home, sizeof g_home, BLKIO_ROOT "%s", strcmp(home, "/") ? home : "");
    char group[PATH_MAX];
    snprintf(group, sizeof group, "%s/tkv_bench-%ld", g_home, (long)getpid());
    if (mkdir(group, 0755) != 0 && errno != EEXIST)
        return errf(err, errlen, "mkdir %s: %s (needs root)", group, strerror(errno));
    char path[PATH_MAX + 64], val[64];
    snprintf(val, sizeof val, "%u:%u %llu", maj, min, (unsigned long long)bps);
    const char *files[] = {"blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", group, files[i]);
        int e = write_file(path, val);
        if (e) {
            rmdir(group);
            return errf(err, errlen, "write \"%s\" to %s: %s", val, path, strerror(e));
        }
    }
    snprintf(path, sizeof path, "%s/cgroup.procs", group);
    snprintf(val, sizeof val, "%ld", (long)getpid());
    int e = write_file(path, val);
    if (e) {
        rmdir(group);
        return errf(err, errlen, "join %s: %s", path, strerror(e));
    }
    snprintf(g_group, sizeof g_group, "%s", group);
    snprintf(g_desc, sizeof g_desc, "blkio(v1) %u:%u read+write %llu B/s each", maj, min, (unsigned long long)bps);
    return 0;
}

void throttle_leave(void)
{
    if (!g_group[0]) return;
    char path[PATH_MAX + 32], val[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", g_home);
    snprintf(val, sizeof val, "%ld", (long)getpid());
    int e = write_file(path, val);
    if (e) fprintf(stderr, "tkv_bench: could not leave the throttled cgroup (%s: %s)\n", path, strerror(e));
    else if (rmdir(g_group) != 0) fprintf(stderr, "tkv_bench: rmdir %s: %s\n", g_group, strerror(errno));
    g_group[0] = '\0';
    snprintf(g_desc, sizeof g_desc, "off");
}

const char *throttle_describe(void) { return g_desc; }
