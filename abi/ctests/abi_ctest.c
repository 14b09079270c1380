/*
 * abi_ctest.c: the C test program of the asyncsteps C library
 * (build/libasyncsteps.a). It drives the library only through futoin.h and
 * asyncsteps.h, as any C program would: the spec's examples (FTN12 1.1,
 * 1.2, 1.2.1 and section 3) with their exact output, every one of the 25
 * vtable entries with its effect, every FTN_TYPE_* value passed from one C
 * step to the next through the engine (same descriptor, no copy), value
 * cleanups, cancel and timeout, misuse, and a started reactor driven from
 * another thread.
 *
 * Plain C11 and pthreads, no framework: CHECK counts failures, each test
 * prints its name, and the last line is "N passed, M failed"; the exit
 * status is nonzero when anything failed.
 *
 * Build: make ctest (or by hand: make cabi && cc -std=c11 -Iabi
 * -o build/abi_ctest abi/ctests/abi_ctest.c build/libasyncsteps.a -lpthread).
 * make ctest-valgrind and make ctest-asan run it under memcheck (with
 * abi/ctests/valgrind.supp) and AddressSanitizer.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* The callbacks have the fixed signatures of futoin.h; most ignore some of
   their parameters. */
#pragma GCC diagnostic ignored "-Wunused-parameter"

#define BEGIN(name)        \
    do {                   \
        begin_test(name);  \
        out_reset();       \
    } while (0)

/* ---- captured output ------------------------------------------------- */

static char g_out[8192];
static size_t g_outlen;

static void out_reset(void)
{
    g_outlen = 0;
    g_out[0] = 0;
}

/* say appends one line to the captured output (what the spec's
   examples "print"). */
static void say(const char* fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_out + g_outlen, sizeof(g_out) - g_outlen - 1, fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    g_outlen += (size_t)n;
    if (g_outlen > sizeof(g_out) - 2) {
        g_outlen = sizeof(g_out) - 2;
    }
    g_out[g_outlen++] = '\n';
    g_out[g_outlen] = 0;
}

/* ---- value helpers ----------------------------------------------------- */

static const FutoInType T_I8 = {FTN_TYPE_INT8, NULL};
static const FutoInType T_I16 = {FTN_TYPE_INT16, NULL};
static const FutoInType T_I32 = {FTN_TYPE_INT32, NULL};
static const FutoInType T_I64 = {FTN_TYPE_INT64, NULL};
static const FutoInType T_U8 = {FTN_TYPE_UINT8, NULL};
static const FutoInType T_U16 = {FTN_TYPE_UINT16, NULL};
static const FutoInType T_U32 = {FTN_TYPE_UINT32, NULL};
static const FutoInType T_U64 = {FTN_TYPE_UINT64, NULL};
static const FutoInType T_FLOAT = {FTN_TYPE_FLOAT, NULL};
static const FutoInType T_DOUBLE = {FTN_TYPE_DOUBLE, NULL};
static const FutoInType T_BOOL = {FTN_TYPE_BOOL, NULL};
static const FutoInType T_STR = {FTN_TYPE_STRING, NULL};
static const FutoInType T_STR16 = {FTN_TYPE_STRING16, NULL};
static const FutoInType T_STR32 = {FTN_TYPE_STRING32, NULL};
static const FutoInType T_CUSTOM = {FTN_TYPE_CUSTOM_OBJECT, NULL};
static const FutoInType T_ARR[16] = {
#define A(f) [f] = {FTN_TYPE_ARRAY | (f), NULL}
    A(FTN_TYPE_CUSTOM_OBJECT), A(FTN_TYPE_STRING), A(FTN_TYPE_STRING16), A(FTN_TYPE_STRING32),
    A(FTN_TYPE_BOOL), A(FTN_TYPE_INT8), A(FTN_TYPE_INT16), A(FTN_TYPE_INT32), A(FTN_TYPE_INT64),
    A(FTN_TYPE_UINT8), A(FTN_TYPE_UINT16), A(FTN_TYPE_UINT32), A(FTN_TYPE_UINT64),
    A(FTN_TYPE_FLOAT), A(FTN_TYPE_DOUBLE),
#undef A
};

static FutoInBinaryValue v_int(int64_t i)
{
    FutoInBinaryValue v = {.type = &T_I64, .i64 = i};
    return v;
}

static FutoInBinaryValue v_i32(int32_t i)
{
    FutoInBinaryValue v = {.type = &T_I32, .i32 = i};
    return v;
}

static FutoInBinaryValue v_str(const char* s)
{
    FutoInBinaryValue v = {.type = &T_STR, .cstr = s, .length = (uint32_t)strlen(s)};
    return v;
}

/* An integer of any integer type, as its reader sees it. */
static int64_t as_int(const FutoInBinaryValue* v)
{
    if (!v->type) {
        return -999999;
    }
    switch (v->type->flags) {
    case FTN_TYPE_INT8: return v->i8;
    case FTN_TYPE_INT16: return v->i16;
    case FTN_TYPE_INT32: return v->i32;
    case FTN_TYPE_INT64: return v->i64;
    case FTN_TYPE_UINT8: return v->u8;
    case FTN_TYPE_UINT16: return v->u16;
    case FTN_TYPE_UINT32: return v->u32;
    case FTN_TYPE_UINT64: return (int64_t)v->u64;
    default: return -999999;
    }
}

/* ---- roots ------------------------------------------------------------- */


static void run(AsyncStepsReactor* r) { asyncsteps_reactor_run_until_idle(r); }

/* parallel: bsi->api->parallel, checked: a NULL accessor is a failure of
   the library, reported here instead of crashing the program. */
static FutoInAsyncSteps* parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, data, eh);
    if (!p) {
        g_failed++;
        fprintf(stderr, "  FAIL %s: parallel() returned NULL\n", g_test);
    }
    return p;
}

#define PADD(p, data, f, eh)                  \
    do {                                      \
        if (p) {                              \
            (p)->api->add((p), data, f, eh);  \
        }                                     \
    } while (0)

/* A step that does nothing: implicit success. */
static void nop_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) {}

/* A counter bumped by a step that must (or must not) run. */
static void count_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { ++*(int*)data; }

/* ======================================================================= */
/* 1. The spec's examples                                                  */
/* ======================================================================= */

/* ---- 1.1 Levels ---- */

static void l11_say(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("%s", (const char*)data); }

static void l11_l1_add1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 1 add #1");
    bsi->api->add(bsi, "Level 2 add #1", l11_say, NULL);
    FutoInAsyncSteps* p = parallel(bsi, NULL, NULL);
    PADD(p, "Level 2 parallel #2", l11_say, NULL);
    bsi->api->add(bsi, "Level 2 add #3", l11_say, NULL);
}

static void l11_l0_add1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 0 add #1");
    bsi->api->add(bsi, NULL, l11_l1_add1, NULL);
    FutoInAsyncSteps* p = parallel(bsi, NULL, NULL);
    PADD(p, "Level 1 parallel #2", l11_say, NULL);
    bsi->api->add(bsi, "Level 1 add #3", l11_say, NULL);
}

static void test_spec_1_1_levels(AsyncStepsReactor* r)
{
    BEGIN("spec_1_1_levels");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, l11_l0_add1, NULL);
    FutoInAsyncSteps* p = parallel(root, NULL, NULL);
    PADD(p, "Level 0 parallel #2", l11_say, NULL);
    root->api->add(root, "Level 0 add #3", l11_say, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out,
            "Level 0 add #1\n"
            "Level 1 add #1\n"
            "Level 2 add #1\n"
            "Level 2 parallel #2\n"
            "Level 2 add #3\n"
            "Level 1 parallel #2\n"
            "Level 1 add #3\n"
            "Level 0 parallel #2\n"
            "Level 0 add #3\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- 1.2 Error handling ---- */

static void l12_l1_func(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 1 func");
    bsi->api->handle_error(bsi, "myerror", NULL);
}

static void l12_l1_err(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("Level 1 onerror: %s", code);
    bsi->api->handle_error(bsi, "newerror", NULL);
}

static void l12_l0_func(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 0 func");
    bsi->api->add(bsi, NULL, l12_l1_func, l12_l1_err);
}

static void l12_l0_err(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("Level 0 onerror: %s", code);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = v_str("Prm");
    bsi->api->success(bsi, &a);
}

static void l12_l0_func2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    CHECK(args->arg0.type == &T_STR);
    say("Level 0 func2: %.*s", (int)args->arg0.length, args->arg0.cstr);
    bsi->api->success(bsi, NULL);
}

static void test_spec_1_2_error_handling(AsyncStepsReactor* r)
{
    BEGIN("spec_1_2_error_handling");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, l12_l0_func, l12_l0_err);
    root->api->add(root, NULL, l12_l0_func2, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out,
            "Level 0 func\n"
            "Level 1 func\n"
            "Level 1 onerror: myerror\n"
            "Level 0 onerror: newerror\n"
            "Level 0 func2: Prm\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- 1.2.1 Steps in error handler ---- */

static void l121_l2_func(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 2 func");
    bsi->api->handle_error(bsi, "second", NULL);
}

static void l121_l2_err(FutoInAsyncSteps* bsi, void* data, const char* code) { say("Level 2 onerror: %s", code); }

static void l121_l1_func(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 1 func");
    bsi->api->handle_error(bsi, "first", NULL);
}

static void l121_l1_err(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("Level 1 onerror: %s", code);
    bsi->api->add(bsi, NULL, l121_l2_func, l121_l2_err);
}

static void l121_l0_func(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("Level 0 func");
    bsi->api->add(bsi, NULL, l121_l1_func, l121_l1_err);
}

static void l121_l0_err(FutoInAsyncSteps* bsi, void* data, const char* code) { say("Level 0 onerror: %s", code); }

static void test_spec_1_2_1_steps_in_error_handler(AsyncStepsReactor* r)
{
    BEGIN("spec_1_2_1_steps_in_error_handler");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, l121_l0_func, l121_l0_err);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out,
            "Level 0 func\n"
            "Level 1 func\n"
            "Level 1 onerror: first\n"
            "Level 2 func\n"
            "Level 2 onerror: second\n"
            "Level 0 onerror: second\n");
    /* No handler took the error: the flow ends with it. */
    CHECK(u.called == 1);
    CHECK_STR(u.code, "second");
    root->api->free(root);
}

/* ---- 3.1 Single-level steps ---- */

static void s31_first(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    if (*(int*)data) {
        FutoInArgs a;
        memset(&a, 0, sizeof(a));
        a.arg0 = v_int(1);
        a.arg1 = v_int(2);
        bsi->api->success(bsi, &a);
    } else {
        bsi->api->handle_error(bsi, "NotImplemented", NULL);
    }
}

static void s3_external_error(FutoInAsyncSteps* bsi, void* data, const char* code) { say("externalError %s", code); }

static void s3_external_success(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("externalSuccess %" PRId64 " %" PRId64, as_int(&args->arg0), as_int(&args->arg1));
}

static void test_spec_3_1_single_level(AsyncStepsReactor* r)
{
    BEGIN("spec_3_1_single_level");
    for (int something = 1; something >= 0; something--) {
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, &something, s31_first, s3_external_error);
        root->api->add(root, NULL, s3_external_success, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        CHECK(u.called == !something);
        root->api->free(root);
    }
    CHECK_STR(g_out, "externalSuccess 1 2\nexternalError NotImplemented\n");
}

