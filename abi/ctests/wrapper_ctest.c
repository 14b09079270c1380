/*
 * wrapper_ctest.c: the calls the C++ FutoIn API's BinarySteps wrapper
 * (futoin/core-cpp-ri-asyncsteps, src/binaryapi.cpp) makes on an
 * engine's FutoInAsyncSteps*, done here in plain C against our library,
 * one test per point where the wrapper relies on what the C++ reference
 * does:
 *
 *   - values: every value a step receives is moved out and its slot
 *     emptied with futoin_reset_binval (which runs the type's cleanup);
 *     a success with 1 to 3 values fills the other slots with placeholder
 *     CUSTOM_OBJECTs that carry a cleanup; vectors cross as CUSTOM_OBJECTs
 *     too. Every value must be cleaned exactly once.
 *   - isValid: a root is not valid while its flow runs (`!root` in a step).
 *   - loops on the parallel accessor: p = parallel(); p.add(); p.repeat().
 *   - error_info read back in the callback that called handle_error.
 *   - asyncsteps_reactor_iterate: one round at a time, an endless loop too.
 *   - what a callback may still call after handle_error.
 *
 * Same conventions as abi_ctest.c: CHECK counts, the last line is
 * "N passed, M failed", the exit status is nonzero on failure. Built and
 * run by make ctest and make ctest-asan.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#pragma GCC diagnostic ignored "-Wunused-parameter"

#define BEGIN(name) begin_test(name)

/* ---- the wrapper's values ------------------------------------------------
   Every object the "wrapper" makes is registered; its cleanup looks the
   pointer up before touching it, so a second cleanup is reported (and
   not done) rather than being a double free. */

#define MAXOBJ 256
static void* g_obj[MAXOBJ];
static int g_cleaned[MAXOBJ];
static int g_nobj;

static void* obj_new(size_t size)
{
    void* p = calloc(1, size);
    if (g_nobj < MAXOBJ) {
        g_obj[g_nobj] = p;
        g_cleaned[g_nobj] = 0;
        g_nobj++;
    }
    return p;
}

static void obj_clean(void* p)
{
    for (int i = g_nobj - 1; i >= 0; i--) {
        if (g_obj[i] == p) {
            if (g_cleaned[i]++) {
                g_failed++;
                fprintf(stderr, "  FAIL %s: object %d cleaned %d times\n", g_test, i, g_cleaned[i]);
                return;
            }
            free(p);
            return;
        }
    }
    g_failed++;
    fprintf(stderr, "  FAIL %s: cleanup of an object never made\n", g_test);
}

static void objs_reset(void) { g_nobj = 0; }

/* objs_all_cleaned: every object made since objs_reset was cleaned once. */
static int objs_all_cleaned(void)
{
    int ok = 1;
    for (int i = 0; i < g_nobj; i++) {
        if (g_cleaned[i] != 1) {
            fprintf(stderr, "    object %d cleaned %d times\n", i, g_cleaned[i]);
            ok = 0;
        }
    }
    return ok;
}

/* A std::string moved into a value (moveStringHelper::moveTo): custom_data
   owns the text, p points into it, the type's cleanup deletes it. */
static void w_string_cleanup(FutoInBinaryValue* v) { obj_clean(v->custom_data); }
static const FutoInType W_STRING = {FTN_TYPE_STRING, w_string_cleanup};

/* A futoin::any moved into a value (moveObjectHelper): the placeholder of
   an unused slot (NoArg) and every vector (moveArrayHelper::moveTo gives
   vectors the CUSTOM_OBJECT type, p pointing at the elements). */
static void w_any_cleanup(FutoInBinaryValue* v) { obj_clean(v->custom_data); }
static const FutoInType W_ANY = {FTN_TYPE_CUSTOM_OBJECT, w_any_cleanup};

/* Fundamentals: no cleanup. */
static const FutoInType W_I32 = {FTN_TYPE_INT32, NULL};
static const FutoInType W_DOUBLE = {FTN_TYPE_DOUBLE, NULL};
static const FutoInType W_BOOL = {FTN_TYPE_BOOL, NULL};

static void w_string(FutoInBinaryValue* v, const char* s)
{
    size_t n = strlen(s);
    char* text = obj_new(n + 1);
    memcpy(text, s, n);
    v->custom_data = text;
    v->cstr = text;
    v->length = (uint32_t)n;
    v->type = &W_STRING;
}

