/*
 * chain.c: the floor of running C steps back to back in C (profiles note
 * 2026-11-27-cpp-shapes.md, "the C step"): what a step costs when a chain
 * of C steps added by a C step runs without returning to Go between steps.
 * Each step is s_inc's shape (two integers in, both + 1 out, through the
 * vtable's success), run on a recording image as the bridge's are: the
 * success entry checks the thread and the record as v_success does and
 * copies the values into the record, and the next step receives them as
 * they are, with no conversion. Written against futoin.h only.
 */
#include <pthread.h>
#include <string.h>
#include "ctest.h"

typedef struct chain_img {
    FutoInAsyncSteps base;
    pthread_t owner;
    uint32_t rec;
    FutoInArgs* out;
} chain_img;

enum { CHAIN_SUCCESS = 1, CHAIN_MISUSE = 2 };

static void chain_success(FutoInAsyncSteps* bsi, FutoInArgs* args)
{
    chain_img* b = (chain_img*)bsi;
    if (!pthread_equal(b->owner, pthread_self()) || b->rec) {
        b->rec |= CHAIN_MISUSE;
        return;
    }
    if (args) {
        *b->out = *args;
    }
    b->rec = CHAIN_SUCCESS;
}

static FutoInAsyncStepsAPI chain_api;

static const FutoInType chain_i32 = {FTN_TYPE_INT32, NULL};

static int64_t chain_int(const FutoInBinaryValue* v)
{
    if (!v->type) {
        return 0;
    }
    switch (v->type->flags) {
    case FTN_TYPE_INT32: return v->i32;
    case FTN_TYPE_INT64: return v->i64;
    default: return -1000000;
    }
}

int ct_chain_seen[2];

/* chain_inc is s_inc (steps.c) on a chain image. */
static void chain_inc(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    (void)data;
    int64_t a = chain_int(&args->arg0), b = chain_int(&args->arg1);
    ct_chain_seen[0] = (int)a;
    ct_chain_seen[1] = (int)b;
    FutoInArgs out;
    out.arg0.type = &chain_i32;
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

/* The chain's steps, called through a pointer as the recorded adds are. */
FutoInAsyncSteps_execute_callback volatile ct_chain_step = chain_inc;

int64_t ct_chain(unsigned n)
{
    chain_api.success = chain_success;
    chain_img img = {.base = {.api = &chain_api}};
    /* Two blocks, swapped: a step's out block is the next one's in block,
       so no block is copied between steps (only success's copy of the
       callback's own block into the record). */
    FutoInArgs buf[2];
    memset(buf, 0, sizeof(buf));
    FutoInArgs *in = &buf[0], *out = &buf[1];
    in->arg0.type = in->arg1.type = &chain_i32;
    img.owner = pthread_self();
    for (unsigned i = 0; i < n; i++) {
        img.rec = 0;
        img.out = out;
        ct_chain_step(&img.base, NULL, in);
        if (img.rec != CHAIN_SUCCESS) {
            return -1; /* where the chain would hand the step to the engine */
        }
        FutoInArgs* t = in;
        in = out;
        out = t;
    }
    return chain_int(&in->arg0);
}