/* ---- 3.2 Sub-steps ---- */

static void s32_inner2_a(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    if (*(int*)data) {
        FutoInArgs a;
        memset(&a, 0, sizeof(a));
        a.arg0 = v_int(1);
        bsi->api->success(bsi, &a);
    } else {
        bsi->api->handle_error(bsi, "NotImplemented", NULL);
    }
}

static void s32_inner2_err(FutoInAsyncSteps* bsi, void* data, const char* code) { say("Spotted error %s", code); }

static void s32_inner2_b(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = args->arg0;
    a.arg1 = v_int(2);
    bsi->api->success(bsi, &a);
}

static void s32_inner(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, data, s32_inner2_a, s32_inner2_err);
    bsi->api->add(bsi, data, s32_inner2_b, NULL);
}

static void test_spec_3_2_substeps(AsyncStepsReactor* r)
{
    BEGIN("spec_3_2_substeps");
    for (int something = 1; something >= 0; something--) {
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, &something, s32_inner, s3_external_error);
        root->api->add(root, NULL, s3_external_success, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        root->api->free(root);
    }
    CHECK_STR(g_out, "externalSuccess 1 2\nSpotted error NotImplemented\nexternalError NotImplemented\n");
}

/* ---- 3.3 parallel() steps and state() ---- */

typedef struct {
    int parallel_1, parallel_2;
} S33;

static void* s33_alloc(void* data) { return calloc(1, sizeof(S33)); }
static void s33_free(void* data, void* value) { free(value); }

static S33* s33_state(FutoInAsyncSteps* bsi) { return bsi->api->stateVariable(bsi, NULL, "s33", s33_alloc, s33_free); }

static S33 g_s33_null; /* where a NULL state would write: a failed CHECK, not a crash */

static S33* s33_state_checked(FutoInAsyncSteps* bsi)
{
    S33* s = s33_state(bsi);
    CHECK(s != NULL);
    return s ? s : &g_s33_null;
}

static void s33_p1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { s33_state_checked(bsi)->parallel_1 = 1; }

static void s33_p2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    if (*(int*)data) {
        s33_state_checked(bsi)->parallel_2 = 2;
    } else {
        bsi->api->handle_error(bsi, "CommError", NULL);
    }
}

static void s33_p1_err(FutoInAsyncSteps* bsi, void* data, const char* code) { say("Spotted error %s", code); }

static void s33_p2_err(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    s33_state_checked(bsi)->parallel_2 = 0;
    bsi->api->success(bsi, NULL); /* ignore error */
}

static void s33_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInAsyncSteps* p = parallel(bsi, NULL, NULL);
    PADD(p, data, s33_p1, s33_p1_err);
    PADD(p, data, s33_p2, s33_p2_err);
}

static void s33_final(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    S33* s = s33_state_checked(bsi);
    say("externalSuccess %d %d", s->parallel_1, s->parallel_2);
}

static void test_spec_3_3_parallel_state(AsyncStepsReactor* r)
{
    BEGIN("spec_3_3_parallel_state");
    for (int something = 1; something >= 0; something--) {
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, &something, s33_outer, s3_external_error);
        root->api->add(root, NULL, s33_final, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        CHECK_OK(u);
        root->api->free(root);
    }
    CHECK_STR(g_out, "externalSuccess 1 2\nexternalSuccess 1 0\n");
}

/* ---- 3.4 loops ---- */

static void s34_body(FutoInAsyncSteps* bsi, void* data, size_t i) { say("%zu", i); }
static void s34_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->repeat(bsi, NULL, 3, s34_body, NULL);
}

static void test_spec_3_4_loops(AsyncStepsReactor* r)
{
    BEGIN("spec_3_4_loops");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, s34_step, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "0\n1\n2\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- 3.5 External event wait ---- */

typedef struct {
    FutoInAsyncSteps* bsi;
    int fail;
} Ext;

static void s35_callback(void* data)
{
    Ext* e = data;
    say("external done");
    if (e->fail) {
        e->bsi->api->handle_error(e->bsi, "CommError", "external failed");
    } else {
        e->bsi->api->success(e->bsi, NULL);
    }
}

static void s35_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Ext* e = data;
    e->bsi = bsi;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, e, s35_callback); /* callSomeExternal */
}

static void s35_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("after"); }

static void test_spec_3_5_external_wait(AsyncStepsReactor* r)
{
    BEGIN("spec_3_5_external_wait");
    for (int fail = 0; fail <= 1; fail++) {
        Ext e = {NULL, fail};
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, &e, s35_step, NULL);
        root->api->add(root, NULL, s35_after, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        CHECK(g_outlen == 0 || fail); /* waits: nothing yet */
        asyncsteps_reactor_advance(r, 10);
        CHECK(u.called == fail);
        if (fail) {
            CHECK_STR(u.code, "CommError");
            CHECK_STR(u.info, "external failed");
        }
        root->api->free(root);
    }
    CHECK_STR(g_out, "external done\nafter\nexternal done\n");
}

/* ---- 3.6 Synchronization ---- */

static void s36_section(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("critical section %s", (const char*)data); }

static void test_spec_3_6_sync(AsyncStepsReactor* r)
{
    BEGIN("spec_3_6_sync");
    FutoInSync* mutex = asyncsteps_mutex_new(10, 0);
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->addSync(root, mutex, "1", s36_section, NULL);
    root->api->addSync(root, mutex, "2", s36_section, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "critical section 1\ncritical section 2\n");
    CHECK_OK(u);
    root->api->free(root);
    asyncsteps_sync_free(mutex);
}

/* ======================================================================= */
/* 2. The 25 vtable entries                                                */
/* ======================================================================= */

/* ---- add (0): order, data, error handler ---- */

static void add_log(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("%s", (const char*)data); }

static void add_many(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    /* More adds than the image records inline (4): order must hold. */
    static const char* names[] = {"a1", "a2", "a3", "a4", "a5", "a6", "a7"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        bsi->api->add(bsi, (void*)names[i], add_log, NULL);
    }
}

static void test_add(AsyncStepsReactor* r)
{
    BEGIN("vt_add");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, "r1", add_log, NULL);
    root->api->add(root, NULL, add_many, NULL);
    root->api->add(root, "r3", add_log, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "r1\na1\na2\na3\na4\na5\na6\na7\nr3\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- parallel (1) ---- */

typedef struct {
    int cancels;
    int wait_eh;
    ptrdiff_t ids[3];
    ptrdiff_t outer_id;
} Par;

static void par_ok(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Par* p = data;
    p->ids[0] = bsi->api->rootId(bsi);
    say("ok");
}

static void par_cancel(FutoInAsyncSteps* bsi, void* data)
{
    ((Par*)data)->cancels++;
    say("cancel");
}

static void par_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Par* p = data;
    p->ids[1] = bsi->api->rootId(bsi);
    bsi->api->setCancel(bsi, data, par_cancel);
    bsi->api->waitExternal(bsi);
    say("wait");
}

static void par_wait_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    ((Par*)data)->wait_eh++;
    say("wait_eh %s", code);
}

static void par_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Par* p = data;
    p->ids[2] = bsi->api->rootId(bsi);
    say("fail");
    bsi->api->handle_error(bsi, "BranchFail", "branch info");
}

static void par_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("par_eh %s", code);
    bsi->api->success(bsi, NULL);
}

static void par_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Par* p = data;
    p->outer_id = bsi->api->rootId(bsi);
    FutoInAsyncSteps* pa = parallel(bsi, data, par_eh);
    PADD(pa, data, par_ok, NULL);
    PADD(pa, data, par_wait, par_wait_eh);
    PADD(pa, data, par_fail, NULL);
}

static void par_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("after"); }

static void test_parallel(AsyncStepsReactor* r)
{
    BEGIN("vt_parallel");
    Par p;
    memset(&p, 0, sizeof(p));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &p, par_step, NULL);
    root->api->add(root, NULL, par_after, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    /* All branches start; the failing one cancels its waiting sibling (its
       cancel handler runs, its error handler does not) before the parallel
       step's error handler gets the code. */
    CHECK_STR(g_out, "ok\nwait\nfail\ncancel\npar_eh BranchFail\nafter\n");
    CHECK(p.cancels == 1);
    CHECK(p.wait_eh == 0);
    CHECK_OK(u);
    /* rootId (16): every parallel branch is a flow of its own. */
    CHECK(p.ids[0] != 0 && p.ids[1] != 0 && p.ids[2] != 0);
    CHECK(p.ids[0] != p.ids[1] && p.ids[1] != p.ids[2] && p.ids[0] != p.ids[2]);
    CHECK(p.ids[0] != p.outer_id && p.ids[1] != p.outer_id && p.ids[2] != p.outer_id);
    root->api->free(root);
}

/* ---- stateVariable (2) ---- */

typedef struct {
    int allocs;
    int cleanups;
    void* freed[8];
} StateCtr;

static void* sv_alloc(void* data)
{
    StateCtr* c = data;
    c->allocs++;
    int* v = malloc(sizeof(int));
    *v = 40 + c->allocs;
    return v;
}

static void sv_cleanup(void* data, void* value)
{
    StateCtr* c = data;
    if (c->cleanups < 8) {
        c->freed[c->cleanups] = value;
    }
    c->cleanups++;
    free(value);
}

typedef struct {
    StateCtr* ctr;
    void* x1;
    void* x2;
    void* y;
    char info1[128];
} SvCtx;

static void sv_step1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    SvCtx* c = data;
    c->x1 = bsi->api->stateVariable(bsi, c->ctr, "x", sv_alloc, sv_cleanup);
    void* again = bsi->api->stateVariable(bsi, c->ctr, "x", sv_alloc, sv_cleanup);
    CHECK(again == c->x1);
    c->y = bsi->api->stateVariable(bsi, c->ctr, "y", sv_alloc, sv_cleanup);
    CHECK(c->y != c->x1);
    bsi->api->handle_error(bsi, "E1", "first info");
}

static void sv_step1_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    SvCtx* c = data;
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    snprintf(c->info1, sizeof(c->info1), "%s", info ? info : "(null)");
    bsi->api->success(bsi, NULL);
}

static void sv_step2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    SvCtx* c = data;
    c->x2 = bsi->api->stateVariable(bsi, c->ctr, "x", sv_alloc, sv_cleanup);
    CHECK(c->ctr->cleanups == 0);
    bsi->api->handle_error(bsi, "E2", "second info");
}