static void w_vector(FutoInBinaryValue* v, const int32_t* items, uint32_t n)
{
    int32_t* data = obj_new(sizeof(int32_t) * (n ? n : 1));
    memcpy(data, items, sizeof(int32_t) * n);
    v->custom_data = data;
    v->p = data;
    v->length = n;
    v->type = &W_ANY;
}

static void w_placeholder(FutoInBinaryValue* v)
{
    v->custom_data = obj_new(64); /* a futoin::any holding NoArg */
    v->type = &W_ANY;
}

/* w_success is handle_success: NextArgs::moveTo fills all four slots, the
   unused ones with placeholders, then success. */
static void w_success(FutoInAsyncSteps* bsi, FutoInArgs* args, int used)
{
    for (int i = used; i < 4; i++) {
        w_placeholder(&args->args[i]);
    }
    bsi->api->success(bsi, args);
}

/* What a step took (NextArgs::moveFrom): copies, then every slot reset. */
typedef struct {
    int n;
    const FutoInType* type[4];
    char str[4][32];
    int64_t i64[4];
    double d[4];
    int32_t vec[4][8];
    uint32_t len[4];
} Took;

static void w_take(const FutoInArgs* cargs, Took* t)
{
    FutoInArgs* args = (FutoInArgs*)cargs; /* const_cast, as the wrapper does */
    memset(t, 0, sizeof(*t));
    for (int i = 0; i < 4; i++) {
        FutoInBinaryValue* v = &args->args[i];
        t->type[i] = v->type;
        if (!v->type) {
            continue;
        }
        t->n = i + 1;
        t->len[i] = v->length;
        switch (v->type->flags) {
        case FTN_TYPE_STRING:
            snprintf(t->str[i], sizeof(t->str[i]), "%.*s", (int)v->length, v->cstr);
            break;
        case FTN_TYPE_INT32: t->i64[i] = v->i32; break;
        case FTN_TYPE_DOUBLE: t->d[i] = v->d; break;
        case FTN_TYPE_BOOL: t->i64[i] = v->b; break;
        case FTN_TYPE_CUSTOM_OBJECT:
            if (v->p && v->length <= 8) {
                memcpy(t->vec[i], v->p, sizeof(int32_t) * v->length);
            }
            break;
        }
        futoin_reset_binval(v);
    }
}

/* ---- 1. ownership of received values ---------------------------------- */

typedef struct {
    Took took[4];
    int ran[5];
    int plain_len; /* what the step that does not take saw */
    char plain_str[32];
} ValCtx;

static void val_1(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ValCtx* c = data;
    c->ran[0]++;
    w_take(args, &c->took[0]);
    /* asi(2, 1.23, "str", true): four values, no placeholder */
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    out.arg0.type = &W_I32;
    out.arg0.i32 = 2;
    out.arg1.type = &W_DOUBLE;
    out.arg1.d = 1.23;
    w_string(&out.arg2, "str");
    out.arg3.type = &W_BOOL;
    out.arg3.b = true;
    w_success(bsi, &out, 4);
}

static void val_2(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ValCtx* c = data;
    c->ran[1]++;
    w_take(args, &c->took[1]);
    /* asi.success(std::vector<int>{3, 4, 5}): one value, three placeholders */
    static const int32_t v[] = {3, 4, 5};
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    w_vector(&out.arg0, v, 3);
    w_success(bsi, &out, 1);
}

static void val_3(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ValCtx* c = data;
    c->ran[2]++;
    w_take(args, &c->took[2]);
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    w_string(&out.arg0, "kept by the engine");
    w_success(bsi, &out, 1);
}

/* A plain C step: reads its values without taking them; the engine cleans
   them when they leave the flow's arguments. */
static void val_4(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ValCtx* c = data;
    c->ran[3]++;
    c->plain_len = args->arg0.type ? (int)args->arg0.length : -1;
    if (args->arg0.type && args->arg0.type->flags == FTN_TYPE_STRING) {
        snprintf(c->plain_str, sizeof(c->plain_str), "%.*s", (int)args->arg0.length, args->arg0.cstr);
    }
    /* One value and placeholders, left to the engine with the root. */
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    w_string(&out.arg0, "left at the end");
    w_success(bsi, &out, 1);
}

/* Takes what it receives, then fails: nothing is cleaned twice. */
static void val_take_fail(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ValCtx* c = data;
    c->ran[4]++;
    w_take(args, &c->took[3]);
    bsi->api->handle_error(bsi, "Took", NULL);
}

static void val_recover(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    if (strcmp(code, "Took") == 0) {
        bsi->api->success(bsi, NULL);
    }
}

