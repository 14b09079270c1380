/*
 * foreign.c: a small AsyncSteps implementation in C with its own vtable,
 * so that package abi's Wrap can be tested against an engine that is not
 * ours. Single-threaded: steps run from fe_run, called by the test.
 *
 * Model. Every step, root, parallel step and loop is an fe_step in a tree:
 * a step's sub-steps are a queue (head..tail) under it. A callback records
 * its outcome (success, error, wait, break, continue, sub-steps); after it
 * returns, after_cb acts on it. Starting a step goes through a ready list,
 * so long chains and loops do not recurse. Steps live in an arena that is
 * never reused while a test runs, so a stale pointer reads a DEAD step
 * instead of freed memory.
 */
#include <stdlib.h>
#include <string.h>
#include "ctest.h"

enum { K_ROOT, K_STEP, K_PAR, K_LOOP, K_ITER };
enum { ST_FREE, ST_NEW, ST_READY, ST_RUN, ST_SUBS, ST_WAIT, ST_DEAD };
enum { R_SUCCESS = 1, R_ERROR = 2, R_WAIT = 4, R_BREAK = 8, R_CONT = 16 };

typedef struct fe_stack {
    struct fe_stack* next;
    void (*cleanup)(void*);
    /* memory follows */
    max_align_t align[];
} fe_stack;

typedef struct fe_var {
    struct fe_var* next;
    char name[64];
    void* value;
    void* data;
    void (*cleanup)(void*, void*);
} fe_var;

typedef struct fe_step fe_step;
struct fe_step {
    FutoInAsyncSteps base;
    int kind, st, rec, in_eh;
    fe_step* parent;
    fe_step* next;       /* next sibling in the parent's queue */
    fe_step* head;       /* sub-steps (branches of a parallel step) */
    fe_step* tail;
    fe_step* rnext;      /* the ready list */
    fe_step* root;
    FutoInAsyncSteps_execute_callback f;
    FutoInAsyncSteps_error_callback eh;
    void* data;
    FutoInAsyncSteps_cancel_callback ch;
    void* ch_data;
    uint32_t timeout_ms;
    FutoInArgs in, out;
    char code[64];
    char label[32];
    int has_label;
    void (*loop_f)(FutoInAsyncSteps*, void*);
    void (*rep_f)(FutoInAsyncSteps*, void*, size_t);
    size_t count, i;
    int live; /* a parallel step's running branches */
    fe_stack* stack;
    /* roots */
    fe_var* vars;
    int done; /* 1 success, 2 error, 3 canceled */
    char end_code[64];
    FutoInArgs result;
    FutoInAsyncSteps_error_callback unhandled;
    void* unhandled_data;
};

#define FE_MAX 8192
static fe_step arena[FE_MAX];
static int arena_used;
static fe_step *ready_head, *ready_tail;
static int unhandled_calls;

static const FutoInAsyncStepsAPI fe_api;

/* cpy copies a C string into a buffer of n bytes, truncating. */
static void cpy(char* d, size_t n, const char* src)
{
    size_t l = strlen(src);
    if (l >= n) {
        l = n - 1;
    }
    memmove(d, src, l);
    d[l] = 0;
}

static fe_step* S(FutoInAsyncSteps* bsi) { return (fe_step*)bsi; }

static fe_step* alloc_step(int kind, fe_step* parent)
{
    if (arena_used == FE_MAX) {
        /* All dead? Start over (tests free their roots). */
        if (fe_live() != 0) {
            abort();
        }
        memset(arena, 0, sizeof(arena));
        arena_used = 0;
    }
    fe_step* s = &arena[arena_used++];
    memset(s, 0, sizeof(*s));
    *(const FutoInAsyncStepsAPI**)&s->base.api = &fe_api;
    s->kind = kind;
    s->st = ST_NEW;
    s->parent = parent;
    s->root = parent ? parent->root : s;
    return s;
}

static void append(fe_step* parent, fe_step* c)
{
    if (parent->tail) {
        parent->tail->next = c;
    } else {
        parent->head = c;
    }
    parent->tail = c;
}

static int same_value(const FutoInBinaryValue* a, const FutoInBinaryValue* b)
{
    return a->type == b->type && a->u64 == b->u64 && a->custom_data == b->custom_data;
}

