/*
 * steps.c: C step functions for package abi's tests. They use only the
 * FutoInAsyncSteps vtable, so they run in any implementation's flow.
 */
#include <stdlib.h>
#include <string.h>
#include "ctest.h"
#include "_cgo_export.h"

int ct_log[1024];
int ct_nlog;
char ct_code[64];
char ct_info[256];
int ct_cancels;
int ct_stack_cleanups;
int ct_stack_bad;
int ct_value_cleanups;
int ct_state_allocs;
int ct_state_cleanups;
int ct_big_bad;
int ct_big_ok;
int ct_break_at = -1;
int ct_continue_at = -1;
int ct_inc_seen[2];
FutoInAsyncSteps* ct_waiting;
FutoInAsyncSteps* ct_kept;

void ct_reset(void)
{
    ct_nlog = 0;
    ct_code[0] = 0;
    ct_info[0] = 0;
    ct_cancels = ct_stack_cleanups = ct_stack_bad = ct_value_cleanups = 0;
    ct_state_allocs = ct_state_cleanups = ct_big_bad = ct_big_ok = 0;
    ct_break_at = ct_continue_at = -1;
    ct_inc_seen[0] = ct_inc_seen[1] = 0;
    ct_waiting = NULL;
    ct_kept = NULL;
}

void ct_push(int v)
{
    if (ct_nlog < (int)(sizeof(ct_log) / sizeof(ct_log[0]))) {
        ct_log[ct_nlog++] = v;
    }
}

static void log_tag(intptr_t v) { ct_push((int)v); }

static void keep_code(const char* code)
{
    strncpy(ct_code, code ? code : "(null)", sizeof(ct_code) - 1);
    ct_code[sizeof(ct_code) - 1] = 0;
}

/* Types. */

static const FutoInType t_i32 = {FTN_TYPE_INT32, NULL};

static void owned_cleanup(FutoInBinaryValue* v)
{
    ct_value_cleanups++;
    free((void*)v->p);
}
static const FutoInType t_owned = {FTN_TYPE_STRING, owned_cleanup};

void ct_owned_value(FutoInBinaryValue* v, const char* s)
{
    size_t n = strlen(s);
    char* p = malloc(n + 1);
    memcpy(p, s, n + 1);
    v->type = &t_owned;
    v->cstr = p;
    v->custom_data = NULL;
    v->length = (uint32_t)n;
}

/* int_of reads an integer argument of any integer width. */
static int64_t int_of(const FutoInBinaryValue* v)
{
    if (!v->type) {
        return 0;
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
    default: return -1000000;
    }
}

/* Values of every type. */

static const int16_t arr_i16[3] = {-1, 2, -3};
static const int32_t arr_i32[3] = {-10, 20, -30};
static const uint8_t arr_u8[4] = {1, 2, 3, 255};
static const futoin_char16_t s16[3] = {'h', 'i', 0};
static const futoin_char32_t s32[4] = {'a', 'b', 'c', 0};
static const char s8[] = "hello";
static int custom_obj = 7;

static FutoInType types[0x20];
static FutoInBinaryValue values[0x20];
static int types_ready;

static void init_values(void)
{
    if (types_ready) {
        return;
    }
    types_ready = 1;
    for (int i = 0; i < 0x20; i++) {
        *(FutoInTypeFlags*)&types[i].flags = (FutoInTypeFlags)i;
        values[i].type = &types[i];
    }
    values[FTN_TYPE_CUSTOM_OBJECT].custom_data = &custom_obj;
    values[FTN_TYPE_STRING].cstr = s8;
    values[FTN_TYPE_STRING].length = 5;
    values[FTN_TYPE_STRING16].cstr16 = s16;
    values[FTN_TYPE_STRING16].length = 2;
    values[FTN_TYPE_STRING32].cstr32 = s32;
    values[FTN_TYPE_STRING32].length = 3;
    values[FTN_TYPE_BOOL].b = true;
    values[FTN_TYPE_INT8].i8 = -8;
    values[FTN_TYPE_INT16].i16 = -16000;
    values[FTN_TYPE_INT32].i32 = -2000000000;
    values[FTN_TYPE_INT64].i64 = -9000000000000000000LL;
    values[FTN_TYPE_UINT8].u8 = 250;
    values[FTN_TYPE_UINT16].u16 = 65000;
    values[FTN_TYPE_UINT32].u32 = 4000000000u;
    values[FTN_TYPE_UINT64].u64 = 18000000000000000000ull;
    values[FTN_TYPE_FLOAT].f = 1.5f;
    values[FTN_TYPE_DOUBLE].d = -2.25;
    values[FTN_TYPE_ARRAY | FTN_TYPE_UINT8].p = arr_u8;
    values[FTN_TYPE_ARRAY | FTN_TYPE_UINT8].length = 4;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT8].p = arr_u8;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT8].length = 4;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT16].p = arr_i16;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT16].length = 3;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT32].p = arr_i32;
    values[FTN_TYPE_ARRAY | FTN_TYPE_INT32].length = 3;
}