static void val_make(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    FutoInArgs out;
    memset(&out, 0, sizeof(out));
    w_string(&out.arg0, "a");
    w_string(&out.arg1, "b");
    w_success(bsi, &out, 2);
}

static void test_values(AsyncStepsReactor* r)
{
    BEGIN("wrapper_values_taken_once");
    objs_reset();
    ValCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, val_1, NULL);
    root->api->add(root, &c, val_2, NULL);
    root->api->add(root, &c, val_3, NULL);
    root->api->add(root, &c, val_4, NULL);
    root->api->add(root, &c, val_make, NULL);
    root->api->add(root, &c, val_take_fail, val_recover);
    Unh u;
    execute(root, &u);
    asyncsteps_reactor_run_until_idle(r);
    CHECK_OK(u);
    CHECK(c.ran[0] == 1 && c.ran[1] == 1 && c.ran[2] == 1 && c.ran[3] == 1 && c.ran[4] == 1);
    /* asi(2, 1.23, "str", true) reached the next step as sent */
    CHECK(c.took[1].n == 4);
    CHECK(c.took[1].i64[0] == 2);
    CHECK(c.took[1].d[1] == 1.23);
    CHECK_STR(c.took[1].str[2], "str");
    CHECK(c.took[1].i64[3] == 1);
    /* the vector and its three placeholders */
    CHECK(c.took[2].n == 4);
    CHECK(c.took[2].type[0] == &W_ANY && c.took[2].len[0] == 3);
    CHECK(c.took[2].vec[0][0] == 3 && c.took[2].vec[0][1] == 4 && c.took[2].vec[0][2] == 5);
    CHECK(c.took[2].type[1] == &W_ANY && c.took[2].type[3] == &W_ANY);
    /* the plain step saw the string the engine still owned */
    CHECK_STR(c.plain_str, "kept by the engine");
    CHECK(c.took[3].n == 4);
    CHECK_STR(c.took[3].str[0], "a");
    CHECK_STR(c.took[3].str[1], "b");
    root->api->free(root);
    /* Taken ones by the step, the rest by the engine; each exactly once. */
    CHECK(g_nobj == 1 + 4 + 4 + 4 + 4);
    CHECK(objs_all_cleaned());
}

/* ---- 2. isValid on a running root --------------------------------------- */

typedef struct {
    FutoInAsyncSteps* root;
    int root_valid_in;
    int step_valid_in;
    int root_valid_handler;
} IvCtx;

static void iv_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    IvCtx* c = data;
    c->root_valid_in = c->root->api->isValid(c->root); /* BOOST_CHECK(!root) */
    c->step_valid_in = bsi->api->isValid(bsi);         /* BOOST_CHECK(asi) */
    bsi->api->handle_error(bsi, "E", NULL);
}

static void iv_handler(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    IvCtx* c = data;
    c->root_valid_handler = c->root->api->isValid(c->root);
    bsi->api->success(bsi, NULL);
}

static void test_is_valid_running_root(AsyncStepsReactor* r)
{
    BEGIN("wrapper_is_valid_running_root");
    IvCtx c = {NULL, -1, -1, -1};
    FutoInAsyncSteps* root = asyncsteps_new(r);
    c.root = root;
    root->api->add(root, &c, iv_step, iv_handler);
    CHECK(root->api->isValid(root) == 1); /* BOOST_CHECK(asi) before execute */
    Unh u;
    execute(root, &u);
    CHECK(root->api->isValid(root) == 0); /* executing, from the holder's thread */
    asyncsteps_reactor_run_until_idle(r);
    CHECK_OK(u);
    CHECK(c.root_valid_in == 0);
    CHECK(c.step_valid_in == 1);
    CHECK(c.root_valid_handler == 0);
    CHECK(root->api->isValid(root) == 1); /* ended: usable again */
    root->api->free(root);
}

/* ---- 3. loops on the parallel accessor ---------------------------------- */

typedef struct {
    int result[32];
    int n;
    int stack_cleaned;
    int eh_called;
    char eh_code[32];
    int loop_i;
} ParCtx;

static void push(ParCtx* c, int v)
{
    if (c->n < 32) {
        c->result[c->n++] = v;
    }
}

typedef struct {
    ParCtx* c;
    int k;
} Branch;

static void par_stack_cleanup(void* value) { (*(ParCtx**)value)->stack_cleaned++; }

/* stack<T>() on an accessor, as the wrapper's add_step and add_loop do
   before calling add or loop. */
