/*
 * bridge.h: the C image of an engine step (asx_bsi), shared by bridge.c
 * and the Go side of package abi. Not installed: C programs see only
 * futoin.h and asyncsteps.h.
 *
 * A step's image is what its C code holds as FutoInAsyncSteps*. While our
 * engine runs a C callback on it (mode ASX_RECORD) the vtable entries that
 * only record something (add, success, handle_error, setTimeout,
 * setCancel, waitExternal, stack) write into the image and return without
 * calling Go; the Go side reads the record when the callback returns, so a
 * common C step costs one crossing. In every other mode the entries call
 * into Go at once.
 */
#ifndef ASYNCSTEPS_BRIDGE_H
#define ASYNCSTEPS_BRIDGE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "futoin.h"

enum {
    ASX_IDLE = 0,   /* the step is not running a callback: calls go to Go (External use) */
    ASX_RECORD = 1, /* our engine runs a C callback on this image: record */
    ASX_DIRECT = 2, /* a Go callback's image (abi.Binary): calls go to Go */
    ASX_STALE = 3   /* its step is gone: every call is a misuse */
};

enum {
    ASX_R_SUCCESS = 1,
    ASX_R_ERROR = 2,
    ASX_R_WAIT = 4,
    ASX_R_TIMEOUT = 8,
    ASX_R_CANCEL = 16,
    ASX_R_MISUSE = 32,
    ASX_R_ADD = 64,
    ASX_R_LOOPCTL = 128 /* breakLoop or continueLoop: the outcome, as handle_error is */
};

/* Adds recorded before Go must take them: the engine's turn budget, so
   that a chain (asx_chain) can cover every sub-step a turn may run. */
#define ASX_ADDS 4096

typedef struct asx_add {
    FutoInAsyncSteps_execute_callback f;
    FutoInAsyncSteps_error_callback eh;
    void* data;
} asx_add;

/* What a recording callback writes, lent by the reactor to the image whose
   callback runs (one at a time per loop, or a few when a callback drives a
   manual reactor): images stay small, and the memory every C step touches
   stays the same few cache lines. */
typedef struct asx_scratch {
    FutoInArgs in;  /* the values the callback receives */
    FutoInArgs out; /* recorded success values */
    asx_add adds[ASX_ADDS];
} asx_scratch;

typedef struct asx_stack {
    struct asx_stack* next;
    void (*cleanup)(void* value);
    /* the memory follows, aligned as malloc aligns */
} asx_stack;

typedef struct asx_bsi {
    FutoInAsyncSteps base; /* first: a FutoInAsyncSteps* is an asx_bsi* */
    uint32_t mode;         /* ASX_* above; written by Go */
    uint32_t rec;          /* ASX_R_* recorded during the callback */
    uint32_t id;           /* the image's index in Go's table of steps */
    uint32_t handler;      /* the callback is an error handler */
    uint32_t nadd;         /* adds recorded, not yet given to the engine */
    uint32_t added;        /* sub-steps added during this callback */
    uint32_t timeout_ms;
    FutoInAsyncSteps_execute_callback f; /* a C step's callback, error handler and data */
    FutoInAsyncSteps_error_callback eh;
    void* data;
    FutoInAsyncSteps_cancel_callback ch; /* recorded setCancel */
    void* ch_data;
    const char* code; /* recorded handle_error */
    const char* info;
    const char* misuse; /* the first misuse, for InternalError's info */
    asx_stack* stack;   /* stack() memory, freed with the step */
    struct asx_bsi* next_free;
    void* loop_f; /* loop/repeat bodies: the C body and its data */
    void* loop_data;
    asx_scratch* s; /* lent while recording (ASX_RECORD) */
    uint32_t depth; /* which of the reactor's scratches s is */
    pthread_t owner; /* the thread running the recording callback */
    uint32_t built;  /* 2: a root's; 1: bound off the loop while a root is built: its holder may call from its thread */
} asx_bsi;

/* A chain (asx_chain): the C steps a C step added, run back to back in C
   on images of the ring, one per step, each marked stale when the next
   starts (a pointer kept past its step is caught as with released images).
   Written by C while the chain runs, read and refilled by Go. */
#define ASX_RING 256
typedef struct asx_ring {
    asx_bsi* img[ASX_RING];
    uint32_t pos;     /* img[pos]: the image of the chain's current (last) step */
    uint32_t k;       /* steps whose callback ran in this chain, the current one included */
    uint32_t entered; /* set by Go: the current step was handed to the engine (asxGoChainEnter) */
    uint32_t plain;   /* the current step ended plainly (success with plain values, or nothing) */
    asx_bsi* parent;  /* the step whose adds the chain runs */
    /* The chain steps' scratches, not the parent's (whose adds the chain
       reads), used in turn: a step records into s[k&1], and its out block
       is the next step's arguments as it is, with no copy. */
    asx_scratch* s[2];
    FutoInArgs* in; /* the current step's arguments */
} asx_ring;