FutoInBinaryValue* ct_value(int flags)
{
    init_values();
    return &values[flags & 0x1f];
}

const void* ct_value_data(int flags)
{
    init_values();
    if ((flags & 0x1f) == FTN_TYPE_CUSTOM_OBJECT) {
        return values[FTN_TYPE_CUSTOM_OBJECT].custom_data;
    }
    return values[flags & 0x1f].p;
}

#define BIG_1K                                                                                    \
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" \
    "0123456789abcdef0123456789abcdef"
#define BIG_1K_8 BIG_1K BIG_1K BIG_1K BIG_1K BIG_1K BIG_1K BIG_1K BIG_1K
const char ct_big_a[1025] = BIG_1K_8;
const char ct_big_b[1025] = BIG_1K_8;

/* Steps. */

static void s_inc(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    int64_t a = int_of(&args->arg0), b = int_of(&args->arg1);
    ct_inc_seen[0] = (int)a;
    ct_inc_seen[1] = (int)b;
    FutoInArgs out;
    out.arg0.type = &t_i32;
    out.arg0.i64 = 0;
    out.arg0.i32 = (int32_t)(a + 1);
    out.arg0.custom_data = NULL;
    out.arg0.length = 0;
    out.arg1 = out.arg0;
    out.arg1.i32 = (int32_t)(b + 1);
    out.arg2.type = NULL;
    out.arg3.type = NULL;
    bsi->api->success(bsi, &out);
}

static void s_record(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    log_tag((intptr_t)data);
    FutoInArgs out = *args;
    bsi->api->success(bsi, &out);
}

static void s_mark(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    log_tag((intptr_t)data);
}

static void s_add_subs(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    for (intptr_t i = 0; i < (intptr_t)data; i++) {
        bsi->api->add(bsi, (void*)(100 + i), s_record, NULL);
    }
}

static void s_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    log_tag((intptr_t)data);
    bsi->api->handle_error(bsi, "CError", "c step failed");
}

static void on_cancel(FutoInAsyncSteps* bsi, void* data)
{
    (void)bsi;
    ct_cancels++;
    log_tag(-(intptr_t)data - 10000);
    if (ct_waiting == bsi) {
        ct_waiting = NULL;
    }
}

static void s_wait(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    log_tag((intptr_t)data);
    bsi->api->setCancel(bsi, data, on_cancel);
    bsi->api->waitExternal(bsi);
    ct_waiting = bsi;
}

static void s_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setTimeout(bsi, (uint32_t)(intptr_t)data);
    bsi->api->setCancel(bsi, data, on_cancel);
    ct_waiting = bsi;
}

void ct_complete_waiting(int32_t v)
{
    FutoInAsyncSteps* bsi = ct_waiting;
    ct_waiting = NULL;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &t_i32;
    out.arg0.i32 = v;
    bsi->api->success(bsi, &out);
}

void ct_complete_waiting_owned(void)
{
    FutoInAsyncSteps* bsi = ct_waiting;
    ct_waiting = NULL;
    ct_complete_owned_on(bsi);
}

void ct_complete_owned_on(FutoInAsyncSteps* bsi)
{
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    ct_owned_value(&out.arg0, "late");
    ct_owned_value(&out.arg1, "later");
    bsi->api->success(bsi, &out);
}

void ct_fail_waiting(const char* code)
{
    FutoInAsyncSteps* bsi = ct_waiting;
    ct_waiting = NULL;
    bsi->api->handle_error(bsi, code, "failed from outside");
}

static void stack_cleanup(void* p)
{
    (void)p;
    ct_stack_cleanups++;
}

static void s_stack(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    for (int k = 0; k < 2; k++) {
        unsigned char* p = bsi->api->stack(bsi, 64, stack_cleanup);
        if (!p) {
            ct_stack_bad++;
            continue;
        }
        for (int i = 0; i < 64; i++) {
            if (p[i]) {
                ct_stack_bad++;
            }
        }
        memset(p, (int)(intptr_t)data, 64);
    }
}