/* drop resets the values of a that are not in keep: the engine owns what
   it was given, and a value passed on unchanged stays alive. */
static void drop(FutoInArgs* a, const FutoInArgs* keep)
{
    for (int i = 0; i < 4; i++) {
        int kept = 0;
        if (!a->args[i].type) {
            continue;
        }
        for (int j = 0; keep && j < 4; j++) {
            kept |= same_value(&a->args[i], &keep->args[j]);
        }
        for (int j = 0; j < i; j++) {
            kept |= same_value(&a->args[i], &a->args[j]);
        }
        if (!kept) {
            futoin_reset_binval(&a->args[i]);
        }
    }
    memset(a, 0, sizeof(*a));
}

static void destroy(fe_step* s)
{
    if (s->st == ST_DEAD) {
        return;
    }
    for (fe_step* c = s->head; c;) {
        fe_step* n = c->next;
        destroy(c);
        c = n;
    }
    s->head = s->tail = NULL;
    while (s->stack) {
        fe_stack* k = s->stack;
        s->stack = k->next;
        if (k->cleanup) {
            k->cleanup(k->align);
        }
        free(k);
    }
    drop(&s->in, NULL);
    drop(&s->out, NULL);
    s->st = ST_DEAD;
}

/* unlink removes s from its parent's queue. */
static void unlink_step(fe_step* s)
{
    fe_step* p = s->parent;
    fe_step** pp = &p->head;
    fe_step* prev = NULL;
    while (*pp && *pp != s) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (*pp) {
        *pp = s->next;
        if (p->tail == s) {
            p->tail = prev;
        }
    }
    s->next = NULL;
}

static void make_ready(fe_step* s, const FutoInArgs* in)
{
    s->st = ST_READY;
    if (in) {
        s->in = *in;
    }
    s->rnext = NULL;
    if (ready_tail) {
        ready_tail->rnext = s;
    } else {
        ready_head = s;
    }
    ready_tail = s;
}

/* cancel_tree cancels what runs under s, innermost first, and destroys it. */
static void cancel_tree(fe_step* s)
{
    for (fe_step* c = s->head; c; c = c->next) {
        if (c->st == ST_SUBS || c->st == ST_WAIT || c->st == ST_RUN) {
            cancel_tree(c);
            if (c->ch) {
                FutoInAsyncSteps_cancel_callback ch = c->ch;
                c->ch = NULL;
                ch(&c->base, c->ch_data);
            }
        }
    }
    for (fe_step* c = s->head; c;) {
        fe_step* n = c->next;
        destroy(c);
        c = n;
    }
    s->head = s->tail = NULL;
}

static void flow_end(fe_step* root, int how, const char* code, FutoInArgs* args)
{
    root->done = how;
    root->st = ST_NEW;
    if (code) {
        cpy(root->end_code, sizeof(root->end_code), code);
    }
    if (args) {
        drop(&root->result, args);
        root->result = *args;
    }
    if (how == 2 && root->unhandled) {
        unhandled_calls++;
        root->unhandled(&root->base, root->unhandled_data, code);
    }
}

static void complete(fe_step* s, FutoInArgs* args);
static void fail(fe_step* s, const char* code, int from_eh);
static void start(fe_step* s);

static void next_iteration(fe_step* l)
{
    if (l->rep_f && l->i >= l->count) {
        complete(l, NULL);
        return;
    }
    fe_step* it = alloc_step(K_ITER, l);
    it->i = l->i;
    append(l, it);
    l->st = ST_SUBS;
    make_ready(it, NULL);
}

/* complete: s succeeded with args (owned by the callee from now on). */
static void complete(fe_step* s, FutoInArgs* args)
{
    FutoInArgs a;
    if (args) {
        a = *args;
    } else {
        memset(&a, 0, sizeof(a));
    }
    drop(&s->in, &a);
    fe_step* p = s->parent;
    if (s->kind == K_ROOT) {
        flow_end(s, 1, NULL, &a);
        return;
    }
    unlink_step(s);
    fe_step* n = s->next;
    destroy(s);
    switch (p->kind) {
    case K_PAR:
        drop(&a, NULL); /* branches' values are dropped */
        if (--p->live == 0 && p->st == ST_SUBS) {
            complete(p, NULL);
        }
        return;
    case K_LOOP:
        drop(&a, NULL);
        p->i++;
        next_iteration(p);
        return;
    default:
        n = p->head;
        if (n) {
            make_ready(n, &a);
        } else {
            complete(p, &a);
        }
    }
}

