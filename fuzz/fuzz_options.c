// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_options.c -- fuzz target: the options parser. The input is text,
 * "name=value" lines (as tkv_bench --opt and the bindings pass them); each
 * goes to tkv_options_set. Properties: a refused value leaves the options
 * unchanged (byte for byte), as tkv_options_set promises; the options'
 * description (options_describe, "name=value" for every option) parses back
 * into the same options; options_parse_size accepts only what it can
 * represent.
 *
 * Input: flags byte (unused), then the text.
 */
#include <stdlib.h>
#include <string.h>

#include "db/options.h"
#include "fuzz/fuzzutil.h"
#include "util/status.h"

/* set_line -- one "name=value" line (a line without '=' is a name with an
 * empty value). */
static void set_line(tkv_options *o, char *line)
{
    char *eq = strchr(line, '=');
    const char *value = "";
    if (eq) {
        *eq = 0;
        value = eq + 1;
    }
    struct tkv_options before;
    memcpy(&before, o, sizeof before);
    int rc = tkv_options_set(o, line, value);
    if (rc != TKV_OK) {
        fz_check(rc == TKV_INVALID, "tkv_options_set failed with an unexpected code");
        fz_check(memcmp(&before, o, sizeof before) == 0, "a refused value changed the options");
    }
    uint64_t v;
    if (options_parse_size(value, &v) == 0)
        fz_check(value[0] >= '0' && value[0] <= '9', "size parsed from a non-digit");
}

/* roundtrip -- the description of o parses back into options with the
 * same description. */
static void roundtrip(const tkv_options *o)
{
    char *desc = options_describe(o), *copy = desc ? strdup(desc) : NULL;
    tkv_options *o2 = copy ? tkv_options_new() : NULL;
    if (o2) {
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            char *eq = strchr(line, '=');
            fz_check(eq != NULL, "a description line without '='");
            *eq = 0;
            fz_check(tkv_options_set(o2, line, eq + 1) == TKV_OK, "a described value does not parse back");
        }
        char *desc2 = options_describe(o2);
        if (desc2) fz_check(strcmp(desc, desc2) == 0, "described options parse back to different options");
        free(desc2);
        tkv_options_free(o2);
    }
    free(copy);
    free(desc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536) return 0;
    data++, size--;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    tkv_options *o = tkv_options_new();
    if (o) {
        char *save = NULL;
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) set_line(o, line);
        roundtrip(o);
        tkv_options_free(o);
    }
    free(text);
    return 0;
}
