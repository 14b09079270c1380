/*
 * bridge.c: the vtable our engine gives C code (asx_api), its fast path
 * that records without calling Go, and the trampolines Go uses to call C.
 */
#include <stdlib.h>
#include <string.h>
#include "bridge.h"
#include "_cgo_export.h"

const FutoInType asx_types[0x20] = {
#define T(flags) [flags] = {flags, NULL}
    T(FTN_TYPE_CUSTOM_OBJECT), T(FTN_TYPE_STRING), T(FTN_TYPE_STRING16), T(FTN_TYPE_STRING32),
    T(FTN_TYPE_BOOL), T(FTN_TYPE_INT8), T(FTN_TYPE_INT16), T(FTN_TYPE_INT32), T(FTN_TYPE_INT64),
    T(FTN_TYPE_UINT8), T(FTN_TYPE_UINT16), T(FTN_TYPE_UINT32), T(FTN_TYPE_UINT64),
    T(FTN_TYPE_FLOAT), T(FTN_TYPE_DOUBLE),
    T(FTN_TYPE_ARRAY | FTN_TYPE_CUSTOM_OBJECT), T(FTN_TYPE_ARRAY | FTN_TYPE_STRING),
    T(FTN_TYPE_ARRAY | FTN_TYPE_STRING16), T(FTN_TYPE_ARRAY | FTN_TYPE_STRING32),
    T(FTN_TYPE_ARRAY | FTN_TYPE_BOOL), T(FTN_TYPE_ARRAY | FTN_TYPE_INT8), T(FTN_TYPE_ARRAY | FTN_TYPE_INT16),
    T(FTN_TYPE_ARRAY | FTN_TYPE_INT32), T(FTN_TYPE_ARRAY | FTN_TYPE_INT64), T(FTN_TYPE_ARRAY | FTN_TYPE_UINT8),
    T(FTN_TYPE_ARRAY | FTN_TYPE_UINT16), T(FTN_TYPE_ARRAY | FTN_TYPE_UINT32), T(FTN_TYPE_ARRAY | FTN_TYPE_UINT64),
    T(FTN_TYPE_ARRAY | FTN_TYPE_FLOAT), T(FTN_TYPE_ARRAY | FTN_TYPE_DOUBLE),
#undef T
};

#define B(bsi) ((asx_bsi*)(bsi))

/* chain_cur is the image of the chain step whose callback runs on this
   thread (asx_chain), until the engine is given that step. Every entry
   that calls into Go gives it first (leave_chain): Go code sees the engine
   as it would be had the step been run by the engine, with that step
   running. Entries that only record do not: they are the chain's path. */
static __thread asx_bsi* chain_cur;

static inline void leave_chain(void)
{
    asx_bsi* c = chain_cur;
    if (c) {
        chain_cur = NULL;
        asxGoChainEnter(c);
    }
}

/* recording reports whether b's callback is running on this thread: only
   then do the entries record. Another thread (a worker finishing the step
   early) goes to Go, whose External takes the result safely. */
static inline int recording(asx_bsi* b)
{
    return b->mode == ASX_RECORD && pthread_equal(b->owner, pthread_self());
}

/* misuse records the first misuse of a recording callback. */
static void misuse(asx_bsi* b, const char* what)
{
    if (!(b->rec & ASX_R_MISUSE)) {
        b->misuse = what;
        b->rec |= ASX_R_MISUSE;
    }
}

/* ended reports (and records) a call made after handle_error. */
static int ended(asx_bsi* b)
{
    if (b->rec & (ASX_R_ERROR | ASX_R_MISUSE | ASX_R_LOOPCTL)) {
        misuse(b, "the API was called after handle_error, breakLoop or continueLoop (or a misuse) in the same callback");
        return 1;
    }
    return 0;
}

static void v_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoAdd(b, data, f, eh);
        return;
    }
    if (ended(b)) {
        return;
    }
    if (!f) {
        misuse(b, "add: NULL execute callback");
        return;
    }
    if (b->rec & ASX_R_SUCCESS) {
        misuse(b, "add: called after success");
        return;
    }
    if (b->nadd == ASX_ADDS) {
        leave_chain();
        asxGoFlush(b);
    }
    asx_add* a = &b->s->adds[b->nadd++];
    a->f = f;
    a->eh = eh;
    a->data = data;
    b->added++;
    b->rec |= ASX_R_ADD;
}