static void test_state_variable(AsyncStepsReactor* r)
{
    BEGIN("vt_stateVariable");
    StateCtr ctr;
    memset(&ctr, 0, sizeof(ctr));
    SvCtx a = {.ctr = &ctr}, b = {.ctr = &ctr};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    /* The root itself, before execute, sees the same variables. */
    void* pre = ra->api->stateVariable(ra, &ctr, "pre", sv_alloc, sv_cleanup);
    CHECK(pre != NULL && ctr.allocs == 1);
    for (int i = 0; i < 2; i++) {
        FutoInAsyncSteps* root = i ? rb : ra;
        SvCtx* c = i ? &b : &a;
        root->api->add(root, c, sv_step1, sv_step1_eh);
        root->api->add(root, c, sv_step2, NULL);
    }
    Unh ua, ub;
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    /* Once per name per root: pre, x and y for ra, x and y for rb. */
    CHECK(ctr.allocs == 5);
    CHECK(a.x1 == a.x2 && b.x1 == b.x2);
    CHECK(a.x1 != b.x1);
    CHECK(a.x1 && *(int*)a.x1 > 40);
    CHECK(ra->api->stateVariable(ra, &ctr, "pre", sv_alloc, sv_cleanup) == pre);
    CHECK(ctr.allocs == 5);
    /* error_info: the info of the last error. */
    CHECK_STR(a.info1, "first info");
    CHECK_STR(ua.code, "E2");
    CHECK_STR(ua.info, "second info");
    CHECK_STR(ub.info, "second info");
    const char* info = ra->api->stateVariable(ra, NULL, "error_info", NULL, NULL);
    CHECK_STR(info, "second info");
    /* Cleanup once each, when the root is freed, and not before. */
    CHECK(ctr.cleanups == 0);
    ra->api->free(ra);
    CHECK(ctr.cleanups == 3);
    int found = 0;
    for (int i = 0; i < 3; i++) {
        found += ctr.freed[i] == a.x1 || ctr.freed[i] == a.y || ctr.freed[i] == pre;
    }
    CHECK(found == 3);
    rb->api->free(rb);
    CHECK(ctr.cleanups == 5);
}

/* ---- stack (3) ---- */

typedef struct {
    int cleanups;
    void* seen[4];
    void* p1;
    void* p2;
    int in_sub;
    int in_next;
} StackCtx;

static StackCtx* g_stack;

static void stack_cleanup(void* value)
{
    if (g_stack->cleanups < 4) {
        g_stack->seen[g_stack->cleanups] = value;
    }
    g_stack->cleanups++;
}

static void stack_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    StackCtx* c = data;
    c->in_sub = c->cleanups;
    CHECK(((unsigned char*)c->p1)[3] == 0xAB); /* the memory lives on */
}

static void stack_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    StackCtx* c = data;
    unsigned char* p = bsi->api->stack(bsi, 64, stack_cleanup);
    CHECK(p != NULL);
    if (!p) {
        return;
    }
    int zero = 1;
    for (int i = 0; i < 64; i++) {
        zero &= p[i] == 0;
    }
    CHECK(zero);
    CHECK(((uintptr_t)p % sizeof(void*)) == 0);
    memset(p, 0xAB, 64);
    double* d = bsi->api->stack(bsi, sizeof(double) * 4, stack_cleanup);
    CHECK(d != NULL && (void*)d != (void*)p);
    c->p1 = p;
    c->p2 = d;
    bsi->api->add(bsi, c, stack_sub, NULL);
}

static void stack_next(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    StackCtx* c = data;
    c->in_next = c->cleanups;
}

static void test_stack(AsyncStepsReactor* r)
{
    BEGIN("vt_stack");
    StackCtx c;
    memset(&c, 0, sizeof(c));
    g_stack = &c;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, stack_step, NULL);
    root->api->add(root, &c, stack_next, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_OK(u);
    /* Alive while its step's sub-steps run, cleaned once when it ends. */
    CHECK(c.in_sub == 0);
    CHECK(c.in_next == 2);
    CHECK((c.seen[0] == c.p1 && c.seen[1] == c.p2) || (c.seen[0] == c.p2 && c.seen[1] == c.p1));
    root->api->free(root);
    CHECK(c.cleanups == 2);
}

/* ---- success (4) and handle_error (5) ---- */

static void succ_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = v_int(-7);
    a.arg1 = v_str("seven");
    a.arg2 = v_i32(7);
    bsi->api->success(bsi, &a);
}

static void succ_check(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("%" PRId64 " %.*s %" PRId64 " %s", as_int(&args->arg0), (int)args->arg1.length, args->arg1.cstr,
            as_int(&args->arg2), args->arg3.type ? "extra" : "none");
    bsi->api->handle_error(bsi, "MyError", "my info");
}

static void succ_check_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    say("eh %s %s", code, info ? info : "(null)");
}

static void test_success_handle_error(AsyncStepsReactor* r)
{
    BEGIN("vt_success_handle_error");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, succ_step, NULL);
    root->api->add(root, NULL, succ_check, succ_check_eh);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "-7 seven 7 none\neh MyError my info\n");
    CHECK(u.called == 1);
    CHECK_STR(u.code, "MyError");
    CHECK_STR(u.info, "my info");
    root->api->free(root);
}

/* ---- setTimeout (6) and setCancel (7) ---- */

typedef struct {
    int cancels;
    int ehs;
    char code[32];
    FutoInAsyncSteps* bsi;
} TmCtx;

static void tm_cancel(FutoInAsyncSteps* bsi, void* data)
{
    ((TmCtx*)data)->cancels++;
    say("cancel");
}

static void tm_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setTimeout(bsi, 100);
    bsi->api->setCancel(bsi, data, tm_cancel);
}

static void tm_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    TmCtx* c = data;
    c->ehs++;
    snprintf(c->code, sizeof(c->code), "%s", code);
    say("eh %s", code);
}

static void test_set_timeout(AsyncStepsReactor* r)
{
    BEGIN("vt_setTimeout");
    TmCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, tm_step, tm_eh);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_advance(r, 99);
    CHECK(c.ehs == 0 && c.cancels == 0); /* setTimeout disables implicit success */
    asyncsteps_reactor_advance(r, 1);
    CHECK(c.cancels == 1);
    CHECK(c.ehs == 1);
    CHECK_STR(c.code, "Timeout");
    CHECK_STR(g_out, "cancel\neh Timeout\n");
    CHECK(u.called == 1);
    CHECK_STR(u.code, "Timeout");
    asyncsteps_reactor_advance(r, 1000);
    CHECK(c.cancels == 1 && c.ehs == 1);
    root->api->free(root);
}

static void tm_finish(void* data)
{
    TmCtx* c = data;
    c->bsi->api->success(c->bsi, NULL);
}

static void tm_step_finished_early(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    TmCtx* c = data;
    c->bsi = bsi;
    bsi->api->setTimeout(bsi, 100);
    bsi->api->setCancel(bsi, data, tm_cancel);
    bsi->api->sched_deferred(bsi, 40, c, tm_finish);
}

static void test_set_timeout_success_first(AsyncStepsReactor* r)
{
    BEGIN("vt_setTimeout_success_first");
    TmCtx c;
    memset(&c, 0, sizeof(c));
    int after = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, tm_step_finished_early, tm_eh);
    root->api->add(root, &after, count_step, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_advance(r, 40);
    CHECK(after == 1);
    asyncsteps_reactor_advance(r, 200); /* the timeout was disarmed */
    CHECK(c.ehs == 0);
    CHECK(c.cancels == 0); /* a step that succeeded is not canceled */
    CHECK_OK(u);
    root->api->free(root);
}

static void cn_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, data, tm_cancel);
    bsi->api->waitExternal(bsi);
}

static void test_set_cancel_root_cancel(AsyncStepsReactor* r)
{
    BEGIN("vt_setCancel_cancel");
    TmCtx c;
    memset(&c, 0, sizeof(c));
    int after = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, cn_step, tm_eh);
    root->api->add(root, &after, count_step, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_advance(r, 5000);
    CHECK(c.cancels == 0); /* waits for ever */
    root->api->cancel(root); /* cancel (14) */
    run(r);
    CHECK(c.cancels == 1);
    CHECK(c.ehs == 0);  /* error handlers do not run on cancel */
    CHECK(after == 0);
    CHECK_OK(u); /* nor does unhandled_error */
    root->api->cancel(root);
    run(r);
    CHECK(c.cancels == 1);
    root->api->free(root);
    CHECK(c.cancels == 1);
}

/* ---- waitExternal (8) finished by a sched_deferred callback ---- */

typedef struct {
    FutoInAsyncSteps* bsi;
    int32_t got;
    int ran;
} WeCtx;

static void we_done(void* data)
{
    WeCtx* c = data;
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = v_i32(-123);
    c->bsi->api->success(c->bsi, &a);
}

static void we_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    WeCtx* c = data;
    c->bsi = bsi;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 30, c, we_done);
}

static void we_next(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    WeCtx* c = data;
    c->ran++;
    CHECK(args->arg0.type == &T_I32);
    c->got = args->arg0.i32;
}

static void test_wait_external(AsyncStepsReactor* r)
{
    BEGIN("vt_waitExternal");
    WeCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, we_step, NULL);
    root->api->add(root, &c, we_next, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_advance(r, 29);
    CHECK(c.ran == 0);
    asyncsteps_reactor_advance(r, 1);
    CHECK(c.ran == 1);
    CHECK(c.got == -123);
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- loop (9), breakLoop (11) ---- */

static void lp_body(FutoInAsyncSteps* bsi, void* data)
{
    int* n = data;
    ++*n;
    if (*n == 5) {
        bsi->api->breakLoop(bsi, NULL);
    }
}

static void lp_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->loop(bsi, data, lp_body, NULL);
}

static void lp_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("after %d", *(int*)data); }

static void test_loop_break(AsyncStepsReactor* r)
{
    BEGIN("vt_loop_breakLoop");
    int n = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &n, lp_step, NULL);
    root->api->add(root, &n, lp_after, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK(n == 5);
    CHECK_STR(g_out, "after 5\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- repeat (10) ---- */

static void rp_body(FutoInAsyncSteps* bsi, void* data, size_t i) { say("i=%zu", i); }

static void test_repeat(AsyncStepsReactor* r)
{
    BEGIN("vt_repeat");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    /* A loop added to a root before execute. */
    root->api->repeat(root, NULL, 4, rp_body, NULL);
    root->api->add(root, "done", add_log, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "i=0\ni=1\ni=2\ni=3\ndone\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- continueLoop (12) ---- */

typedef struct {
    size_t cur;
    int ehs;
} CtCtx;

static void ct_check(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    CtCtx* c = data;
    if (c->cur % 2) {
        bsi->api->continueLoop(bsi, NULL);
    }
}

static void ct_eh(FutoInAsyncSteps* bsi, void* data, const char* code) { ((CtCtx*)data)->ehs++; }

static void ct_record(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("%zu", ((CtCtx*)data)->cur); }

static void ct_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    CtCtx* c = data;
    c->cur = i;
    bsi->api->add(bsi, data, ct_check, ct_eh); /* continue is not an error */
    bsi->api->add(bsi, data, ct_record, NULL);
}

static void ct_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->repeat(bsi, data, 5, ct_body, NULL);
}

static void test_continue(AsyncStepsReactor* r)
{
    BEGIN("vt_continueLoop");
    CtCtx c = {0, 0};
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, ct_step, ct_eh); /* continue is not an error */
    root->api->add(root, "done", add_log, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "0\n2\n4\ndone\n");
    CHECK(c.ehs == 0);
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- labelled break and continue across nested loops ---- */

typedef struct {
    int i;
    int ehs;
} LbCtx;

static void lb_inner_eh(FutoInAsyncSteps* bsi, void* data, const char* code) { ((LbCtx*)data)->ehs++; }

static void lb_ctl(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    /* In a sub-step with an error handler, two loops deep. */
    LbCtx* c = data;
    size_t j = (size_t)args->arg0.u64;
    say("%d.%zu", c->i, j);
    if (c->i == 1 && j == 1) {
        bsi->api->continueLoop(bsi, "outer");
    } else if (c->i == 2 && j == 1) {
        bsi->api->breakLoop(bsi, NULL); /* the inner loop only */
    } else if (c->i == 3 && j == 0) {
        bsi->api->breakLoop(bsi, "outer");
    }
}

/* The index goes to the control step as a value. */
static void lb_pass(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0.type = &T_U64;
    a.arg0.u64 = (uint64_t)(uintptr_t)data;
    bsi->api->success(bsi, &a);
}

static LbCtx* g_lb;

static void lb_inner(FutoInAsyncSteps* bsi, void* data, size_t j)
{
    bsi->api->add(bsi, (void*)(uintptr_t)j, lb_pass, NULL);
    bsi->api->add(bsi, g_lb, lb_ctl, lb_inner_eh);
}

static void lb_after_inner(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("after %d", ((LbCtx*)data)->i);
}

static void lb_outer(FutoInAsyncSteps* bsi, void* data)
{
    LbCtx* c = data;
    c->i++;
    bsi->api->repeat(bsi, data, 3, lb_inner, "inner");
    bsi->api->add(bsi, data, lb_after_inner, NULL);
}

static void lb_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->loop(bsi, data, lb_outer, "outer");
}

static void test_labelled(AsyncStepsReactor* r)
{
    BEGIN("vt_labelled_break_continue");
    LbCtx c = {0, 0};
    g_lb = &c;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, lb_step, lb_inner_eh);
    root->api->add(root, "done", add_log, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "1.0\n1.1\n2.0\n2.1\nafter 2\n3.0\ndone\n");
    CHECK(c.ehs == 0);
    CHECK_OK(u);
    root->api->free(root);
}