static void w_stack(FutoInAsyncSteps* bsi, ParCtx* c)
{
    ParCtx** slot = bsi->api->stack(bsi, sizeof(ParCtx*), par_stack_cleanup);
    CHECK(slot != NULL);
    if (slot) {
        *slot = c;
    }
}

static void par_sub(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Branch* b = data;
    push(b->c, b->k);
}

static void par_branch(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    Branch* b = data;
    push(b->c, b->k);
    Branch* sub = bsi->api->stack(bsi, sizeof(Branch) * 2, NULL);
    sub[0].c = sub[1].c = b->c;
    sub[0].k = b->k * 10 + 1;
    sub[1].k = b->k * 10 + 2;
    bsi->api->add(bsi, &sub[0], par_sub, NULL);
    bsi->api->add(bsi, &sub[1], par_sub, NULL);
}

static void par_repeat(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    ParCtx* c = data;
    push(c, 40 + (int)i);
}

static void par_loop(FutoInAsyncSteps* bsi, void* data)
{
    ParCtx* c = data;
    push(c, 50 + c->loop_i);
    if (++c->loop_i == 3) {
        bsi->api->breakLoop(bsi, NULL);
    }
}

static void par_repeat_fail(FutoInAsyncSteps* bsi, void* data, size_t i)
{
    ParCtx* c = data;
    push(c, 60 + (int)i);
    if (i == 1) {
        bsi->api->handle_error(bsi, "LoopFailed", "in a parallel loop");
    }
}

static void par_after(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    push(data, 99);
}

static void par_eh(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    ParCtx* c = data;
    c->eh_called++;
    snprintf(c->eh_code, sizeof(c->eh_code), "%s", code);
    bsi->api->success(bsi, NULL);
}

static Branch g_branches[3];

static void par_root_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ParCtx* c = data;
    w_stack(bsi, c); /* parallel(): stack<StepData> for its error handler */
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, c, par_eh);
    CHECK(p != NULL);
    if (!p) {
        return;
    }
    for (int k = 0; k < 3; k++) {
        g_branches[k].c = c;
        g_branches[k].k = k + 1;
        w_stack(p, c);
        p->api->add(p, &g_branches[k], par_branch, NULL);
    }
    w_stack(p, c);
    p->api->repeat(p, c, 2, par_repeat, NULL); /* p.repeat(2, ...) */
    w_stack(p, c);
    p->api->loop(p, c, par_loop, "pl");
    bsi->api->add(bsi, c, par_after, NULL);
}

static void par_fail_step(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    ParCtx* c = data;
    FutoInAsyncSteps* p = bsi->api->parallel(bsi, c, par_eh);
    p->api->repeat(p, c, 3, par_repeat_fail, NULL);
    bsi->api->add(bsi, c, par_after, NULL);
}

static int index_of(ParCtx* c, int v)
{
    for (int i = 0; i < c->n; i++) {
        if (c->result[i] == v) {
            return i;
        }
    }
    return -1;
}

static void test_parallel_loops(AsyncStepsReactor* r)
{
    BEGIN("wrapper_parallel_loops_are_branches");
    ParCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, par_root_step, NULL);
    Unh u;
    execute(root, &u);
    asyncsteps_reactor_run_until_idle(r);
    CHECK_OK(u);
    CHECK(c.eh_called == 0);
    /* 1 11 12, 2 21 22, 3 31 32, 40 41, 50 51 52, then 99 */
    CHECK(c.n == 15);
    static const int want[] = {1, 11, 12, 2, 21, 22, 3, 31, 32, 40, 41, 50, 51, 52};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        CHECK(index_of(&c, want[i]) >= 0);
    }
    CHECK(index_of(&c, 1) < index_of(&c, 11) && index_of(&c, 11) < index_of(&c, 12));
    CHECK(index_of(&c, 40) < index_of(&c, 41));
    CHECK(index_of(&c, 50) < index_of(&c, 51) && index_of(&c, 51) < index_of(&c, 52));
    CHECK(c.n > 0 && c.result[c.n - 1] == 99);
    CHECK(c.stack_cleaned == 6); /* one on the step, five on the accessor */
    root->api->free(root);

    BEGIN("wrapper_parallel_loop_branch_fails");
    memset(&c, 0, sizeof(c));
    root = asyncsteps_new(r);
    root->api->add(root, &c, par_fail_step, NULL);
    execute(root, &u);
    asyncsteps_reactor_run_until_idle(r);
    CHECK_OK(u);
    CHECK(c.eh_called == 1);
    CHECK_STR(c.eh_code, "LoopFailed");
    CHECK(index_of(&c, 60) == 0 && index_of(&c, 61) == 1 && index_of(&c, 62) < 0);
    CHECK(c.n > 0 && c.result[c.n - 1] == 99);
    root->api->free(root);
}