static FutoInAsyncSteps* v_parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return bsi; /* calls on it are misuses of this step too */
        }
        if (b->rec & ASX_R_SUCCESS) {
            misuse(b, "parallel: called after success");
            return bsi;
        }
        b->added++;
    }
    leave_chain();
    return asxGoParallel(b, data, eh);
}

static void* v_state(FutoInAsyncSteps* bsi, void* data, const char* name, void* (*allocate)(void*),
        void (*cleanup)(void*, void*))
{
    leave_chain();
    return asxGoState(B(bsi), data, (char*)name, (void*)allocate, (void*)cleanup);
}

static void* v_stack(FutoInAsyncSteps* bsi, size_t size, void (*cleanup)(void*))
{
    asx_bsi* b = B(bsi);
    if (!recording(b) && b->mode != ASX_DIRECT) {
        leave_chain();
        return asxGoStack(b, size);
    }
    /* Allowed after handle_error: it changes nothing in the step's outcome,
       and C++ code (the FutoIn wrapper) keeps objects on the step's stack
       after it reported an error. */
    /* The header is two pointers: the memory after it is aligned for any
       scalar as malloc's is on the common ABIs (16 bytes on LP64). */
    asx_stack* s = calloc(1, sizeof(asx_stack) + (size ? size : 1));
    if (!s) {
        if (recording(b)) {
            misuse(b, "stack: out of memory");
        }
        return NULL;
    }
    s->cleanup = cleanup;
    s->next = b->stack;
    b->stack = s;
    return s + 1;
}

static void v_success(FutoInAsyncSteps* bsi, FutoInArgs* args)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoSuccess(b, args);
        return;
    }
    if (ended(b)) {
        return;
    }
    if (b->rec & ASX_R_SUCCESS) {
        misuse(b, "success: called twice");
        return;
    }
    if (b->added) {
        misuse(b, "success: called after sub-steps were added");
        return;
    }
    if (args) {
        b->s->out = *args;
    }
    b->rec |= ASX_R_SUCCESS;
}

static void v_handle_error(FutoInAsyncSteps* bsi, const char* code, const char* info)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoError(b, (char*)code, (char*)info);
        return;
    }
    if (ended(b)) {
        return;
    }
    /* Copies: the callback returns before Go reads them, and C code often
       formats the info into a buffer on its own stack. */
    b->code = code ? strdup(code) : NULL;
    b->info = info ? strdup(info) : NULL;
    b->rec |= ASX_R_ERROR;
}

static void v_set_timeout(FutoInAsyncSteps* bsi, uint32_t ms)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoSetTimeout(b, ms);
        return;
    }
    if (ended(b)) {
        return;
    }
    if (b->handler) {
        misuse(b, "setTimeout: not allowed in an error handler");
        return;
    }
    b->timeout_ms = ms;
    b->rec |= ASX_R_TIMEOUT;
    leave_chain();
    asxGoArm(b); /* finishable from now on, from any thread */
}

static void v_set_cancel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_cancel_callback ch)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoSetCancel(b, data, ch);
        return;
    }
    if (ended(b)) {
        return;
    }
    if (b->handler) {
        misuse(b, "setCancel: not allowed in an error handler");
        return;
    }
    if (!ch) {
        misuse(b, "setCancel: NULL cancel callback");
        return;
    }
    b->ch = ch;
    b->ch_data = data;
    b->rec |= ASX_R_CANCEL;
    leave_chain();
    asxGoArm(b);
}

static void v_wait_external(FutoInAsyncSteps* bsi)
{
    asx_bsi* b = B(bsi);
    if (!recording(b)) {
        leave_chain();
        asxGoWait(b);
        return;
    }
    if (ended(b)) {
        return;
    }
    if (b->handler) {
        misuse(b, "waitExternal: not allowed in an error handler");
        return;
    }
    b->rec |= ASX_R_WAIT;
    leave_chain();
    asxGoArm(b);
}