static void repeat_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data;
    if ((int)i == ct_continue_at) {
        bsi->api->continueLoop(bsi, NULL);
        return;
    }
    log_tag(1000 + (intptr_t)i);
    if ((int)i == ct_break_at) {
        bsi->api->breakLoop(bsi, NULL);
    }
}

static void s_repeat(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->repeat(bsi, NULL, (size_t)(intptr_t)data, repeat_body, NULL);
}

static void loop_body(FutoInAsyncSteps* bsi, void* data)
{
    int* n = data;
    n[0]++;
    log_tag(2000 + n[0]);
    if (n[0] >= n[1]) {
        bsi->api->breakLoop(bsi, "L");
    }
}

static void s_loop(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    int* n = bsi->api->stack(bsi, 2 * sizeof(int), NULL);
    n[1] = (int)(intptr_t)data;
    bsi->api->loop(bsi, n, loop_body, "L");
}

static void s_value(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0 = *ct_value((int)(intptr_t)data);
    bsi->api->success(bsi, &out);
}

static void s_owned(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    for (int i = 0; i < (int)(intptr_t)data && i < 4; i++) {
        ct_owned_value(&out.args[i], "owned");
    }
    bsi->api->success(bsi, &out);
}

static const FutoInType t_big = {FTN_TYPE_STRING, NULL};

static void s_big4(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    if (args->arg3.type) {
        if (args->arg2.cstr == ct_big_a && args->arg3.cstr == ct_big_b && args->arg2.length == 1024 &&
                args->arg3.length == 1024 && args->arg0.i32 == 1 && args->arg1.i32 == 2) {
            ct_big_ok++;
        } else {
            ct_big_bad++;
        }
    }
    FutoInArgs out;
    out.arg0.type = &t_i32;
    out.arg0.i64 = 0;
    out.arg0.i32 = 1;
    out.arg0.custom_data = NULL;
    out.arg0.length = 0;
    out.arg1 = out.arg0;
    out.arg1.i32 = 2;
    out.arg2.type = &t_big;
    out.arg2.cstr = ct_big_a;
    out.arg2.custom_data = NULL;
    out.arg2.length = 1024;
    out.arg3 = out.arg2;
    out.arg3.cstr = ct_big_b;
    bsi->api->success(bsi, &out);
}

static void eh_record(FutoInAsyncSteps* bsi, void* data, const char* code);

static void s_parallel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, NULL, eh_record);
    p->api->add(p, data, s_wait, NULL);
    p->api->add(p, (void*)((intptr_t)data + 1), s_fail, NULL);
}

static void* state_alloc(void* data)
{
    (void)data;
    ct_state_allocs++;
    return calloc(1, sizeof(int));
}

static void state_cleanup(void* data, void* value)
{
    (void)data;
    ct_state_cleanups++;
    free(value);
}

static void s_state(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    int* v = bsi->api->stateVariable(bsi, NULL, "ct.counter", state_alloc, state_cleanup);
    if (!v) {
        bsi->api->handle_error(bsi, "NoState", "stateVariable returned NULL");
        return;
    }
    ++*v;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &t_i32;
    out.arg0.i32 = *v;
    bsi->api->success(bsi, &out);
}

static void s_go_add(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->add(bsi, data, s_mark, NULL);
    ctGoAdd(bsi, (int)(intptr_t)data + 1);
    bsi->api->add(bsi, (void*)((intptr_t)data + 2), s_mark, NULL);
}

static void s_succeed_arg(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &t_i32;
    out.arg0.i32 = (int32_t)(intptr_t)data;
    bsi->api->success(bsi, &out);
}

static void s_spawn_inc(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    for (intptr_t i = 0; i < (intptr_t)data; i++) {
        bsi->api->add(bsi, NULL, s_inc, NULL);
    }
}

static void s_spawn_big4(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    for (intptr_t i = 0; i < (intptr_t)data; i++) {
        bsi->api->add(bsi, NULL, s_big4, NULL);
    }
}

static void m_success_twice(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    bsi->api->success(bsi, NULL);
    bsi->api->success(bsi, NULL);
}

static void m_add_after_success(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->success(bsi, NULL);
    bsi->api->add(bsi, data, s_mark, NULL);
}

static void m_after_error(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->handle_error(bsi, "CError", "first");
    bsi->api->add(bsi, data, s_mark, NULL);
}