static fe_step* find_loop(fe_step* s, const char* label)
{
    for (fe_step* l = s; l; l = l->parent) {
        if (l->kind == K_LOOP && (!label || (l->has_label && strcmp(l->label, label) == 0))) {
            return l;
        }
    }
    return NULL;
}

static void loopctl(fe_step* s, const char* label, int cont)
{
    fe_step* l = find_loop(s, label);
    if (!l) {
        fail(s, "InternalError", 0);
        return;
    }
    cancel_tree(l);
    if (cont) {
        l->i++;
        next_iteration(l);
    } else {
        complete(l, NULL);
    }
}

/* after_cb acts on what s's callback recorded. */
static void after_cb(fe_step* s)
{
    int rec = s->rec;
    s->rec = 0;
    if (rec & R_ERROR) {
        fail(s, s->code, s->in_eh);
        return;
    }
    if (rec & (R_BREAK | R_CONT)) {
        loopctl(s, s->has_label ? s->label : NULL, (rec & R_CONT) != 0);
        return;
    }
    if (s->head) {
        s->st = ST_SUBS;
        drop(&s->in, NULL);
        make_ready(s->head, NULL);
        return;
    }
    if (rec & R_WAIT) {
        s->st = ST_WAIT;
        return;
    }
    FutoInArgs out = s->out;
    memset(&s->out, 0, sizeof(s->out));
    complete(s, &out);
}

/* fail: an error with code at s; from_eh: raised by s's own handler. */
static void fail(fe_step* s, const char* code, int from_eh)
{
    char c[64];
    cpy(c, sizeof(c), code);
    cancel_tree(s);
    if (s->ch && s->st == ST_WAIT) {
        FutoInAsyncSteps_cancel_callback ch = s->ch;
        s->ch = NULL;
        ch(&s->base, s->ch_data);
    }
    s->ch = NULL;
    s->timeout_ms = 0;
    if (!from_eh && s->eh) {
        s->st = ST_RUN;
        s->in_eh = 1;
        s->rec = 0;
        s->eh(&s->base, s->data, c);
        s->in_eh = 0;
        int rec = s->rec;
        if (rec & R_ERROR) {
            s->rec = 0;
            cpy(c, sizeof(c), s->code);
        } else if (rec & (R_SUCCESS | R_BREAK | R_CONT) || s->head) {
            s->in_eh = 1; /* an error from here on is not the handler's to see */
            after_cb(s);
            return;
        }
    }
    if (s->kind == K_ROOT) {
        flow_end(s, 2, c, NULL);
        return;
    }
    fe_step* p = s->parent;
    unlink_step(s);
    destroy(s);
    if (p->kind == K_PAR) {
        cancel_tree(p); /* the siblings */
        p->live = 0;
    }
    fail(p, c, 0);
}

static void start(fe_step* s)
{
    s->st = ST_RUN;
    s->rec = 0;
    switch (s->kind) {
    case K_STEP:
        s->f(&s->base, s->data, &s->in);
        break;
    case K_ITER: {
        fe_step* l = s->parent;
        if (l->rep_f) {
            l->rep_f(&s->base, l->data, s->i);
        } else {
            l->loop_f(&s->base, l->data);
        }
        break;
    }
    case K_LOOP:
        drop(&s->in, NULL);
        next_iteration(s);
        return;
    case K_PAR: {
        drop(&s->in, NULL);
        s->st = ST_SUBS;
        s->live = 0;
        for (fe_step* c = s->head; c; c = c->next) {
            s->live++;
        }
        if (!s->live) {
            complete(s, NULL);
            return;
        }
        for (fe_step* c = s->head; c; c = c->next) {
            make_ready(c, NULL);
        }
        return;
    }
    }
    after_cb(s);
}

void fe_run(void)
{
    while (ready_head) {
        fe_step* s = ready_head;
        ready_head = s->rnext;
        if (!ready_head) {
            ready_tail = NULL;
        }
        if (s->st == ST_READY) {
            start(s);
        }
    }
}