/* ---- execute (13) with unhandled_error ---- */

static void ex_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "SecurityError", "nope");
}

static void test_execute_unhandled(AsyncStepsReactor* r)
{
    BEGIN("vt_execute_unhandled");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, nop_step, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_OK(u); /* not on success */
    /* A root whose flow ended may be given steps and executed again. */
    root->api->add(root, NULL, ex_fail, NULL);
    execute(root, &u);
    run(r);
    CHECK(u.called == 1);
    CHECK_STR(u.code, "SecurityError");
    CHECK_STR(u.info, "nope");
    root->api->free(root);
    /* NULL unhandled_error: an error ends the flow quietly. */
    root = asyncsteps_new(r);
    root->api->add(root, NULL, ex_fail, NULL);
    root->api->execute(root, NULL, NULL);
    run(r);
    CHECK_STR((const char*)root->api->stateVariable(root, NULL, "error_info", NULL, NULL), "nope");
    root->api->free(root);
}

/* ---- execute (13) on the loop: the flow's first turn runs before it
        returns (CONTRACT.md, "Where a flow runs") ---- */

typedef struct {
    AsyncStepsReactor* r;
    Unh u;
    int unh_before_return;
} ElCtx;

static void el_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("step"); }

static void el_imm(void* data)
{
    ElCtx* c = data;
    /* A flow that succeeds: its step runs inside execute. */
    FutoInAsyncSteps* ok = asyncsteps_new(c->r);
    ok->api->add(ok, NULL, el_step, NULL);
    ok->api->execute(ok, NULL, NULL);
    say("returned");
    ok->api->free(ok);
    /* A flow that fails: unhandled_error is called inside execute. */
    FutoInAsyncSteps* bad = asyncsteps_new(c->r);
    bad->api->add(bad, NULL, ex_fail, NULL);
    execute(bad, &c->u);
    c->unh_before_return = c->u.called;
    bad->api->free(bad);
}

static void test_execute_on_loop(AsyncStepsReactor* r)
{
    BEGIN("vt_execute_on_loop");
    ElCtx c;
    memset(&c, 0, sizeof(c));
    c.r = r;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->sched_immediate(root, &c, el_imm);
    run(r);
    CHECK_STR(g_out, "step\nreturned\n");
    CHECK(c.unh_before_return == 1);
    CHECK_STR(c.u.code, "SecurityError");
    root->api->free(root);
}

/* ---- addSync (15): mutex, throttle, limiter ---- */

typedef struct {
    const char* name;
    FutoInAsyncSteps* bsi;
    int* inside;
    int* max_inside;
} MxCtx;

static void mx_leave(void* data)
{
    MxCtx* c = data;
    --*c->inside;
    say("%s leave", c->name);
    c->bsi->api->success(c->bsi, NULL);
}

static void mx_section(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    MxCtx* c = data;
    ++*c->inside;
    if (*c->inside > *c->max_inside) {
        *c->max_inside = *c->inside;
    }
    say("%s enter", c->name);
    c->bsi = bsi;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, c, mx_leave);
}

static void test_add_sync_mutex(AsyncStepsReactor* r)
{
    BEGIN("vt_addSync_mutex");
    FutoInSync* m = asyncsteps_mutex_new(1, 0);
    int inside = 0, max_inside = 0;
    MxCtx ca = {"A", NULL, &inside, &max_inside}, cb = {"B", NULL, &inside, &max_inside},
          cc = {"C", NULL, &inside, &max_inside};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    FutoInAsyncSteps* rc = asyncsteps_new(r);
    ra->api->addSync(ra, m, &ca, mx_section, NULL);
    rb->api->addSync(rb, m, &cb, mx_section, NULL);
    rc->api->addSync(rc, m, &cc, mx_section, NULL);
    Unh ua, ub, uc;
    execute(ra, &ua);
    execute(rb, &ub);
    execute(rc, &uc);
    run(r);
    CHECK_STR(g_out, "A enter\n");
    asyncsteps_reactor_advance(r, 10);
    asyncsteps_reactor_advance(r, 10);
    asyncsteps_reactor_advance(r, 10);
    CHECK_STR(g_out, "A enter\nA leave\nB enter\nB leave\nC enter\nC leave\n");
    CHECK(max_inside == 1);
    CHECK(ua.called == 0 && ub.called == 0 && uc.called == 0);
    ra->api->free(ra);
    rb->api->free(rb);
    rc->api->free(rc);
    asyncsteps_sync_free(m);
}

/* The lock/unlock slots of 2.7.3, called directly as another engine's
   addSync would: lock in one step (it waits until the object lets the flow
   in), the section in the next ones, unlock in the last. */
typedef struct {
    const char* name;
    FutoInSync* sync;
    FutoInAsyncSteps* bsi;
} LockCtx;

static void lk_lock(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    LockCtx* c = data;
    c->sync->api->lock(bsi, c->sync);
}

static void lk_done(void* data)
{
    LockCtx* c = data;
    say("%s out", c->name);
    c->bsi->api->success(c->bsi, NULL);
}

static void lk_inside(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    LockCtx* c = data;
    say("%s in", c->name);
    c->bsi = bsi;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_deferred(bsi, 10, c, lk_done);
}

static void lk_unlock(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    LockCtx* c = data;
    c->sync->api->unlock(bsi, c->sync);
}

static void lk_build(FutoInAsyncSteps* root, LockCtx* c)
{
    root->api->add(root, c, lk_lock, NULL);
    root->api->add(root, c, lk_inside, NULL);
    root->api->add(root, c, lk_unlock, NULL);
}

static void test_sync_lock_unlock(AsyncStepsReactor* r)
{
    BEGIN("sync_lock_unlock");
    FutoInSync* m = asyncsteps_mutex_new(1, 0);
    LockCtx ca = {"A", m, NULL}, cb = {"B", m, NULL};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    lk_build(ra, &ca);
    lk_build(rb, &cb);
    Unh ua, ub;
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    CHECK_STR(g_out, "A in\n"); /* B waits in lock */
    asyncsteps_reactor_advance(r, 10);
    CHECK_STR(g_out, "A in\nA out\nB in\n");
    asyncsteps_reactor_advance(r, 10);
    CHECK_STR(g_out, "A in\nA out\nB in\nB out\n");
    CHECK(ua.called == 0 && ub.called == 0);

    /* A limiter that lets one in and lets none wait: the second lock fails
       its step with DefenseRejected. */
    g_outlen = 0;
    g_out[0] = 0;
    FutoInSync* l = asyncsteps_limiter_new(r, 1, 0, 10, 1000, 0);
    LockCtx cc = {"C", l, NULL}, cd = {"D", l, NULL};
    lk_build(ra, &cc);
    lk_build(rb, &cd);
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    CHECK_STR(g_out, "C in\n");
    CHECK(ub.called == 1);
    CHECK_STR(ub.code, "DefenseRejected");
    asyncsteps_reactor_advance(r, 10);
    CHECK_STR(g_out, "C in\nC out\n");
    CHECK(ua.called == 0);

    /* unlock without lock is the flow's misuse. */
    g_outlen = 0;
    g_out[0] = 0;
    ra->api->add(ra, &ca, lk_unlock, NULL);
    execute(ra, &ua);
    run(r);
    CHECK(ua.called == 1);
    CHECK_STR(ua.code, "InternalError");
    ra->api->free(ra);
    rb->api->free(rb);
    asyncsteps_sync_free(m);
    asyncsteps_sync_free(l);
}

static void th_section(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { say("%s", (const char*)data); }

static void test_add_sync_throttle(AsyncStepsReactor* r)
{
    BEGIN("vt_addSync_throttle");
    FutoInSync* t = asyncsteps_throttle_new(r, 1, 100, 0);
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    ra->api->addSync(ra, t, "A", th_section, NULL);
    rb->api->addSync(rb, t, "B", th_section, NULL);
    Unh ua, ub;
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    CHECK_STR(g_out, "A\n");
    asyncsteps_reactor_advance(r, 50);
    CHECK_STR(g_out, "A\n");
    asyncsteps_reactor_advance(r, 60);
    CHECK_STR(g_out, "A\nB\n");
    CHECK(ua.called == 0 && ub.called == 0);
    ra->api->free(ra);
    rb->api->free(rb);
    asyncsteps_sync_free(t);
}

static void test_add_sync_limiter(AsyncStepsReactor* r)
{
    BEGIN("vt_addSync_limiter");
    /* One flow inside, none may wait: the second is rejected. */
    FutoInSync* l = asyncsteps_limiter_new(r, 1, 0, 10, 1000, 0);
    int inside = 0, max_inside = 0;
    MxCtx ca = {"A", NULL, &inside, &max_inside}, cb = {"B", NULL, &inside, &max_inside};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    ra->api->addSync(ra, l, &ca, mx_section, NULL);
    rb->api->addSync(rb, l, &cb, mx_section, NULL);
    Unh ua, ub;
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    CHECK(ub.called == 1);
    CHECK_STR(ub.code, "DefenseRejected");
    asyncsteps_reactor_advance(r, 10);
    CHECK_STR(g_out, "A enter\nA leave\n");
    CHECK(ua.called == 0);
    ra->api->free(ra);
    rb->api->free(rb);
    asyncsteps_sync_free(l);
}

/* ---- rootId (16) ---- */

typedef struct {
    ptrdiff_t ids[2];
} RidCtx;

static void rid_1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { ((RidCtx*)data)->ids[0] = bsi->api->rootId(bsi); }
static void rid_2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { ((RidCtx*)data)->ids[1] = bsi->api->rootId(bsi); }

static void test_root_id(AsyncStepsReactor* r)
{
    BEGIN("vt_rootId");
    RidCtx a = {{0, 0}}, b = {{0, 0}};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    ra->api->add(ra, &a, rid_1, NULL);
    ra->api->add(ra, &a, rid_2, NULL);
    rb->api->add(rb, &b, rid_1, NULL);
    rb->api->add(rb, &b, rid_2, NULL);
    ptrdiff_t root_a = ra->api->rootId(ra);
    Unh ua, ub;
    execute(ra, &ua);
    execute(rb, &ub);
    run(r);
    CHECK(a.ids[0] != 0);
    CHECK(a.ids[0] == a.ids[1]);
    CHECK(b.ids[0] == b.ids[1]);
    CHECK(a.ids[0] != b.ids[0]);
    CHECK(root_a == a.ids[0]);
    ra->api->free(ra);
    rb->api->free(rb);
}

/* ---- isValid (17) ---- */

typedef struct {
    FutoInAsyncSteps* kept;
    int valid_in;
    int valid_later;
} IvCtx;

static void iv_1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    IvCtx* c = data;
    c->valid_in = bsi->api->isValid(bsi);
    c->kept = bsi;
}