/* The entries below always go to Go: they start or change more than the
   running step, or read the engine's state. In a recording callback the
   Go side first hands the adds recorded so far to the engine, so sub-steps
   keep the order they were added in. */

static void v_loop(FutoInAsyncSteps* bsi, void* data, void (*f)(FutoInAsyncSteps*, void*), const char* label)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return;
        }
        b->added++;
    }
    leave_chain();
    asxGoLoop(b, data, (void*)f, (char*)label);
}

static void v_repeat(FutoInAsyncSteps* bsi, void* data, size_t count,
        void (*f)(FutoInAsyncSteps*, void*, size_t), const char* label)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return;
        }
        b->added++;
    }
    leave_chain();
    asxGoRepeat(b, data, count, (void*)f, (char*)label);
}

static void v_break(FutoInAsyncSteps* bsi, const char* label)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return;
        }
        b->rec |= ASX_R_LOOPCTL;
    }
    leave_chain();
    asxGoLoopCtl(b, (char*)label, 0);
}

static void v_continue(FutoInAsyncSteps* bsi, const char* label)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return;
        }
        b->rec |= ASX_R_LOOPCTL;
    }
    leave_chain();
    asxGoLoopCtl(b, (char*)label, 1);
}

static void v_execute(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback unhandled)
{
    leave_chain();
    asxGoExecute(B(bsi), data, unhandled);
}

static void v_cancel(FutoInAsyncSteps* bsi) { leave_chain(); asxGoCancel(B(bsi)); }

static void v_add_sync(FutoInAsyncSteps* bsi, FutoInSync* sync, void* data,
        FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh)
{
    asx_bsi* b = B(bsi);
    if (recording(b)) {
        if (ended(b)) {
            return;
        }
        if (b->rec & ASX_R_SUCCESS) {
            misuse(b, "addSync: called after success");
            return;
        }
        b->added++;
    }
    leave_chain();
    asxGoAddSync(b, sync, data, f, eh);
}

static ptrdiff_t v_root_id(FutoInAsyncSteps* bsi) { leave_chain(); return asxGoRootID(B(bsi)); }
static int v_is_valid(FutoInAsyncSteps* bsi) { leave_chain(); return asxGoIsValid(B(bsi)); }
static FutoInAsyncSteps* v_new_instance(FutoInAsyncSteps* bsi) { leave_chain(); return asxGoNewInstance(B(bsi)); }
static void v_free(FutoInAsyncSteps* bsi) { leave_chain(); asxGoFree(B(bsi)); }

static FutoInHandle v_sched_immediate(FutoInAsyncSteps* bsi, void* data, void (*cb)(void*))
{
    FutoInHandle h = {0, 0, 0};
    leave_chain();
    asxGoSchedule(B(bsi), 0, 0, data, (void*)cb, &h);
    return h;
}

static FutoInHandle v_sched_deferred(FutoInAsyncSteps* bsi, uint32_t delay_ms, void* data, void (*cb)(void*))
{
    FutoInHandle h = {0, 0, 0};
    leave_chain();
    asxGoSchedule(B(bsi), 1, delay_ms, data, (void*)cb, &h);
    return h;
}

static void v_sched_cancel(FutoInAsyncSteps* bsi, FutoInHandle* h) { leave_chain(); asxGoSchedCancel(B(bsi), h); }
static int v_sched_is_valid(FutoInAsyncSteps* bsi, FutoInHandle* h) { leave_chain(); return asxGoSchedIsValid(B(bsi), h); }
static int v_is_same_thread(FutoInAsyncSteps* bsi) { leave_chain(); return asxGoIsSameThread(B(bsi)); }

const FutoInAsyncStepsAPI asx_api = {{{
    v_add, v_parallel, v_state, v_stack, v_success, v_handle_error, v_set_timeout, v_set_cancel,
    v_wait_external, v_loop, v_repeat, v_break, v_continue, v_execute, v_cancel, v_add_sync,
    v_root_id, v_is_valid, v_new_instance, v_free, v_sched_immediate, v_sched_deferred,
    v_sched_cancel, v_sched_is_valid, v_is_same_thread,
}}};

