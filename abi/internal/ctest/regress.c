/* regress.c: C steps of the abi regression tests (abi/regress_test.go), prefix rv_. */
#include <stdlib.h>
#include <string.h>
#include "ctest.h"

FutoInAsyncSteps* rv_kept;
int rv_body_runs;

/* A repeat body that fails and then breaks (contract: API after
   handle_error is a misuse, InternalError). */
static void rv_err_break_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data; (void)i;
    rv_body_runs++;
    bsi->api->handle_error(bsi, "RvErr", "failed in the loop body");
    bsi->api->breakLoop(bsi, NULL);
}
static void rv_err_break(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data; (void)args;
    bsi->api->repeat(bsi, NULL, 3, rv_err_break_body, NULL);
}

/* A step that fails and then continues its loop. */
static void rv_err_cont_body(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    (void)data; (void)i;
    rv_body_runs++;
    bsi->api->handle_error(bsi, "RvErr", "failed in the loop body");
    bsi->api->continueLoop(bsi, NULL);
}
static void rv_err_cont(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data; (void)args;
    bsi->api->repeat(bsi, NULL, 3, rv_err_cont_body, NULL);
}

/* Passes on the (owned) values it received, then calls success again: a
   misuse whose clean-up must not run the values' cleanup while the flow
   still holds them. */
static void rv_pass_twice(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    FutoInArgs a = *args;
    bsi->api->success(bsi, &a);
    bsi->api->success(bsi, &a);
}

/* Passes on its values, then fails. */
static void rv_pass_then_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    FutoInArgs a = *args;
    bsi->api->success(bsi, &a);
    bsi->api->handle_error(bsi, "RvFail", "after success");
}

/* Waits with a timeout; its handler adds a waiting sub-step, so the step
   lives on after its External went stale. */
static void rv_wait_to(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)args;
    rv_kept = bsi;
    bsi->api->setTimeout(bsi, (uint32_t)(intptr_t)data);
}
static void rv_eh_add_wait(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data; (void)code;
    ct_add(bsi, CT_WAIT, 7, CT_EH_NONE);
}

void rv_add(FutoInAsyncSteps* bsi, int which, intptr_t data)
{
    switch (which) {
    case 0: bsi->api->add(bsi, (void*)data, rv_err_break, NULL); break;
    case 1: bsi->api->add(bsi, (void*)data, rv_err_cont, NULL); break;
    case 2: bsi->api->add(bsi, (void*)data, rv_pass_twice, NULL); break;
    case 3: bsi->api->add(bsi, (void*)data, rv_pass_then_fail, NULL); break;
    case 4: bsi->api->add(bsi, (void*)data, rv_wait_to, rv_eh_add_wait); break;
    }
}

void rv_reset(void) { rv_kept = NULL; rv_body_runs = 0; }

int rv_is_valid(FutoInAsyncSteps* bsi) { return bsi->api->isValid(bsi); }

/* Records success(INT32 555), then lets Go drive this flow's own manual
   reactor (rvDrive, regress.go), as a callback may. */
extern void rvDrive(void);
static const FutoInType rv_i32 = {FTN_TYPE_INT32, NULL};
static void rv_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data; (void)args;
    FutoInArgs out;
    memset(&out, 0, sizeof out);
    out.arg0.type = &rv_i32;
    out.arg0.i32 = 555;
    bsi->api->success(bsi, &out);
    rvDrive();
}
void rv_add_outer(FutoInAsyncSteps* bsi) { bsi->api->add(bsi, NULL, rv_outer, NULL); }

/* Passes on its first argument shortened to 3 bytes: a zero-copy prefix
   of the string (same pointer, shorter length). */
static void rv_trim(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    FutoInArgs a;
    memset(&a, 0, sizeof a);
    a.arg0 = args->arg0;
    a.arg0.length = 3;
    bsi->api->success(bsi, &a);
}
void rv_add_trim(FutoInAsyncSteps* bsi) { bsi->api->add(bsi, NULL, rv_trim, NULL); }


/* Completes bsi with INT32 1, then raises a flag in C memory: Go's race
   detector sees no synchronisation through it. */
static int rv_flag;
static const FutoInType rv_i32b = {FTN_TYPE_INT32, NULL};
void rv_complete_flag(FutoInAsyncSteps* bsi)
{
    FutoInArgs a;
    memset(&a, 0, sizeof a);
    a.arg0.type = &rv_i32b;
    a.arg0.i32 = 1;
    bsi->api->success(bsi, &a);
    __atomic_store_n(&rv_flag, 1, __ATOMIC_SEQ_CST);
}
int rv_flag_get(void) { return __atomic_load_n(&rv_flag, __ATOMIC_SEQ_CST); }
void rv_flag_clear(void) { __atomic_store_n(&rv_flag, 0, __ATOMIC_SEQ_CST); }

/* Like rv_wait_to, but the handler adds a Go step (rvGoWaitAdd) that
   waits on an External the test completes from Go. */
extern void rvGoWaitAdd(FutoInAsyncSteps* bsi);
static void rv_eh_add_go_wait(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    (void)data; (void)code;
    rvGoWaitAdd(bsi);
}
void rv_add_wait_go(FutoInAsyncSteps* bsi, intptr_t ms)
{
    bsi->api->add(bsi, (void*)ms, rv_wait_to, rv_eh_add_go_wait);
}