static void iv_2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    IvCtx* c = data;
    c->valid_later = c->kept->api->isValid(c->kept);
    CHECK(bsi->api->isValid(bsi) == 1);
}

static void test_is_valid(AsyncStepsReactor* r)
{
    BEGIN("vt_isValid");
    IvCtx c = {NULL, -1, -1};
    FutoInAsyncSteps* root = asyncsteps_new(r);
    CHECK(root->api->isValid(root) == 1);
    root->api->add(root, &c, iv_1, NULL);
    root->api->add(root, &c, iv_2, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK(c.valid_in == 1);
    CHECK(c.valid_later == 0);
    CHECK_OK(u); /* isValid on a stale pointer is no misuse */
    root->api->free(root);
}

/* ---- newInstance (18), free (19), is_same_thread (24) ---- */

typedef struct {
    FutoInAsyncSteps* inst;
    int ran;
    int same_thread;
    ptrdiff_t id_parent, id_inst;
    Unh u;
} NiCtx;

static void ni_child(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    NiCtx* c = data;
    c->ran++;
    c->same_thread = bsi->api->is_same_thread(bsi);
    c->id_inst = bsi->api->rootId(bsi);
}

static void ni_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    NiCtx* c = data;
    c->id_parent = bsi->api->rootId(bsi);
    c->inst = bsi->api->newInstance(bsi);
    CHECK(c->inst != NULL && c->inst != bsi);
    if (c->inst) {
        c->inst->api->add(c->inst, c, ni_child, NULL);
        memset(&c->u, 0, sizeof(c->u));
        c->inst->api->execute(c->inst, &c->u, on_unhandled);
    }
}

static void test_new_instance_free(AsyncStepsReactor* r)
{
    BEGIN("vt_newInstance_free_is_same_thread");
    NiCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, ni_step, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK(c.ran == 1); /* runs on the same reactor */
    CHECK(c.same_thread == 1);
    CHECK(c.id_inst != 0 && c.id_inst != c.id_parent);
    CHECK(u.called == 0 && c.u.called == 0);
    if (c.inst) {
        c.inst->api->free(c.inst);
    }
    root->api->free(root);
}

/* ---- sched_immediate (20), sched_deferred (21), sched_cancel (22),
        sched_is_valid (23) ---- */

typedef struct {
    FutoInAsyncSteps* root;
    int imm, def, canceled;
    int same_thread;
} ScCtx;

static void sc_imm(void* data)
{
    ScCtx* c = data;
    c->imm++;
    c->same_thread = c->root->api->is_same_thread(c->root);
    say("imm");
}

static void sc_def(void* data)
{
    ((ScCtx*)data)->def++;
    say("def");
}

static void sc_never(void* data) { ((ScCtx*)data)->canceled++; }

static void test_sched(AsyncStepsReactor* r)
{
    BEGIN("vt_sched");
    ScCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    c.root = root;
    FutoInHandle h1 = root->api->sched_immediate(root, &c, sc_imm);
    FutoInHandle h2 = root->api->sched_deferred(root, 50, &c, sc_def);
    FutoInHandle h3 = root->api->sched_deferred(root, 10, &c, sc_never);
    FutoInHandle zero = {0, 0, 0};
    CHECK(root->api->sched_is_valid(root, &h1) == 1);
    CHECK(root->api->sched_is_valid(root, &h2) == 1);
    CHECK(root->api->sched_is_valid(root, &h3) == 1);
    CHECK(root->api->sched_is_valid(root, &zero) == 0);
    root->api->sched_cancel(root, &h3);
    CHECK(root->api->sched_is_valid(root, &h3) == 0);
    run(r);
    CHECK(c.imm == 1);
    CHECK(c.same_thread == 1);
    CHECK(root->api->sched_is_valid(root, &h1) == 0);
    asyncsteps_reactor_advance(r, 49);
    CHECK(c.def == 0);
    CHECK(root->api->sched_is_valid(root, &h2) == 1);
    asyncsteps_reactor_advance(r, 1);
    CHECK(c.def == 1);
    CHECK(root->api->sched_is_valid(root, &h2) == 0);
    root->api->sched_cancel(root, &h2); /* already run: no error */
    asyncsteps_reactor_advance(r, 100);
    CHECK(c.canceled == 0);
    CHECK(c.def == 1);
    CHECK_STR(g_out, "imm\ndef\n");
    root->api->free(root);
}

/* ======================================================================= */
/* 3. Every value type both ways                                           */
/* ======================================================================= */

#define NVALS 32
static FutoInBinaryValue g_vals[NVALS];
static int g_val_checked;
static int g_obj_marker;

static const char s8[] = "hello, world";
static const futoin_char16_t s16[] = u"h\u00e9llo";
static const futoin_char32_t s32[] = U"x\U0001F600y";
static const int8_t a_i8[] = {-1, 2, -128};
static const int16_t a_i16[] = {-300, 300};
static const int32_t a_i32[] = {-70000, 1, 2, 3};
static const int64_t a_i64[] = {INT64_MIN, INT64_MAX};
static const uint8_t a_u8[] = {0, 255, 7};
static const uint16_t a_u16[] = {65535};
static const uint32_t a_u32[] = {4000000000u, 1};
static const uint64_t a_u64[] = {UINT64_MAX, 0, 5};
static const float a_f[] = {-1.5f, 0.1f};
static const double a_d[] = {-2.25, 1e300};
static const bool a_b[] = {true, false, true};
static const char* const a_s[] = {"a", "bc"};
static const futoin_char16_t* const a_s16[] = {u"a", u"b"};
static const futoin_char32_t* const a_s32[] = {U"a"};
static int a_obj[2];

static void vals_init(void)
{
    int k = 0;
#define V(t, field, val) g_vals[k].type = (t), g_vals[k].field = (val), k++
#define ARR(base, arr, n) g_vals[k].type = &T_ARR[base], g_vals[k].p = (arr), g_vals[k].length = (n), k++
    memset(g_vals, 0, sizeof(g_vals));
    V(&T_I8, i8, -5);
    V(&T_I16, i16, -30000);
    V(&T_I32, i32, -2000000000);
    V(&T_I64, i64, INT64_MIN + 1);
    V(&T_U8, u8, 250);
    V(&T_U16, u16, 65000);
    V(&T_U32, u32, 4000000000u);
    V(&T_U64, u64, UINT64_MAX - 1);
    V(&T_FLOAT, f, -3.25f);
    V(&T_DOUBLE, d, -1.0e-300);
    V(&T_BOOL, b, true);
    V(&T_BOOL, b, false);
    g_vals[k].type = &T_STR, g_vals[k].cstr = s8, g_vals[k].length = (uint32_t)strlen(s8);
    g_vals[k].custom_data = (void*)&g_obj_marker; /* a technology-specific twin */
    k++;
    g_vals[k].type = &T_STR16, g_vals[k].cstr16 = s16, g_vals[k].length = 5, k++;
    g_vals[k].type = &T_STR32, g_vals[k].cstr32 = s32, g_vals[k].length = 3, k++;
    g_vals[k].type = &T_CUSTOM, g_vals[k].p = NULL, g_vals[k].custom_data = &g_obj_marker, k++;
    ARR(FTN_TYPE_INT8, a_i8, 3);
    ARR(FTN_TYPE_INT16, a_i16, 2);
    ARR(FTN_TYPE_INT32, a_i32, 4);
    ARR(FTN_TYPE_INT64, a_i64, 2);
    ARR(FTN_TYPE_UINT8, a_u8, 3);
    ARR(FTN_TYPE_UINT16, a_u16, 1);
    ARR(FTN_TYPE_UINT32, a_u32, 2);
    ARR(FTN_TYPE_UINT64, a_u64, 3);
    ARR(FTN_TYPE_FLOAT, a_f, 2);
    ARR(FTN_TYPE_DOUBLE, a_d, 2);
    ARR(FTN_TYPE_BOOL, a_b, 3);
    ARR(FTN_TYPE_STRING, a_s, 2);
    ARR(FTN_TYPE_STRING16, a_s16, 2);
    ARR(FTN_TYPE_STRING32, a_s32, 1);
    ARR(FTN_TYPE_CUSTOM_OBJECT, a_obj, 2);
    g_vals[k - 1].custom_data = &g_obj_marker;
    V(&T_FLOAT, f, 0.1f);
#undef V
#undef ARR
    if (k != NVALS) {
        fprintf(stderr, "vals_init: %d values, want %d\n", k, NVALS);
        abort();
    }
}

/* same_value: the descriptor a step received is the one the previous step
   succeeded with: same type pointer, same payload pointer (no copy), same
   length and custom_data, equal scalar. */
static int same_value(const FutoInBinaryValue* got, const FutoInBinaryValue* want, int idx)
{
    int ok = got->type == want->type && got->custom_data == want->custom_data && got->length == want->length;
    if (ok && want->type) {
        uint8_t f = want->type->flags;
        if (f & FTN_TYPE_ARRAY) {
            ok = got->p == want->p;
        } else {
            switch (f) {
            case FTN_TYPE_INT8: ok = got->i8 == want->i8; break;
            case FTN_TYPE_INT16: ok = got->i16 == want->i16; break;
            case FTN_TYPE_INT32: ok = got->i32 == want->i32; break;
            case FTN_TYPE_INT64: ok = got->i64 == want->i64; break;
            case FTN_TYPE_UINT8: ok = got->u8 == want->u8; break;
            case FTN_TYPE_UINT16: ok = got->u16 == want->u16; break;
            case FTN_TYPE_UINT32: ok = got->u32 == want->u32; break;
            case FTN_TYPE_UINT64: ok = got->u64 == want->u64; break;
            case FTN_TYPE_FLOAT: ok = got->f == want->f; break;
            case FTN_TYPE_DOUBLE: ok = got->d == want->d; break;
            case FTN_TYPE_BOOL: ok = got->b == want->b; break;
            default: ok = got->p == want->p; break; /* strings, custom: the same pointer */
            }
        }
    }
    if (!ok) {
        fprintf(stderr, "    value %d (flags 0x%02x): got type=%p p=%p custom=%p len=%u u64=%016" PRIx64
                "; want type=%p p=%p custom=%p len=%u u64=%016" PRIx64 "\n",
                idx, want->type ? want->type->flags : 0, (const void*)got->type, got->p, got->custom_data,
                got->length, got->u64, (const void*)want->type, want->p, want->custom_data, want->length,
                want->u64);
    }
    return ok;
}

static void val_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    int k = (int)(intptr_t)data;
    if (k > 0) {
        for (int i = 0; i < 4; i++) {
            CHECK(same_value(&args->args[i], &g_vals[4 * (k - 1) + i], 4 * (k - 1) + i));
            g_val_checked++;
        }
    }
    if (k < NVALS / 4) {
        FutoInArgs a;
        memcpy(&a, &g_vals[4 * k], sizeof(a));
        bsi->api->success(bsi, &a);
    }
}