static void s_lock(FutoInAsyncSteps* bsi, FutoInSync* s) { leave_chain(); asxGoSyncLock(bsi, s, 1); }
static void s_unlock(FutoInAsyncSteps* bsi, FutoInSync* s) { leave_chain(); asxGoSyncLock(bsi, s, 0); }

const FutoInSyncAPI asx_sync_api = {{{s_lock, s_unlock}}};

int asx_is_ours(FutoInAsyncSteps* bsi) { return bsi && bsi->api == &asx_api; }
int asx_sync_is_ours(FutoInSync* s) { return s && s->api == &asx_sync_api; }

/* Calls from Go into C. */

void asx_exec(uintptr_t p)
{
    asx_bsi* b = (asx_bsi*)p;
    b->owner = pthread_self();
    b->f(&b->base, b->data, &b->s->in);
}

void asx_handle(asx_bsi* b, const char* code)
{
    b->owner = pthread_self();
    b->eh(&b->base, b->data, code);
}
void asx_cancel_cb(asx_bsi* b) { b->ch(&b->base, b->ch_data); }

void asx_loop_body(asx_bsi* b)
{
    b->owner = pthread_self();
    ((void (*)(FutoInAsyncSteps*, void*))b->loop_f)(&b->base, b->loop_data);
}

void asx_repeat_body(asx_bsi* b, size_t i)
{
    b->owner = pthread_self();
    ((void (*)(FutoInAsyncSteps*, void*, size_t))b->loop_f)(&b->base, b->loop_data, i);
}

void asx_free_stack(asx_bsi* b)
{
    asx_stack* s = b->stack;
    b->stack = NULL;
    while (s) {
        asx_stack* next = s->next;
        if (s->cleanup) {
            s->cleanup(s + 1);
        }
        free(s);
        s = next;
    }
}

void asx_cleanup(FutoInBinaryValue* v)
{
    if (v->type && v->type->cleanup) {
        v->type->cleanup(v);
    }
}

void asx_unhandled(FutoInAsyncSteps_error_callback cb, FutoInAsyncSteps* bsi, void* data, const char* code)
{
    cb(bsi, data, code);
}

void asx_call_void(void (*cb)(void*), void* data) { cb(data); }
void* asx_call_alloc(void* (*allocate)(void*), void* data) { return allocate(data); }
void asx_call_state_cleanup(void (*cleanup)(void*, void*), void* data, void* value) { cleanup(data, value); }
void asx_sync_lock(FutoInSync* s, FutoInAsyncSteps* bsi) { s->api->lock(bsi, s); }
void asx_sync_unlock(FutoInSync* s, FutoInAsyncSteps* bsi) { s->api->unlock(bsi, s); }

/* Wrap: Go steps in a foreign flow call its vtable through these. The
   foreign engine calls our trampolines (exported from Go) back. */

void asx_f_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    bsi->api->add(bsi, data, f, eh);
}

static void f_exec(FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args)
{
    leave_chain();
    asxGoForeignExec(bsi, data, (FutoInArgs*)args);
}

static void f_error(FutoInAsyncSteps* bsi, void* data, const char* code)
{
    leave_chain();
    asxGoForeignError(bsi, data, (char*)code);
}

static void f_cancel(FutoInAsyncSteps* bsi, void* data) { leave_chain(); asxGoForeignCancel(bsi, data); }
static void f_loop(FutoInAsyncSteps* bsi, void* data) { leave_chain(); asxGoForeignLoop(bsi, data, 0); }
static void f_repeat(FutoInAsyncSteps* bsi, void* data, size_t i) { leave_chain(); asxGoForeignLoop(bsi, data, i); }

FutoInAsyncSteps* asx_f_parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh)
{
    return bsi->api->parallel(bsi, data, eh);
}

static void* f_state_alloc(void* data) { (void)data; return calloc(1, sizeof(uintptr_t)); }
static void f_state_cleanup(void* data, void* value)
{
    leave_chain();
    asxGoForeignStateCleanup(data, value);
    free(value);
}