/* The vtable. */

static int in_callback(fe_step* s) { return s->st == ST_RUN; }

static void v_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    fe_step* s = S(bsi);
    fe_step* c = alloc_step(K_STEP, s);
    c->f = f;
    c->eh = eh;
    c->data = data;
    append(s, c);
}

static FutoInAsyncSteps* v_parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    fe_step* s = S(bsi);
    fe_step* c = alloc_step(K_PAR, s);
    c->eh = eh;
    c->data = data;
    append(s, c);
    return &c->base;
}

static void* v_state(FutoInAsyncSteps* bsi, void* data, const char* name, void* (*allocate)(void*),
        void (*cleanup)(void*, void*))
{
    fe_step* root = S(bsi)->root;
    for (fe_var* v = root->vars; v; v = v->next) {
        if (strcmp(v->name, name) == 0) {
            return v->value;
        }
    }
    if (!allocate) {
        return NULL;
    }
    fe_var* v = calloc(1, sizeof(*v));
    cpy(v->name, sizeof(v->name), name);
    v->data = data;
    v->cleanup = cleanup;
    v->value = allocate(data);
    v->next = root->vars;
    root->vars = v;
    return v->value;
}

static void* v_stack(FutoInAsyncSteps* bsi, size_t size, void (*cleanup)(void*))
{
    fe_step* s = S(bsi);
    fe_stack* k = calloc(1, sizeof(fe_stack) + size);
    k->cleanup = cleanup;
    k->next = s->stack;
    s->stack = k;
    return k->align;
}

static void v_success(FutoInAsyncSteps* bsi, FutoInArgs* args)
{
    fe_step* s = S(bsi);
    FutoInArgs a;
    if (args) {
        a = *args;
    } else {
        memset(&a, 0, sizeof(a));
    }
    if (in_callback(s)) {
        s->out = a;
        s->rec |= R_SUCCESS;
        return;
    }
    if (s->st == ST_WAIT) {
        s->ch = NULL;
        complete(s, &a);
        return;
    }
    drop(&a, NULL); /* too late: the values are dropped */
}

static void v_handle_error(FutoInAsyncSteps* bsi, const char* code, const char* info)
{
    fe_step* s = S(bsi);
    (void)info;
    cpy(s->code, sizeof(s->code), code ? code : "InternalError");
    if (in_callback(s)) {
        s->rec |= R_ERROR;
        return;
    }
    if (s->st == ST_WAIT) {
        s->ch = NULL;
        fail(s, s->code, 0);
    }
}

static void v_set_timeout(FutoInAsyncSteps* bsi, uint32_t ms)
{
    fe_step* s = S(bsi);
    s->timeout_ms = ms ? ms : 1;
    s->rec |= R_WAIT;
}

static void v_set_cancel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    fe_step* s = S(bsi);
    s->ch = ch;
    s->ch_data = data;
    s->rec |= R_WAIT;
}

static void v_wait(FutoInAsyncSteps* bsi) { S(bsi)->rec |= R_WAIT; }

static fe_step* add_loop(fe_step* s, void* data, const char* label)
{
    fe_step* l = alloc_step(K_LOOP, s);
    l->data = data;
    if (label) {
        l->has_label = 1;
        cpy(l->label, sizeof(l->label), label);
    }
    append(s, l);
    return l;
}

static void v_loop(FutoInAsyncSteps* bsi, void* data, void (*f)(FutoInAsyncSteps*, void*), const char* label)
{
    add_loop(S(bsi), data, label)->loop_f = f;
}

static void v_repeat(FutoInAsyncSteps* bsi, void* data, size_t count, void (*f)(FutoInAsyncSteps*, void*, size_t),
        const char* label)
{
    fe_step* l = add_loop(S(bsi), data, label);
    l->rep_f = f;
    l->count = count;
}

static void loop_ctl(FutoInAsyncSteps* bsi, const char* label, int flag)
{
    fe_step* s = S(bsi);
    s->has_label = label != NULL;
    if (label) {
        cpy(s->label, sizeof(s->label), label);
    }
    s->rec |= flag;
}

static void v_break(FutoInAsyncSteps* bsi, const char* label) { loop_ctl(bsi, label, R_BREAK); }
static void v_continue(FutoInAsyncSteps* bsi, const char* label) { loop_ctl(bsi, label, R_CONT); }