static void test_values(AsyncStepsReactor* r)
{
    BEGIN("values_every_type");
    vals_init();
    g_val_checked = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    for (int k = 0; k <= NVALS / 4; k++) {
        root->api->add(root, (void*)(intptr_t)k, val_step, NULL);
    }
    Unh u;
    execute(root, &u);
    run(r);
    CHECK(g_val_checked == NVALS);
    CHECK_OK(u);
    root->api->free(root);
}

/* ======================================================================= */
/* 4. Cleanup of owned values                                              */
/* ======================================================================= */

static int g_cleanups;
static const void* g_cleaned;

static void owned_cleanup(FutoInBinaryValue* v)
{
    g_cleanups++;
    g_cleaned = v->p;
}

static const FutoInType T_OWNED = {FTN_TYPE_STRING, owned_cleanup};
static const char owned_text[] = "owned";

static void own_produce(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0.type = &T_OWNED;
    a.arg0.cstr = owned_text;
    a.arg0.length = 5;
    a.arg1 = v_int(9);
    bsi->api->success(bsi, &a);
}

/* Each step records how many cleanups it saw on entry, in order. */
static int g_seen[8];
static int g_nseen;

static void own_seen(void) { if (g_nseen < 8) g_seen[g_nseen++] = g_cleanups; }

static void own_replace(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    own_seen();
    CHECK(args->arg0.type == &T_OWNED && args->arg0.p == owned_text);
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = v_int(1);
    bsi->api->success(bsi, &a);
}

static void own_observe(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { own_seen(); }

static void own_add_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    own_seen();
    bsi->api->add(bsi, NULL, own_observe, NULL);
}

static void own_pass_on(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    own_seen();
    FutoInArgs a = *args;
    bsi->api->success(bsi, &a);
}

static void own_check_passed(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    own_seen();
    CHECK(args->arg0.type == &T_OWNED && args->arg0.p == owned_text);
    CHECK(as_int(&args->arg1) == 9);
}

static void own_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    own_seen();
    bsi->api->handle_error(bsi, "CommError", NULL);
}

static void cleanup_case(AsyncStepsReactor* r, const char* name, FutoInAsyncSteps_execute_callback* steps, int n,
        const int* want_seen, int nwant, int want_before_free)
{
    g_cleanups = 0;
    g_cleaned = NULL;
    g_nseen = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    for (int i = 0; i < n; i++) {
        root->api->add(root, NULL, steps[i], NULL);
    }
    Unh u;
    execute(root, &u);
    run(r);
    int ok = g_nseen == nwant;
    for (int i = 0; ok && i < nwant; i++) {
        ok = g_seen[i] == want_seen[i];
    }
    if (!ok) {
        fprintf(stderr, "    %s: cleanups seen by the steps:", name);
        for (int i = 0; i < g_nseen; i++) {
            fprintf(stderr, " %d", g_seen[i]);
        }
        fprintf(stderr, " (want");
        for (int i = 0; i < nwant; i++) {
            fprintf(stderr, " %d", want_seen[i]);
        }
        fprintf(stderr, ")\n");
    }
    CHECK(ok);
    if (want_before_free >= 0) {
        CHECK(g_cleanups == want_before_free);
    } else {
        CHECK(g_cleanups <= 1);
    }
    root->api->free(root);
    CHECK(g_cleanups == 1);
    CHECK(g_cleaned == owned_text);
}

static void test_cleanup(AsyncStepsReactor* r)
{
    BEGIN("values_cleanup_counts");
    {
        /* Replaced by the next success. */
        FutoInAsyncSteps_execute_callback s[] = {own_produce, own_replace, own_observe};
        int want[] = {0, 1};
        cleanup_case(r, "replaced", s, 3, want, 2, 1);
    }
    {
        /* The receiving step adds sub-steps: the values leave the flow. */
        FutoInAsyncSteps_execute_callback s[] = {own_produce, own_add_sub};
        int want[] = {0, 1};
        /* own_add_sub sees 0; its sub-step sees the value cleaned. */
        cleanup_case(r, "substeps", s, 2, want, 2, 1);
    }
    {
        /* The last step's values stay with the flow until the root is freed. */
        FutoInAsyncSteps_execute_callback s[] = {own_produce};
        cleanup_case(r, "root freed", s, 1, NULL, 0, -1);
    }
    {
        /* Passed on unchanged: still cleaned once only. */
        FutoInAsyncSteps_execute_callback s[] = {own_produce, own_pass_on, own_check_passed, own_observe};
        int want[] = {0, 0, 1};
        cleanup_case(r, "passed on", s, 4, want, 3, 1);
    }
    {
        /* Passed on, then an error: once. */
        FutoInAsyncSteps_execute_callback s[] = {own_produce, own_pass_on, own_fail};
        int want[] = {0, 0};
        cleanup_case(r, "error", s, 3, want, 2, -1);
    }
    {
        /* Re-executed root: the previous run's values are dropped. */
        g_cleanups = 0;
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, NULL, own_produce, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        root->api->add(root, NULL, nop_step, NULL);
        execute(root, &u);
        run(r);
        CHECK(g_cleanups == 1);
        root->api->free(root);
        CHECK(g_cleanups == 1);
    }
}

/* ======================================================================= */
/* 5. Cancel and timeout on C steps                                        */
/* ======================================================================= */

typedef struct {
    int ehs;
} CxCtx;

static void cx_cancel(FutoInAsyncSteps* bsi, void* data) { say("cancel %s", (const char*)data); }
static void cx_eh(FutoInAsyncSteps* bsi, void* data, const char* code) { say("eh %s %s", (const char*)data, code); }

static void cx_inner(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, "inner", cx_cancel);
    bsi->api->waitExternal(bsi);
}

static void cx_mid(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, "mid", cx_cancel);
    bsi->api->add(bsi, "inner", cx_inner, cx_eh);
}

static void cx_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, "outer", cx_cancel);
    bsi->api->add(bsi, "mid", cx_mid, cx_eh);
}

static void test_cancel_innermost_first(AsyncStepsReactor* r)
{
    BEGIN("cancel_innermost_first");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, "outer", cx_outer, cx_eh);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK(g_outlen == 0);
    root->api->cancel(root);
    run(r);
    CHECK_STR(g_out, "cancel inner\ncancel mid\ncancel outer\n");
    CHECK_OK(u);
    root->api->free(root);
}

static void tc_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setTimeout(bsi, 100);
    bsi->api->add(bsi, "mid", cx_mid, cx_eh);
}

static void tc_outer_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("eh outer %s", code);
    bsi->api->success(bsi, NULL);
}

static void test_timeout_cancels_substeps(AsyncStepsReactor* r)
{
    BEGIN("timeout_cancels_substeps");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, tc_outer, tc_outer_eh);
    root->api->add(root, "after", add_log, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_advance(r, 99);
    CHECK(g_outlen == 0);
    asyncsteps_reactor_advance(r, 1);
    CHECK_STR(g_out, "cancel inner\ncancel mid\neh outer Timeout\nafter\n");
    CHECK_OK(u);
    root->api->free(root);
}

/* ======================================================================= */
/* 6. Misuse: InternalError for that flow only                             */
/* ======================================================================= */

typedef struct {
    char eh_code[64];
    int next_ran;
    int never;
    FutoInAsyncSteps* kept;
    int aliased;
    int ended; /* the misusing callback ran to its end */
} MuCtx;

/* C has no exceptions: every API call returns, and the callback's own code
   after a misuse still runs (its cleanup, say). */
#define MU_END(data) (((MuCtx*)(data))->ended++)

static void mu_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    snprintf(((MuCtx*)data)->eh_code, sizeof(((MuCtx*)data)->eh_code), "%s", code);
}

static void mu_never(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { ((MuCtx*)data)->never++; }
static void mu_next(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args) { ((MuCtx*)data)->next_ran++; }

static void mu_after_error(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "MyError", NULL);
    bsi->api->success(bsi, NULL);
    MU_END(data);
}

static void mu_add_after_error(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "MyError", NULL);
    bsi->api->add(bsi, data, mu_never, NULL);
    MU_END(data);
}

static void mu_success_twice(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->success(bsi, NULL);
    bsi->api->success(bsi, NULL);
    MU_END(data);
}

static void mu_add_after_success(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->success(bsi, NULL);
    bsi->api->add(bsi, data, mu_never, NULL);
    MU_END(data);
}

static void mu_add_null(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, data, NULL, NULL);
    MU_END(data);
}

static void mu_success_after_add(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, data, mu_never, NULL);
    bsi->api->success(bsi, NULL);
    MU_END(data);
}

static void mu_keep(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ((MuCtx*)data)->kept = bsi;
    bsi->api->success(bsi, NULL);
}

static void mu_use_kept(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    MuCtx* c = data;
    c->kept->api->add(c->kept, data, mu_never, NULL);
    MU_END(data);
}

static void mu_use_kept_success(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    MuCtx* c = data;
    c->aliased = c->kept == bsi;
    c->kept->api->success(c->kept, NULL);
}

static void mu_add_user_of_kept(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, data, mu_use_kept_success, NULL);
}

static void mu_eh_set_timeout(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    bsi->api->setTimeout(bsi, 10);
}

static void mu_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "CommError", NULL);
    MU_END(data);
}

static void mu_break_outside(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->breakLoop(bsi, NULL);
    MU_END(data);
}

static void mu_add_then_loop_null(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    /* A recorded add is handed to the engine before loop() runs; the loop
       itself is the misuse. */
    bsi->api->add(bsi, data, mu_never, NULL);
    bsi->api->loop(bsi, data, NULL, NULL);
    MU_END(data);
}

static void mu_nested_parallel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    /* The accessor parallel() returns takes add and addSync only. */
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, NULL);
    CHECK(p != NULL);
    if (!p) {
        MU_END(data);
        return;
    }
    FutoInAsyncSteps* q = p->api->parallel(p, NULL, NULL);
    CHECK(q != NULL); /* a misuse, never a NULL the caller would dereference */
    if (q) {
        q->api->add(q, data, mu_never, NULL);
    }
    MU_END(data);
}

/* misuse_case runs steps (with mu_eh on the last one given) in a root,
   next to a healthy root B on the same reactor, and checks that the first
   root fails with InternalError whose error_info contains want_info. */
typedef struct {
    FutoInAsyncSteps* bsi;
    int n;
} Healthy;

static void healthy_tick(void* data)
{
    Healthy* h = data;
    FutoInArgs a;
    memset(&a, 0, sizeof(a));
    a.arg0 = v_int(h->n);
    h->bsi->api->success(h->bsi, &a);
}

static void healthy_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Healthy* h = data;
    if (args->arg0.type) {
        CHECK(as_int(&args->arg0) == h->n);
    }
    h->n++;
    h->bsi = bsi;
    bsi->api->waitExternal(bsi);
    bsi->api->sched_immediate(bsi, h, healthy_tick);
}