void* asx_f_state(FutoInAsyncSteps* bsi, void* data, const char* name)
{
    return bsi->api->stateVariable(bsi, data, name, f_state_alloc, f_state_cleanup);
}

void* asx_f_stack(FutoInAsyncSteps* bsi, size_t size) { return bsi->api->stack(bsi, size, NULL); }

/* keep ties a Go record (a cgo.Handle in data) to the foreign step's life:
   its stack cleanup lets Go delete the handle. */
static void f_keep_cleanup(void* value) { leave_chain(); asxGoForeignRelease(*(void**)value); }
void asx_f_keep(FutoInAsyncSteps* bsi, void* data)
{
    void** slot = bsi->api->stack(bsi, sizeof(void*), f_keep_cleanup);
    if (slot) {
        *slot = data;
    }
}

/* A string handed to a foreign flow from Go memory: a malloc'ed copy that
   the foreign engine frees through the type's cleanup. */
static void owned_string_cleanup(FutoInBinaryValue* v) { free((void*)v->p); }
const FutoInType asx_owned_string = {FTN_TYPE_STRING, owned_string_cleanup};

/* A Go object handed to a foreign flow: its cgo.Handle is deleted by the
   type's cleanup, when the foreign engine drops the value. */
static void goobj_cleanup(FutoInBinaryValue* v) { leave_chain(); asxGoObjRelease(v->custom_data); }
const FutoInType asx_goobj_owned = {FTN_TYPE_CUSTOM_OBJECT, goobj_cleanup};

void asx_init_sync(asx_sync* s) { *(const FutoInSyncAPI**)&s->base = &asx_sync_api; }
void asx_f_success(FutoInAsyncSteps* bsi, FutoInArgs* args) { bsi->api->success(bsi, args); }
void asx_f_error(FutoInAsyncSteps* bsi, const char* code, const char* info) { bsi->api->handle_error(bsi, code, info); }
void asx_f_set_timeout(FutoInAsyncSteps* bsi, uint32_t ms) { bsi->api->setTimeout(bsi, ms); }
void asx_f_set_cancel(FutoInAsyncSteps* bsi, void* data) { bsi->api->setCancel(bsi, data, f_cancel); }
void asx_f_wait(FutoInAsyncSteps* bsi) { bsi->api->waitExternal(bsi); }
void asx_f_add_sync(FutoInAsyncSteps* bsi, FutoInSync* s, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh)
{
    bsi->api->addSync(bsi, s, data, f, eh);
}
void asx_f_loop(FutoInAsyncSteps* bsi, void* data, const char* label) { bsi->api->loop(bsi, data, f_loop, label); }
void asx_f_repeat(FutoInAsyncSteps* bsi, void* data, size_t count, const char* label)
{
    bsi->api->repeat(bsi, data, count, f_repeat, label);
}
void asx_f_break(FutoInAsyncSteps* bsi, const char* label) { bsi->api->breakLoop(bsi, label); }
void asx_f_continue(FutoInAsyncSteps* bsi, const char* label) { bsi->api->continueLoop(bsi, label); }
void asx_f_execute(FutoInAsyncSteps* bsi) { bsi->api->execute(bsi, NULL, NULL); }
void asx_f_cancel(FutoInAsyncSteps* bsi) { bsi->api->cancel(bsi); }
ptrdiff_t asx_f_root_id(FutoInAsyncSteps* bsi) { return bsi->api->rootId(bsi); }
int asx_f_is_valid(FutoInAsyncSteps* bsi) { return bsi->api->isValid(bsi); }
FutoInAsyncSteps* asx_f_new_instance(FutoInAsyncSteps* bsi) { return bsi->api->newInstance(bsi); }
void asx_f_free(FutoInAsyncSteps* bsi) { bsi->api->free(bsi); }

/* lock_resume runs on the locking step's engine's thread: the last user of
   q once it is scheduled. */
static void lock_resume(void* p)
{
    asx_lockreq* q = p;
    if (asxGoLockResume(q->proxy)) {
        if (q->code) {
            q->bsi->api->handle_error(q->bsi, q->code, "the sync object did not let the flow in");
        } else {
            q->bsi->api->success(q->bsi, NULL);
        }
    }
    free(q);
}

