/*
 * ctest.h: C code for package abi's tests. Two parts:
 *
 *  - ct_*: C step functions written against futoin.h only, so that they run
 *    in any implementation's flow: ours (through abi.Binary) and the small
 *    foreign engine below (through abi.Wrap). They record what happened in
 *    counters and a log that the Go tests read.
 *  - fe_*: a small, single-threaded foreign AsyncSteps implementation with
 *    its own FutoInAsyncStepsAPI vtable, so that abi.Wrap can be tested with
 *    an engine that is not ours.
 */
#ifndef ASYNCSTEPS_CTEST_H
#define ASYNCSTEPS_CTEST_H

#include <stddef.h>
#include <stdint.h>
#include "futoin.h"

/* Step kinds for ct_add (mirrored by ctest.Step in Go). */
enum {
    CT_INC = 0,       /* success(INT32 arg0+1, INT32 arg1+1) */
    CT_RECORD,        /* log data; success with the args it received, unchanged */
    CT_MARK,          /* log data; no success call (implicit success) */
    CT_ADD_SUBS,      /* add data CT_RECORD sub-steps tagged 100+i */
    CT_FAIL,          /* log data; handle_error("CError", "c step failed") */
    CT_WAIT,          /* log data; setCancel + waitExternal; ct_waiting = bsi */
    CT_TIMEOUT,       /* setTimeout(data ms) + setCancel; ct_waiting = bsi */
    CT_STACK,         /* stack(64, cleanup) twice; checks zeroing; success */
    CT_REPEAT,        /* repeat(data) logging 1000+i; ct_break_at / ct_continue_at */
    CT_LOOP,          /* loop logging 2000+n, breaks (label "L") after data rounds */
    CT_VALUE,         /* success with one value of FTN_TYPE_* data (see ct_value) */
    CT_OWNED,         /* success with data owned strings (cleanup counted) */
    CT_BIG4,          /* checks a previous CT_BIG4's values by address; success(INT32, INT32, 1 KiB, 1 KiB) */
    CT_PARALLEL,      /* parallel(eh records): branches CT_WAIT(data) and CT_FAIL(data+1) */
    CT_STATE,         /* stateVariable "ct.counter": ++*v, success(INT32 *v) */
    CT_GO_ADD,        /* add CT_MARK(data), a Go step (through ctGoAdd), CT_MARK(data+2) */
    CT_SUCCEED_ARG,   /* success(INT32 data) */
    CT_SPAWN_INC,     /* add data CT_INC sub-steps */
    CT_SPAWN_BIG4,    /* add data CT_BIG4 sub-steps */
    CT_MISUSE_SUCCESS_TWICE,
    CT_MISUSE_ADD_AFTER_SUCCESS,
    CT_MISUSE_AFTER_ERROR,
    CT_MISUSE_NULL_ADD,
    CT_MISUSE_KEEP,   /* ct_kept = bsi; success */
    CT_MISUSE_USE_KEPT, /* ct_kept->api->add(...): a pointer kept past its step */
    CT_MISUSE_NULL_CANCEL,
    CT_ADD_LIST,      /* add the steps of ct_list (ct_list_set), in order */
    CT_GO_CALL,       /* log data; call Go (ctGoCall(bsi, data)); success(INT32 data) */
    CT_STEP_COUNT
};

/* Error handler kinds for ct_add. */
enum {
    CT_EH_NONE = 0,
    CT_EH_RECORD,   /* log -1, keep the code; the error goes on */
    CT_EH_RECOVER,  /* log -2, keep the code; success(INT32 42) */
    CT_EH_RETHROW,  /* log -3, keep the code; handle_error("Rethrown") */
    CT_EH_INFO,     /* log -4, keep the code and State's error_info */
    CT_EH_COUNT
};

void ct_add(FutoInAsyncSteps* bsi, int step, intptr_t data, int eh);
void ct_reset(void);
void ct_noop(void);
void* ct_step_fn(int step);
void* ct_handler_fn(int eh);
void ct_push(int v);
void ct_list_set(int i, int step, intptr_t data, int eh);
extern int ct_list_n;

extern int ct_log[1024];
extern int ct_nlog;
extern char ct_code[64];
extern char ct_info[256];
extern int ct_cancels;
extern int ct_stack_cleanups;
extern int ct_stack_bad;
extern int ct_value_cleanups;
extern int ct_state_allocs;
extern int ct_state_cleanups;
extern int ct_big_bad;
extern int ct_big_ok;
extern int ct_break_at;
extern int ct_continue_at;
extern int ct_inc_seen[2];
extern FutoInAsyncSteps* ct_waiting;
extern FutoInAsyncSteps* ct_kept;

void ct_complete_waiting(int32_t v);
void ct_fail_waiting(const char* code);
void ct_complete_waiting_owned(void);
void ct_complete_owned_on(FutoInAsyncSteps* bsi);

/* Values of every type (FTN_TYPE_* flags, FTN_TYPE_ARRAY or-ed in for
   arrays), in static C memory; ct_value_data is the payload's address. */
FutoInBinaryValue* ct_value(int flags);
const void* ct_value_data(int flags);
/* An owned STRING value (malloc'ed payload, cleanup counted). */
void ct_owned_value(FutoInBinaryValue* v, const char* s);
extern const char ct_big_a[1025];
extern const char ct_big_b[1025];

/* The foreign engine. */
FutoInAsyncSteps* fe_new(void);
void fe_run(void);
int fe_done(FutoInAsyncSteps* root, const char** code);
void fe_free(FutoInAsyncSteps* root);
int fe_live(void);
void fe_fire_timeouts(void);
void fe_execute(FutoInAsyncSteps* root);
int fe_unhandled_calls(void);
int fe_complete_args(FutoInAsyncSteps* root, FutoInBinaryValue** out);

#endif