/* A sync object of ours (asyncsteps_*_new): the Go object's cgo.Handle. */
typedef struct asx_sync {
    FutoInSync base;
    uintptr_t handle;
} asx_sync;

/* asyncsteps.h's AsyncStepsReactor: the Go reactor's cgo.Handle. */
struct AsyncStepsReactor {
    uintptr_t handle;
};

extern const FutoInAsyncStepsAPI asx_api;
extern const FutoInSyncAPI asx_sync_api;

/* Type descriptors for values made in Go, indexed by FTN_TYPE_* flags
   (base type, or base type | FTN_TYPE_ARRAY). None has a cleanup. */
extern const FutoInType asx_types[0x20];

/* asx_exec takes the image as an integer: it is C memory, and a pointer
   argument would make cgo check, on every C step, whether it is Go's. */
void asx_exec(uintptr_t b);
uint32_t asx_chain(uintptr_t ring, uintptr_t b, uint32_t max);
void asx_chain_abort(void);
void asx_handle(asx_bsi* b, const char* code);
void asx_cancel_cb(asx_bsi* b);
void asx_loop_body(asx_bsi* b);
void asx_repeat_body(asx_bsi* b, size_t i);
void asx_free_stack(asx_bsi* b);
void asx_cleanup(FutoInBinaryValue* v);
void asx_unhandled(FutoInAsyncSteps_error_callback cb, FutoInAsyncSteps* bsi, void* data, const char* code);
void asx_call_void(void (*cb)(void*), void* data);
void* asx_call_alloc(void* (*allocate)(void*), void* data);
void asx_call_state_cleanup(void (*cleanup)(void*, void*), void* data, void* value);
void asx_sync_lock(FutoInSync* s, FutoInAsyncSteps* bsi);
void asx_sync_unlock(FutoInSync* s, FutoInAsyncSteps* bsi);

/* Wrap: calls into a foreign vtable. */
void asx_f_add(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_execute_callback f, FutoInAsyncSteps_error_callback eh);
FutoInAsyncSteps* asx_f_parallel(FutoInAsyncSteps* bsi, void* data, FutoInAsyncSteps_error_callback eh);
void* asx_f_state(FutoInAsyncSteps* bsi, void* data, const char* name);
void* asx_f_stack(FutoInAsyncSteps* bsi, size_t size);
void asx_f_keep(FutoInAsyncSteps* bsi, void* data);
void asx_init_sync(asx_sync* s);
extern const FutoInType asx_owned_string;
extern const FutoInType asx_goobj_owned;
void asx_f_success(FutoInAsyncSteps* bsi, FutoInArgs* args);
void asx_f_error(FutoInAsyncSteps* bsi, const char* code, const char* info);
void asx_f_set_timeout(FutoInAsyncSteps* bsi, uint32_t ms);
void asx_f_set_cancel(FutoInAsyncSteps* bsi, void* data);
void asx_f_wait(FutoInAsyncSteps* bsi);
void asx_f_add_sync(FutoInAsyncSteps* bsi, FutoInSync* s, void* data, FutoInAsyncSteps_execute_callback f,
        FutoInAsyncSteps_error_callback eh);
void asx_f_loop(FutoInAsyncSteps* bsi, void* data, const char* label);
void asx_f_repeat(FutoInAsyncSteps* bsi, void* data, size_t count, const char* label);
void asx_f_break(FutoInAsyncSteps* bsi, const char* label);
void asx_f_continue(FutoInAsyncSteps* bsi, const char* label);
void asx_f_execute(FutoInAsyncSteps* bsi);
void asx_f_cancel(FutoInAsyncSteps* bsi);
ptrdiff_t asx_f_root_id(FutoInAsyncSteps* bsi);
int asx_f_is_valid(FutoInAsyncSteps* bsi);
FutoInAsyncSteps* asx_f_new_instance(FutoInAsyncSteps* bsi);
void asx_f_free(FutoInAsyncSteps* bsi);
int asx_is_ours(FutoInAsyncSteps* bsi);
int asx_sync_is_ours(FutoInSync* s);
/* A lock (spec 2.7.3) asked for by a step of any engine: the step waits
   until asx_lock_done resumes it, on its own engine's thread (through its
   sched_immediate), unless it was canceled meanwhile. */
typedef struct asx_lockreq {
    FutoInAsyncSteps* bsi;
    const char* code; /* NULL: entered; else the error that kept it out */
    uintptr_t proxy;  /* the Go proxy's cgo.Handle: asked, on that thread, whether to resume */
} asx_lockreq;
void asx_lock_done(asx_lockreq* q, const char* code);

extern FutoInAsyncSteps_execute_callback asx_f_exec_cb;
extern FutoInAsyncSteps_error_callback asx_f_error_cb;

#endif /* ASYNCSTEPS_BRIDGE_H */