/* ---- 4. error_info in the callback that raised ------------------------ */

typedef struct {
    char in_step[64];
    char in_inner_handler[64];
    char after_second[64];
    char in_outer_handler[64];
    char after_third[64];
    char in_third_handler[64];
    int stack_ok;
    int stack_cleaned;
} EiCtx;

static const char* error_info(FutoInAsyncSteps* bsi)
{
    const char* s = bsi->api->stateVariable(bsi, NULL, "error_info", NULL, NULL);
    return s ? s : "(null)";
}

static void ei_stack_cleanup(void* value) { (*(EiCtx**)value)->stack_cleaned++; }

static void ei_raise(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    EiCtx* c = data;
    bsi->api->handle_error(bsi, "FirstError", "FirstInfo"); /* errorNoThrow */
    snprintf(c->in_step, sizeof(c->in_step), "%s", error_info(bsi));
    /* The wrapper keeps itself on the step's stack after its callback when
       the step set a timeout or cancel handler (delayed_). */
    EiCtx** slot = bsi->api->stack(bsi, sizeof(EiCtx*), ei_stack_cleanup);
    c->stack_ok = slot != NULL;
    if (slot) {
        *slot = c;
    }
}

static void ei_inner_handler(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    EiCtx* c = data;
    snprintf(c->in_inner_handler, sizeof(c->in_inner_handler), "%s %s", code, error_info(bsi));
    bsi->api->handle_error(bsi, "SecondError", "SecondInfo");
    snprintf(c->after_second, sizeof(c->after_second), "%s", error_info(bsi));
}

static void ei_outer(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->add(bsi, data, ei_raise, ei_inner_handler);
}

static void ei_outer_handler(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    EiCtx* c = data;
    snprintf(c->in_outer_handler, sizeof(c->in_outer_handler), "%s %s", code, error_info(bsi));
    bsi->api->success(bsi, NULL);
}

static void ei_third(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    EiCtx* c = data;
    bsi->api->handle_error(bsi, "ThirdError", NULL); /* asi.error("ThirdError") */
    snprintf(c->after_third, sizeof(c->after_third), "%s", error_info(bsi));
}

static void ei_third_handler(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    EiCtx* c = data;
    snprintf(c->in_third_handler, sizeof(c->in_third_handler), "%s [%s]", code, error_info(bsi));
    bsi->api->success(bsi, NULL);
}

static void test_error_info(AsyncStepsReactor* r)
{
    BEGIN("wrapper_error_info_in_raising_callback");
    EiCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, ei_outer, ei_outer_handler);
    root->api->add(root, &c, ei_third, ei_third_handler);
    Unh u;
    execute(root, &u);
    asyncsteps_reactor_run_until_idle(r);
    CHECK_OK(u);
    CHECK_STR(c.in_step, "FirstInfo");
    CHECK_STR(c.in_inner_handler, "FirstError FirstInfo");
    CHECK_STR(c.after_second, "SecondInfo");
    CHECK_STR(c.in_outer_handler, "SecondError SecondInfo");
    CHECK_STR(c.after_third, "");
    CHECK_STR(c.in_third_handler, "ThirdError []");
    CHECK(c.stack_ok);
    CHECK(c.stack_cleaned == 1);
    root->api->free(root);
}

/* ---- 5. asyncsteps_reactor_iterate --------------------------------------- */

static void it_body(FutoInAsyncSteps* bsi, void* data) { (*(long*)data)++; }

static void it_deferred(void* data) { (*(int*)data)++; }