static void misuse_case(AsyncStepsReactor* r, const char* name, FutoInAsyncSteps_execute_callback pre,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh, const char* want_info)
{
    MuCtx c;
    memset(&c, 0, sizeof(c));
    Healthy h = {NULL, 0};
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    for (int i = 0; i < 4; i++) {
        rb->api->add(rb, &h, healthy_step, NULL);
    }
    FutoInAsyncSteps* root = asyncsteps_new(r);
    if (pre) {
        root->api->add(root, &c, pre, NULL);
    }
    root->api->add(root, &c, f, eh ? eh : mu_eh);
    root->api->add(root, &c, mu_next, NULL);
    Unh u, ub;
    execute(rb, &ub);
    execute(root, &u);
    run(r);
    int ok = u.called == 1 && strcmp(u.code, "InternalError") == 0 && strstr(u.info, want_info) != NULL;
    if (!ok) {
        fprintf(stderr, "    misuse %s: unhandled called=%d code=%s info=\"%s\" (want InternalError, \"%s\")\n",
                name, u.called, u.code, u.info, want_info);
    }
    CHECK(ok);
    if (!eh) {
        CHECK_STR(c.eh_code, "InternalError");
    }
    CHECK(c.next_ran == 0);
    CHECK(c.never == 0);
    if (c.ended != 1) {
        fprintf(stderr, "    misuse %s: the callback ran to its end %d times (want 1)\n", name, c.ended);
    }
    CHECK(c.ended == 1);
    /* The other root on the reactor was not touched. */
    CHECK(ub.called == 0);
    CHECK(h.n == 4);
    root->api->free(root);
    rb->api->free(rb);
}

static void test_misuse(AsyncStepsReactor* r)
{
    BEGIN("misuse_internal_error");
    misuse_case(r, "success after handle_error", NULL, mu_after_error, NULL, "after handle_error");
    misuse_case(r, "add after handle_error", NULL, mu_add_after_error, NULL, "after handle_error");
    misuse_case(r, "success twice", NULL, mu_success_twice, NULL, "twice");
    misuse_case(r, "add after success", NULL, mu_add_after_success, NULL, "after success");
    misuse_case(r, "add NULL", NULL, mu_add_null, NULL, "NULL");
    misuse_case(r, "success after add", NULL, mu_success_after_add, NULL, "sub-steps");
    misuse_case(r, "setTimeout in handler", NULL, mu_fail, mu_eh_set_timeout, "error handler");
    misuse_case(r, "breakLoop outside a loop", NULL, mu_break_outside, NULL, "");
    misuse_case(r, "bsi kept past its step", mu_keep, mu_use_kept, NULL, "kept past its step");
    misuse_case(r, "parallel on a parallel accessor", NULL, mu_nested_parallel, NULL, "Parallel");
    misuse_case(r, "loop with a NULL body after an add", NULL, mu_add_then_loop_null, NULL, "");
}

static void test_misuse_kept_bsi_reused(AsyncStepsReactor* r)
{
    BEGIN("misuse_kept_bsi_after_image_reuse");
    /* A bsi kept past its step, used by a later step of the same flow that
       runs after other steps were added: the later step must still fail
       with InternalError (its pointer may not silently become another
       step's). */
    MuCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, mu_keep, NULL);
    root->api->add(root, &c, mu_add_user_of_kept, NULL);
    root->api->add(root, &c, mu_next, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    if (c.aliased) {
        fprintf(stderr, "    the kept pointer is the later step's own bsi (image reused)\n");
    }
    CHECK(u.called == 1);
    CHECK_STR(u.code, "InternalError");
    CHECK(c.next_ran == 0);
    root->api->free(root);
}

/* ======================================================================= */
/* 7. A started reactor, finished from another thread                      */
/* ======================================================================= */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    FutoInAsyncSteps* waiting; /* the step waiting for the other thread */
    int done;
    int timeout_seen;
    int same_thread_in_step;
    int same_thread_in_final; /* on the loop, or on the worker whose success ran it as the loop */
    pthread_t wait_thread, final_thread; /* where mt_wait_step and mt_final ran */
    int64_t got;
    int cancels;
    int ehs;
    Unh u;
} Mt;

static void mt_signal(Mt* m, int done)
{
    pthread_mutex_lock(&m->mu);
    if (done) {
        m->done = 1;
    }
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void mt_timeout_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setTimeout(bsi, 5); /* nothing finishes it: it times out */
}

static void mt_timeout_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    Mt* m = data;
    m->timeout_seen = strcmp(code, "Timeout") == 0;
    bsi->api->success(bsi, NULL);
}

static void mt_wait_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Mt* m = data;
    m->same_thread_in_step = bsi->api->is_same_thread(bsi);
    m->wait_thread = pthread_self();
    bsi->api->waitExternal(bsi);
    bsi->api->setTimeout(bsi, 60000); /* a safety net only */
    pthread_mutex_lock(&m->mu);
    m->waiting = bsi;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void mt_final(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Mt* m = data;
    m->same_thread_in_final = bsi->api->is_same_thread(bsi);
    m->final_thread = pthread_self();
    m->got = as_int(&args->arg0);
    mt_signal(m, 1);
}

static void mt_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    Mt* m = data;
    on_unhandled(bsi, &m->u, code);
    mt_signal(m, 1);
}

static void mt_cancel(FutoInAsyncSteps* bsi, void* data) { ((Mt*)data)->cancels++; }
static void mt_eh(FutoInAsyncSteps* bsi, void* data, const char* code) { ((Mt*)data)->ehs++; }

static void mt_wait_forever(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, data, mt_cancel);
    bsi->api->waitExternal(bsi);
    mt_signal(data, 1);
}

static void* mt_thread(void* arg)
{
    Mt* m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->waiting && !m->done) {
        pthread_cond_wait(&m->cv, &m->mu);
    }
    FutoInAsyncSteps* w = m->waiting;
    pthread_mutex_unlock(&m->mu);
    if (w) {
        FutoInArgs a;
        memset(&a, 0, sizeof(a));
        a.arg0 = v_int(42);
        w->api->success(w, &a); /* from a thread that is not the loop */
    }
    return NULL;
}

/* mt_init readies the state a started-reactor test shares with its flow. */
static void mt_init(Mt* m)
{
    memset(m, 0, sizeof(*m));
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
}

/* mt_destroy frees what mt_init made. */
static void mt_destroy(Mt* m)
{
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
}

/* mt_wait_done blocks until the flow has ended (mt_final, mt_unhandled or
   mt_wait_forever set done). */
static void mt_wait_done(Mt* m)
{
    pthread_mutex_lock(&m->mu);
    while (!m->done) {
        pthread_cond_wait(&m->cv, &m->mu);
    }
    pthread_mutex_unlock(&m->mu);
}

/* A reactor started with asyncsteps_reactor_start_own_thread keeps every
   step on its loop's thread: the step after a worker thread's success runs
   there, never on the worker (which a plain started reactor may use while
   its loop is idle), and execute from this thread does not run the first
   step here either. */
static void test_started_reactor_own_thread(void)
{
    BEGIN("started_reactor_own_thread");
    AsyncStepsReactor* r = asyncsteps_reactor_start_own_thread(-1);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    for (int round = 0; round < 20; round++) {
        Mt m;
        mt_init(&m);
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, &m, mt_wait_step, NULL);
        root->api->add(root, &m, mt_final, NULL);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, mt_thread, &m) == 0);
        root->api->execute(root, &m, mt_unhandled);
        mt_wait_done(&m);
        pthread_join(th, NULL);
        CHECK(m.got == 42);
        CHECK(m.u.called == 0);
        CHECK(m.same_thread_in_final == 1);
        CHECK(pthread_equal(m.final_thread, m.wait_thread));
        CHECK(!pthread_equal(m.final_thread, th));
        CHECK(!pthread_equal(m.wait_thread, pthread_self()));
        root->api->free(root);
        mt_destroy(&m);
    }
    asyncsteps_reactor_free(r);
}

static void test_started_reactor(void)
{
    BEGIN("started_reactor_threads");
    AsyncStepsReactor* r = asyncsteps_reactor_start(-1);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    Mt m;
    mt_init(&m);
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &m, mt_timeout_step, mt_timeout_eh);
    root->api->add(root, &m, mt_wait_step, NULL);
    root->api->add(root, &m, mt_final, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, mt_thread, &m) == 0);
    root->api->execute(root, &m, mt_unhandled);
    CHECK(root->api->is_same_thread(root) == 0); /* this is not the loop's thread */
    mt_wait_done(&m);
    pthread_join(th, NULL);
    CHECK(m.timeout_seen == 1);
    CHECK(m.same_thread_in_step == 1);
    CHECK(m.same_thread_in_final == 1);
    CHECK(m.got == 42);
    CHECK(m.u.called == 0);
    /* Free from this thread: the flow has ended (or is ending). */
    root->api->free(root);
    asyncsteps_reactor_free(r);
    mt_destroy(&m);
}

/* Freeing a reactor with a flow still waiting: it ends Canceled, its
   cancel handler runs, nothing else. */
static void test_reactor_free_cancels(void)
{
    BEGIN("reactor_free_cancels_flows");
    AsyncStepsReactor* r = asyncsteps_reactor_manual();
    TmCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, cn_step, tm_eh);
    Unh u;
    execute(root, &u);
    run(r);
    asyncsteps_reactor_free(r);
    CHECK(c.cancels == 1);
    CHECK(c.ehs == 0);
    CHECK_OK(u);
}

/* A worker finishes each waiting step the moment it gets its pointer,
   often while the step's callback is still returning (found by review: the
   result was recorded into the loop's scratch and lost). */
enum { XT_STEPS = 2000 };

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    FutoInAsyncSteps* slot; /* a step to finish */
    int done;               /* 1: the flow ended well, 2: with an error, 3: the worker quits */
    int completed;
} Xt;

static void* xt_worker(void* p)
{
    Xt* x = p;
    FutoInArgs a;
    memset(&a, 0, sizeof a);
    a.arg0 = v_int(7);
    pthread_mutex_lock(&x->mu);
    for (;;) {
        while (!x->slot && !x->done) {
            pthread_cond_wait(&x->cv, &x->mu);
        }
        if (!x->slot) {
            break;
        }
        FutoInAsyncSteps* b = x->slot;
        x->slot = NULL;
        pthread_mutex_unlock(&x->mu);
        b->api->success(b, &a); /* from a thread that is not the loop, maybe before the callback returned */
        pthread_mutex_lock(&x->mu);
        x->completed++;
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

static void xt_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    Xt* x = data;
    bsi->api->waitExternal(bsi);
    pthread_mutex_lock(&x->mu);
    x->slot = bsi;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void xt_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)i;
    bsi->api->add(bsi, data, xt_wait, NULL);
}

static void xt_top(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->repeat(bsi, data, XT_STEPS, xt_body, NULL);
}

static void xt_end(Xt* x, int how)
{
    pthread_mutex_lock(&x->mu);
    x->done = how;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void xt_final(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    xt_end(data, 1);
}

static void xt_unhandled(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)code;
    xt_end(data, 2);
}

static void test_worker_completes_during_callback(void)
{
    BEGIN("worker_completes_during_callback");
    AsyncStepsReactor* r = asyncsteps_reactor_start(-1);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    Xt x;
    memset(&x, 0, sizeof x);
    pthread_mutex_init(&x.mu, NULL);
    pthread_cond_init(&x.cv, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, xt_worker, &x) == 0);
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &x, xt_top, NULL);
    root->api->add(root, &x, xt_final, NULL);
    root->api->execute(root, &x, xt_unhandled);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += 20; /* a lost success would hang the flow: fail instead */
    pthread_mutex_lock(&x.mu);
    while (!x.done) {
        if (pthread_cond_timedwait(&x.cv, &x.mu, &deadline) != 0) {
            break;
        }
    }
    int done = x.done;
    x.done = x.done ? x.done : 3;
    pthread_cond_broadcast(&x.cv);
    pthread_mutex_unlock(&x.mu);
    /* Counted after the join: the worker counts a success after its
       success call returns, and the last one can end the flow (xt_final)
       before the worker gets the lock back. */
    pthread_join(th, NULL);
    CHECK(done == 1);
    CHECK(x.completed == XT_STEPS);
    asyncsteps_reactor_free(r);
}

