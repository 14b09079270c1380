/*
 * check.h: what the C test programs of abi/ctests share: counting checks
 * (CHECK and friends: a failure prints the test, file and line), the test
 * name each check reports, and Unh, which records a root's unhandled
 * error. Each test program is one translation unit that includes this
 * header once, so its statics are that program's own. The program's last
 * line is check_summary's "N passed, M failed".
 */
#ifndef ASYNCSTEPS_CTESTS_CHECK_H
#define ASYNCSTEPS_CTESTS_CHECK_H

#include <stdio.h>
#include <string.h>

#include "asyncsteps.h"
#include "futoin.h"

static int g_passed, g_failed;
static const char* g_test = "";

#define CHECK(c)                                                                       \
    do {                                                                               \
        if (c) {                                                                       \
            g_passed++;                                                                \
        } else {                                                                       \
            g_failed++;                                                                \
            fprintf(stderr, "  FAIL %s (%s:%d): %s\n", g_test, __FILE__, __LINE__, #c); \
        }                                                                              \
    } while (0)

/* CHECK_STR compares two C strings and shows both when they differ. */
#define CHECK_STR(got, want)                                                            \
    do {                                                                                \
        const char* g_ = (got);                                                         \
        const char* w_ = (want);                                                        \
        if (g_ && w_ && strcmp(g_, w_) == 0) {                                          \
            g_passed++;                                                                 \
        } else {                                                                        \
            g_failed++;                                                                 \
            fprintf(stderr, "  FAIL %s (%s:%d): %s\n    got:  \"%s\"\n    want: \"%s\"\n", \
                    g_test, __FILE__, __LINE__, #got, g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
        }                                                                               \
    } while (0)

/* CHECK_CONTAINS: got has want as a substring. */
#define CHECK_CONTAINS(got, want)                                                      \
    do {                                                                               \
        const char* g_ = (got);                                                        \
        if (g_ && strstr(g_, (want))) {                                                \
            g_passed++;                                                                \
        } else {                                                                       \
            g_failed++;                                                                \
            fprintf(stderr, "  FAIL %s (%s:%d): \"%s\" does not contain \"%s\"\n",      \
                    g_test, __FILE__, __LINE__, g_ ? g_ : "(null)", (want));           \
        }                                                                              \
    } while (0)

/* CHECK_OK: a root's flow ended without an unhandled error; shows it if not. */
#define CHECK_OK(u)                                                                    \
    do {                                                                               \
        if ((u).called == 0) {                                                         \
            g_passed++;                                                                \
        } else {                                                                       \
            g_failed++;                                                                \
            fprintf(stderr, "  FAIL %s (%s:%d): unhandled error %s: %s\n", g_test,      \
                    __FILE__, __LINE__, (u).code, (u).info);                            \
        }                                                                              \
    } while (0)

/* begin_test names the checks that follow and prints the name. */
static void begin_test(const char* name)
{
    g_test = name;
    printf("%s\n", g_test);
    fflush(stdout);
}

/* check_summary prints the closing line and gives the exit status. */
static int check_summary(void)
{
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed ? 1 : 0;
}

/* Unh records what a root's unhandled_error saw: how often, the code, and
   the flow's error_info read through stateVariable at that moment. */
typedef struct {
    int called;
    char code[64];
    char info[512];
} Unh;

static void on_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    Unh* u = data;
    u->called++;
    snprintf(u->code, sizeof(u->code), "%s", code ? code : "(null)");
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    snprintf(u->info, sizeof(u->info), "%s", info ? info : "(null)");
}

/* execute runs root's flow with u recording its unhandled error. */
static void execute(FutoInAsyncSteps* root, Unh* u)
{
    memset(u, 0, sizeof(*u));
    root->api->execute(root, u, on_unhandled);
}

#endif