static void test_iterate(void)
{
    BEGIN("wrapper_reactor_iterate");
    AsyncStepsReactor* r = asyncsteps_reactor_manual();
    CHECK(asyncsteps_reactor_iterate(r) == 0); /* nothing ready */

    long n = 0;
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->loop(root, &n, it_body, NULL); /* endless */
    Unh u;
    execute(root, &u);
    long prev = 0;
    int grew = 1;
    for (int i = 0; i < 5; i++) {
        int more = asyncsteps_reactor_iterate(r); /* returns: one round */
        CHECK(more == 1);
        grew = grew && n > prev;
        prev = n;
    }
    CHECK(grew);
    root->api->cancel(root);
    int rounds = 0;
    while (asyncsteps_reactor_iterate(r) && rounds < 1000) {
        rounds++;
    }
    CHECK(rounds < 1000);
    CHECK(u.called == 0); /* canceled: no unhandled_error */
    CHECK(root->api->isValid(root) == 1);
    long stopped = n;
    CHECK(asyncsteps_reactor_iterate(r) == 0);
    CHECK(n == stopped);

    /* A timer not yet due is not ready work. */
    int fired = 0;
    root->api->sched_deferred(root, 10, &fired, it_deferred);
    CHECK(asyncsteps_reactor_iterate(r) == 0);
    CHECK(fired == 0);
    asyncsteps_reactor_advance(r, 10);
    CHECK(fired == 1);
    root->api->free(root);
    asyncsteps_reactor_free(r);
}

/* ---- 6. what a callback may still call after handle_error ----------------- */

typedef struct {
    int sched_ran;
    int var_allocs;
    int var_cleanups;
    int checks_ok;
} AfCtx;

static void* af_alloc(void* data)
{
    ((AfCtx*)data)->var_allocs++;
    return calloc(1, sizeof(int));
}

static void af_cleanup(void* data, void* value)
{
    ((AfCtx*)data)->var_cleanups++;
    free(value);
}

static void af_sched(void* data) { ((AfCtx*)data)->sched_ran++; }

static void af_reads(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    AfCtx* c = data;
    bsi->api->handle_error(bsi, "Raised", "raised info");
    int ok = 1;
    ok &= bsi->api->stateVariable(bsi, c, "var", af_alloc, af_cleanup) != NULL;
    ok &= bsi->api->stack(bsi, 8, NULL) != NULL;
    ok &= bsi->api->rootId(bsi) != 0;
    ok &= bsi->api->isValid(bsi) == 1;
    ok &= bsi->api->is_same_thread(bsi) == 1;
    FutoInAsyncSteps* inst = bsi->api->newInstance(bsi);
    ok &= inst != NULL;
    if (inst) {
        inst->api->free(inst);
    }
    FutoInHandle h = bsi->api->sched_immediate(bsi, c, af_sched);
    ok &= bsi->api->sched_is_valid(bsi, &h) == 1;
    FutoInHandle h2 = bsi->api->sched_deferred(bsi, 5, c, af_sched);
    bsi->api->sched_cancel(bsi, &h2);
    c->checks_ok = ok;
}

static void af_set_timeout(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "Raised", NULL);
    bsi->api->setTimeout(bsi, 10);
}

static void af_loop_body(FutoInAsyncSteps* bsi, void* data) { bsi->api->breakLoop(bsi, NULL); }

static void af_loop(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    bsi->api->handle_error(bsi, "Raised", NULL);
    bsi->api->loop(bsi, NULL, af_loop_body, NULL);
}

static void test_after_handle_error(AsyncStepsReactor* r)
{
    BEGIN("wrapper_reads_after_handle_error");
    AfCtx c;
    memset(&c, 0, sizeof(c));
    FutoInAsyncSteps* root = asyncsteps_new(r);
    root->api->add(root, &c, af_reads, NULL);
    Unh u;
    execute(root, &u);
    asyncsteps_reactor_run_until_idle(r);
    asyncsteps_reactor_advance(r, 10);
    CHECK(u.called == 1);
    CHECK_STR(u.code, "Raised"); /* not InternalError */
    CHECK_STR(u.info, "raised info");
    CHECK(c.checks_ok == 1);
    CHECK(c.sched_ran == 1); /* the immediate one; the deferred one was canceled */
    CHECK(c.var_allocs == 1);
    root->api->free(root);
    CHECK(c.var_cleanups == 1);

    BEGIN("wrapper_changes_after_handle_error_are_misuse");
    FutoInAsyncSteps_execute_callback bad[] = {af_set_timeout, af_loop};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        root = asyncsteps_new(r);
        root->api->add(root, NULL, bad[i], NULL);
        execute(root, &u);
        asyncsteps_reactor_run_until_idle(r);
        asyncsteps_reactor_advance(r, 20);
        CHECK(u.called == 1);
        CHECK_STR(u.code, "InternalError");
        root->api->free(root);
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    AsyncStepsReactor* r = asyncsteps_reactor_manual();
    test_values(r);
    test_is_valid_running_root(r);
    test_parallel_loops(r);
    test_error_info(r);
    test_after_handle_error(r);
    asyncsteps_reactor_free(r);
    test_iterate();
    return check_summary();
}