/* The same on a started reactor: its thread runs the cancel handlers. */
static void test_started_reactor_free_cancels(void)
{
    BEGIN("started_reactor_free_cancels_flows");
    AsyncStepsReactor* r = asyncsteps_reactor_start(-1);
    CHECK(r != NULL);
    if (!r) {
        return;
    }
    Mt m;
    mt_init(&m);
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &m, mt_wait_forever, mt_eh);
    root->api->add(root, &m, mt_wait_step, NULL); /* never reached */
    root->api->execute(root, &m, mt_unhandled);
    mt_wait_done(&m);
    asyncsteps_reactor_free(r);
    CHECK(m.cancels == 1);
    CHECK(m.ehs == 0);
    CHECK(m.u.called == 0);
    CHECK(m.waiting == NULL);
    mt_destroy(&m);
}

/* ======================================================================= */


/* ======================================================================= */
/* Chains: C steps that a C step added run back to back in C               */
/* ======================================================================= */

/* The library runs the C steps a C step added without returning to its Go
   engine between them while each succeeds plainly; anything else (an
   error, a wait, a timeout, sub-steps, a call the step makes into the
   engine, a cancel) hands the step to the engine where it stands. These
   check that a program sees the same flow either way. */

static void ch_inc(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    int64_t a = args->arg0.type ? as_int(&args->arg0) : 0;
    int64_t b = args->arg1.type ? as_int(&args->arg1) : 0;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0 = v_i32((int32_t)(a + 1));
    out.arg1 = v_i32((int32_t)(b + 2));
    bsi->api->success(bsi, &out);
}

static void ch_say_args(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    if (args->arg0.type) {
        say("%s %" PRId64 " %" PRId64, (const char*)data, as_int(&args->arg0), as_int(&args->arg1));
    } else {
        say("%s none", (const char*)data);
    }
}

static void ch_spawn_incs(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    for (intptr_t i = 0; i < (intptr_t)data; i++) {
        bsi->api->add(bsi, NULL, ch_inc, NULL);
    }
    bsi->api->add(bsi, "end", ch_say_args, NULL);
}

static void test_chain_values(AsyncStepsReactor* r)
{
    BEGIN("chain_values");
    intptr_t counts[] = {1, 255, 256, 1000, 4095};
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        out_reset();
        FutoInAsyncSteps* root = asyncsteps_new(r);
        root->api->add(root, (void*)counts[i], ch_spawn_incs, NULL);
        root->api->add(root, "after", ch_say_args, NULL);
        Unh u;
        execute(root, &u);
        run(r);
        char want[128];
        snprintf(want, sizeof(want), "end %d %d\nafter none\n", (int)counts[i], 2 * (int)counts[i]);
        CHECK_STR(g_out, want);
        CHECK_OK(u);
        root->api->free(root);
    }
}

static void ch_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("fail %s", (const char*)data);
    bsi->api->handle_error(bsi, "ChainError", "a chained step failed");
}

static void ch_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    say("recover %s", code);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0 = v_i32(40);
    out.arg1 = v_i32(50);
    bsi->api->success(bsi, &out);
}

static void ch_outer_eh(FutoInAsyncSteps* bsi, void* data, const char* code) { say("outer %s", code); }

static void ch_spawn_errors(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, "a", ch_fail, ch_recover); /* handled: the chain's values go on from 40 50 */
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, "b", ch_say_args, NULL);
    bsi->api->add(bsi, "c", ch_fail, NULL); /* to the adding step's handler */
    bsi->api->add(bsi, "never", ch_say_args, NULL);
}

static void test_chain_errors(AsyncStepsReactor* r)
{
    BEGIN("chain_errors");
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, ch_spawn_errors, ch_outer_eh);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "fail a\nrecover ChainError\nb 41 52\nfail c\nouter ChainError\n");
    CHECK(u.called == 1);
    CHECK_STR(u.code, "ChainError");
    root->api->free(root);
}

static FutoInAsyncSteps* ch_waiting;
static int ch_cancels;

static void ch_on_cancel(FutoInAsyncSteps* bsi, void* data)
{
    ch_cancels++;
    say("canceled %s", (const char*)data);
}

static void ch_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("wait %s", (const char*)data);
    bsi->api->setCancel(bsi, data, ch_on_cancel);
    bsi->api->waitExternal(bsi);
    ch_waiting = bsi;
}

static void ch_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("timeout %s", (const char*)data);
    bsi->api->setTimeout(bsi, 10);
}

static void ch_spawn_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, "w", ch_wait, NULL);
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, "x", ch_say_args, NULL);
    bsi->api->add(bsi, "t", ch_timeout, ch_outer_eh);
    bsi->api->add(bsi, "never", ch_say_args, NULL);
}

static void test_chain_wait_timeout(AsyncStepsReactor* r)
{
    BEGIN("chain_wait_timeout");
    ch_waiting = NULL;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, NULL, ch_spawn_wait, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "wait w\n");
    CHECK(ch_waiting != NULL);
    if (ch_waiting) {
        FutoInArgs out;
        memset(&out, 0, sizeof(out));
        out.arg0 = v_i32(7);
        out.arg1 = v_i32(8);
        FutoInAsyncSteps* w = ch_waiting;
        ch_waiting = NULL;
        w->api->success(w, &out);
    }
    run(r);
    CHECK_STR(g_out, "wait w\nx 8 10\ntimeout t\n");
    CHECK(u.called == 0);
    asyncsteps_reactor_advance(r, 9);
    run(r);
    CHECK(u.called == 0);
    asyncsteps_reactor_advance(r, 2);
    run(r);
    CHECK_STR(g_out, "wait w\nx 8 10\ntimeout t\nouter Timeout\n");
    CHECK(u.called == 1);
    CHECK_STR(u.code, "Timeout");
    root->api->free(root);
}

static FutoInAsyncSteps* ch_root;

static void ch_cancel_root(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    say("cancel");
    ch_root->api->cancel(ch_root);
    say("cancel returned");
}

static void ch_spawn_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->setCancel(bsi, "spawner", ch_on_cancel);
    bsi->api->add(bsi, "a", ch_say_args, NULL);
    bsi->api->add(bsi, NULL, ch_cancel_root, NULL);
    bsi->api->add(bsi, "never", ch_say_args, NULL);
}

static void ch_spawn_cancel_plain(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, "a", ch_say_args, NULL);
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, NULL, ch_cancel_root, NULL);
    bsi->api->add(bsi, "never", ch_say_args, NULL);
}

static void test_chain_cancel(AsyncStepsReactor* r)
{
    BEGIN("chain_cancel");
    /* A chained step cancels its own root: the flow stops after its
       callback, as it would between two engine steps. */
    FutoInAsyncSteps_execute_callback spawners[] = {ch_spawn_cancel, ch_spawn_cancel_plain};
    const char* want[] = {"a none\ncancel\ncancel returned\ncanceled spawner\n", "a none\ncancel\ncancel returned\n"};
    for (int i = 0; i < 2; i++) {
        out_reset();
        ch_root = asyncsteps_new(r);
        ch_root->api->add(ch_root, NULL, spawners[i], NULL);
        ch_root->api->add(ch_root, "never", ch_say_args, NULL);
        Unh u;
        execute(ch_root, &u);
        run(r);
        CHECK_STR(g_out, want[i]);
        CHECK(u.called == 0); /* a cancel is not an error */
        ch_root->api->free(ch_root);
    }
    /* Canceled while a chained step waits. */
    out_reset();
    ch_cancels = 0;
    ch_waiting = NULL;
    ch_root = asyncsteps_new(r);
    ch_root->api->add(ch_root, NULL, ch_spawn_wait, NULL);
    Unh u;
    execute(ch_root, &u);
    run(r);
    ch_root->api->cancel(ch_root);
    run(r);
    CHECK_STR(g_out, "wait w\ncanceled w\n");
    CHECK(ch_cancels == 1);
    ch_root->api->free(ch_root);
}

static void ch_spawn_three(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, NULL, ch_inc, NULL);
    bsi->api->add(bsi, data, ch_say_args, NULL);
}

static void ch_loop_body(FutoInAsyncSteps* bsi, void* data)
{
    int* n = data;
    if (++*n > 3) {
        bsi->api->breakLoop(bsi, NULL);
        return;
    }
    bsi->api->add(bsi, "iter", ch_spawn_three, NULL);
}

static void test_chain_loop_parallel(AsyncStepsReactor* r)
{
    BEGIN("chain_loop_parallel");
    int n = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->loop(root, &n, ch_loop_body, NULL);
    Unh u;
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "iter 2 4\niter 2 4\niter 2 4\n");
    CHECK_OK(u);
    root->api->free(root);

    out_reset();
    root = asyncsteps_new(r);
    FutoInAsyncSteps* p = parallel(root, NULL, NULL);
    PADD(p, "A", ch_spawn_three, NULL);
    PADD(p, "B", ch_spawn_three, NULL);
    root->api->add(root, "after", ch_say_args, NULL);
    execute(root, &u);
    run(r);
    CHECK_STR(g_out, "A 2 4\nB 2 4\nafter none\n");
    CHECK_OK(u);
    root->api->free(root);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    AsyncStepsReactor* r = asyncsteps_reactor_manual();

    test_spec_1_1_levels(r);
    test_spec_1_2_error_handling(r);
    test_spec_1_2_1_steps_in_error_handler(r);
    test_spec_3_1_single_level(r);
    test_spec_3_2_substeps(r);
    test_spec_3_3_parallel_state(r);
    test_spec_3_4_loops(r);
    test_spec_3_5_external_wait(r);
    test_spec_3_6_sync(r);

    test_add(r);
    test_parallel(r);
    test_state_variable(r);
    test_stack(r);
    test_success_handle_error(r);
    test_set_timeout(r);
    test_set_timeout_success_first(r);
    test_set_cancel_root_cancel(r);
    test_wait_external(r);
    test_loop_break(r);
    test_repeat(r);
    test_continue(r);
    test_labelled(r);
    test_execute_unhandled(r);
    test_add_sync_mutex(r);
    test_add_sync_throttle(r);
    test_add_sync_limiter(r);
    test_sync_lock_unlock(r);
    test_root_id(r);
    test_is_valid(r);
    test_new_instance_free(r);
    test_sched(r);
    test_execute_on_loop(r);

    test_values(r);
    test_cleanup(r);

    test_cancel_innermost_first(r);
    test_timeout_cancels_substeps(r);

    test_misuse(r);
    test_misuse_kept_bsi_reused(r);

    test_chain_values(r);
    test_chain_errors(r);
    test_chain_wait_timeout(r);
    test_chain_cancel(r);
    test_chain_loop_parallel(r);

    asyncsteps_reactor_free(r);

    test_started_reactor();
    test_started_reactor_own_thread();
    test_worker_completes_during_callback();
    test_reactor_free_cancels();
    test_started_reactor_free_cancels();

    return check_summary();
}