static void m_null_add(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->add(bsi, data, NULL, NULL);
}

static void m_keep(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    ct_kept = bsi;
    bsi->api->success(bsi, NULL);
}

static void m_use_kept(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)bsi;
    (void)args;
    ct_kept->api->add(ct_kept, data, s_mark, NULL);
}

static void m_null_cancel(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    bsi->api->setCancel(bsi, data, NULL);
    bsi->api->waitExternal(bsi);
}

/* Error handlers. */

static void eh_record(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)bsi;
    (void)data;
    log_tag(-1);
    keep_code(code);
}

static void eh_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    log_tag(-2);
    keep_code(code);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &t_i32;
    out.arg0.i32 = 42;
    bsi->api->success(bsi, &out);
}

static void eh_rethrow(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    log_tag(-3);
    keep_code(code);
    bsi->api->handle_error(bsi, "Rethrown", "from a C error handler");
}

static void eh_info(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data;
    log_tag(-4);
    keep_code(code);
    const char* info = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    strncpy(ct_info, info ? info : "(null)", sizeof(ct_info) - 1);
    ct_info[sizeof(ct_info) - 1] = 0;
}

static void s_add_list(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);

static void s_go_call(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    log_tag((intptr_t)data);
    ctGoCall(bsi, (int)(intptr_t)data);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &t_i32;
    out.arg0.i32 = (int32_t)(intptr_t)data;
    bsi->api->success(bsi, &out);
}

static const FutoInAsyncSteps_execute_callback steps[CT_STEP_COUNT] = {
    [CT_INC] = s_inc,
    [CT_RECORD] = s_record,
    [CT_MARK] = s_mark,
    [CT_ADD_SUBS] = s_add_subs,
    [CT_FAIL] = s_fail,
    [CT_WAIT] = s_wait,
    [CT_TIMEOUT] = s_timeout,
    [CT_STACK] = s_stack,
    [CT_REPEAT] = s_repeat,
    [CT_LOOP] = s_loop,
    [CT_VALUE] = s_value,
    [CT_OWNED] = s_owned,
    [CT_BIG4] = s_big4,
    [CT_PARALLEL] = s_parallel,
    [CT_STATE] = s_state,
    [CT_GO_ADD] = s_go_add,
    [CT_SUCCEED_ARG] = s_succeed_arg,
    [CT_SPAWN_INC] = s_spawn_inc,
    [CT_SPAWN_BIG4] = s_spawn_big4,
    [CT_MISUSE_SUCCESS_TWICE] = m_success_twice,
    [CT_MISUSE_ADD_AFTER_SUCCESS] = m_add_after_success,
    [CT_MISUSE_AFTER_ERROR] = m_after_error,
    [CT_MISUSE_NULL_ADD] = m_null_add,
    [CT_MISUSE_KEEP] = m_keep,
    [CT_MISUSE_USE_KEPT] = m_use_kept,
    [CT_MISUSE_NULL_CANCEL] = m_null_cancel,
    [CT_ADD_LIST] = s_add_list,
    [CT_GO_CALL] = s_go_call,
};

static const FutoInAsyncSteps_error_callback handlers[CT_EH_COUNT] = {
    [CT_EH_NONE] = NULL,
    [CT_EH_RECORD] = eh_record,
    [CT_EH_RECOVER] = eh_recover,
    [CT_EH_RETHROW] = eh_rethrow,
    [CT_EH_INFO] = eh_info,
};

void ct_add(FutoInAsyncSteps* bsi, int step, intptr_t data, int eh)
{
    bsi->api->add(bsi, (void*)data, steps[step], handlers[eh]);
}

void* ct_step_fn(int step) { return (void*)steps[step]; }
void* ct_handler_fn(int eh) { return (void*)handlers[eh]; }

/* ct_noop: an empty C function, for the cost of a bare cgo call. */
void ct_noop(void) {}

/* The list CT_ADD_LIST adds: what a test sets with ct_list_set. */
static struct {
    int step, eh;
    intptr_t data;
} ct_list[64];
int ct_list_n;

void ct_list_set(int i, int step, intptr_t data, int eh)
{
    ct_list[i].step = step;
    ct_list[i].data = data;
    ct_list[i].eh = eh;
}

static void s_add_list(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    for (int i = 0; i < ct_list_n; i++) {
        bsi->api->add(bsi, (void*)ct_list[i].data, steps[ct_list[i].step], handlers[ct_list[i].eh]);
    }
}