void asx_lock_done(asx_lockreq* q, const char* code)
{
    q->code = code;
    q->bsi->api->sched_immediate(q->bsi, q, lock_resume);
}

/* Exported for the Go side of Wrap, which passes them as callbacks. */
FutoInAsyncSteps_execute_callback asx_f_exec_cb = f_exec;
FutoInAsyncSteps_error_callback asx_f_error_cb = f_error;

/* asx_chain_abort forgets the chain step of this thread: a Go panic
   unwound through asx_chain. */
void asx_chain_abort(void) { chain_cur = NULL; }

/* plain_value reports whether v may go from one chain step to the next as
   it is: no cleanup (the engine tracks owned values) and not a descriptor
   made in Go (the engine maps those back to the Go values they stand for). */
static inline int plain_value(const FutoInBinaryValue* v)
{
    const FutoInType* t = v->type;
    return !t || (!t->cleanup && !(t >= asx_types && t < asx_types + 0x20));
}

/* plain_end reports whether c's step ended so that the engine would only
   advance to the next step: success with plain values, or nothing
   recorded (implicit success), and no stack() memory to free. */
static inline int plain_end(const asx_bsi* c)
{
    if ((c->rec & ~(uint32_t)ASX_R_SUCCESS) || c->stack) {
        return 0;
    }
    const FutoInArgs* o = &c->s->out;
    return plain_value(&o->arg0) && plain_value(&o->arg1) && plain_value(&o->arg2) && plain_value(&o->arg3);
}

/* asx_chain runs the steps b's callback added (b->s->adds, none of them
   given to the engine yet) one after the other, the values one succeeds
   with being the next one's arguments as they are (the first gets none, as
   the engine gives a first sub-step), until one ends otherwise than
   plainly, its callback calls into Go (leave_chain: Go then has it
   entered), or max steps ran. It returns how many callbacks ran (r->k);
   the last step's image (r->img[r->pos], unless Go entered it) keeps its
   record, and r->in its arguments, for Go. Go called it only when max
   > 0 and b's record is adds alone. */
uint32_t asx_chain(uintptr_t rp, uintptr_t bp, uint32_t max)
{
    asx_ring* r = (asx_ring*)rp;
    asx_bsi* b = (asx_bsi*)bp;
    const asx_add* a = b->s->adds;
    uint32_t n = b->nadd < max ? b->nadd : max;
    pthread_t self = pthread_self();
    asx_bsi* c = NULL;
    r->parent = b;
    r->entered = 0;
    r->plain = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (c) {
            c->mode = ASX_STALE; /* its step ended: a kept pointer is a misuse */
            c->s = NULL;
        }
        /* Step k records into s[k&1] and gets s[(k+1)&1]'s out block, what
           step k-1 succeeded with (none for the first, and none after an
           implicit success: emptied before that step ran). s[k&1]'s out
           block was step k-1's arguments: done with, emptied. */
        asx_scratch* s = r->s[k & 1];
        FutoInArgs* in = &r->s[(k + 1) & 1]->out;
        if (k == 0) {
            in->arg0.type = in->arg1.type = in->arg2.type = in->arg3.type = NULL;
        }
        s->out.arg0.type = s->out.arg1.type = s->out.arg2.type = s->out.arg3.type = NULL;
        uint32_t pos = r->pos + 1 == ASX_RING ? 0 : r->pos + 1;
        r->pos = pos;
        c = r->img[pos];
        c->f = a[k].f;
        c->eh = a[k].eh;
        c->data = a[k].data;
        c->rec = 0;
        c->s = s;
        c->depth = b->depth + 1;
        c->owner = self;
        c->mode = ASX_RECORD;
        r->k = k + 1;
        r->in = in;
        chain_cur = c;
        c->f(&c->base, c->data, in);
        chain_cur = NULL;
        if (r->entered) {
            return k + 1;
        }
        r->plain = (uint32_t)plain_end(c);
        if (k + 1 == n || !r->plain) {
            return k + 1;
        }
    }
    return n;
}