static void v_execute(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback unhandled)
{
    fe_step* r = S(bsi)->root;
    r->unhandled = unhandled;
    r->unhandled_data = data;
    r->done = 0;
    r->end_code[0] = 0;
    if (!r->head) {
        flow_end(r, 1, NULL, NULL);
        return;
    }
    r->st = ST_SUBS;
    make_ready(r->head, NULL);
}

static void v_cancel(FutoInAsyncSteps* bsi)
{
    fe_step* r = S(bsi)->root;
    cancel_tree(r);
    if (!r->done) {
        flow_end(r, 3, "Canceled", NULL);
    }
}

static void v_add_sync(FutoInAsyncSteps* bsi, FutoInSync* sync, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    (void)sync; /* no concurrency here: the section simply runs */
    v_add(bsi, data, f, eh);
}

static ptrdiff_t v_root_id(FutoInAsyncSteps* bsi) { return (ptrdiff_t)S(bsi)->root; }
static int v_is_valid(FutoInAsyncSteps* bsi) { return S(bsi)->st != ST_DEAD; }
static FutoInAsyncSteps* v_new_instance(FutoInAsyncSteps* bsi)
{
    (void)bsi;
    return fe_new();
}
static void v_free(FutoInAsyncSteps* bsi) { fe_free(bsi); }

static FutoInHandle v_sched(FutoInAsyncSteps* bsi, void* data, void (*cb)(void*))
{
    (void)bsi;
    cb(data); /* good enough for these tests: run at once */
    FutoInHandle h = {0, 0, 0};
    return h;
}
static FutoInHandle v_sched_deferred(FutoInAsyncSteps* bsi, uint32_t ms, void* data, void (*cb)(void*))
{
    (void)ms;
    return v_sched(bsi, data, cb);
}
static void v_sched_cancel(FutoInAsyncSteps* bsi, FutoInHandle* h) { (void)bsi, (void)h; }
static int v_sched_is_valid(FutoInAsyncSteps* bsi, FutoInHandle* h) { return (void)bsi, (void)h, 0; }
static int v_same_thread(FutoInAsyncSteps* bsi) { return (void)bsi, 1; }

static const FutoInAsyncStepsAPI fe_api = {{{
    v_add, v_parallel, v_state, v_stack, v_success, v_handle_error, v_set_timeout, v_set_cancel, v_wait,
    v_loop, v_repeat, v_break, v_continue, v_execute, v_cancel, v_add_sync, v_root_id, v_is_valid,
    v_new_instance, v_free, v_sched, v_sched_deferred, v_sched_cancel, v_sched_is_valid, v_same_thread,
}}};

/* The test's side. */

FutoInAsyncSteps* fe_new(void)
{
    fe_step* r = alloc_step(K_ROOT, NULL);
    return &r->base;
}

void fe_execute(FutoInAsyncSteps* root) { v_execute(root, NULL, NULL); }

int fe_done(FutoInAsyncSteps* root, const char** code)
{
    fe_step* r = S(root);
    if (code) {
        *code = r->end_code;
    }
    return r->done;
}

int fe_complete_args(FutoInAsyncSteps* root, FutoInBinaryValue** out)
{
    *out = S(root)->result.args;
    return 4;
}

void fe_free(FutoInAsyncSteps* bsi)
{
    fe_step* r = S(bsi);
    cancel_tree(r);
    drop(&r->result, NULL);
    while (r->vars) {
        fe_var* v = r->vars;
        r->vars = v->next;
        if (v->cleanup) {
            v->cleanup(v->data, v->value);
        }
        free(v);
    }
    destroy(r);
}

int fe_live(void)
{
    int n = 0;
    for (int i = 0; i < arena_used; i++) {
        n += arena[i].st != ST_DEAD;
    }
    return n;
}

void fe_fire_timeouts(void)
{
    for (int i = 0; i < arena_used; i++) {
        fe_step* s = &arena[i];
        if (s->st == ST_WAIT && s->timeout_ms) {
            s->timeout_ms = 0;
            fail(s, "Timeout", 0);
        }
    }
}

int fe_unhandled_calls(void) { return unhandled_calls; }
