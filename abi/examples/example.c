/*
 * example.c: a C program using asyncsteps through abi/asyncsteps.h and the
 * FTN12 vtable of abi/futoin.h. Build and run it with
 *
 *     make cabi
 *     gcc -Iabi abi/examples/example.c build/libasyncsteps.a -lpthread -o example
 *     ./example
 *
 * One flow shows nested steps, an error handler that recovers, a timeout,
 * a loop with break, and a Mutex shared by two flows. It runs twice: on a
 * manual reactor the program drives (with a virtual clock), then on a
 * started reactor with a thread of its own.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "asyncsteps.h"

static const FutoInType int_type = {FTN_TYPE_INT32, NULL};

/* A flow's own data: its name, and the mutex it shares. */
typedef struct {
    const char* name;
    FutoInSync* mutex;
} job;

static void say(FutoInAsyncSteps* as, const char* what)
{
    job* j = as->api->stateVariable(as, NULL, "job", NULL, NULL);
    printf("[%s] %s\n", j ? j->name : "?", what);
}

static void inner(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    say(as, "inner step: fails with NotFound");
    as->api->handle_error(as, "NotFound", "no such record");
    /* C has no exceptions: return right after handle_error. */
}

static void recover_not_found(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    char line[64];
    snprintf(line, sizeof line, "handler: %s, recovering with 42", code);
    say(as, line);
    FutoInArgs out;
    memset(&out, 0, sizeof out);
    out.arg0.type = &int_type;
    out.arg0.i32 = 42;
    as->api->success(as, &out);
}

static void outer(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    say(as, "outer step: adds a sub-step with an error handler");
    as->api->add(as, NULL, inner, recover_not_found);
}

static void show_value(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    char line[64];
    snprintf(line, sizeof line, "next step got %d", args->arg0.i32);
    say(as, line);
}

/* A step that waits for something that never comes: its timeout fails it. */
static void slow(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    say(as, "slow step: waits, with a 20 ms timeout");
    as->api->setTimeout(as, 20);
}

static void on_timeout(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    char line[64];
    snprintf(line, sizeof line, "handler: %s, going on", code);
    say(as, line);
    as->api->success(as, NULL);
}

static void body(FutoInAsyncSteps* as, void* data)
{
    int* i = data;
    char line[64];
    snprintf(line, sizeof line, "loop iteration %d", *i);
    say(as, line);
    if (++*i == 3) {
        as->api->breakLoop(as, NULL);
    }
}

static void looping(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    int* i = as->api->stack(as, sizeof(int), NULL); /* zeroed, freed with this step */
    as->api->loop(as, i, body, NULL);
}

static void critical(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)data;
    (void)args;
    say(as, "inside the mutex");
}

static void locked(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)args;
    job* j = data;
    as->api->addSync(as, j->mutex, NULL, critical, NULL);
}

static void* alloc_job(void* data) { return data; }

static void unhandled(FutoInAsyncSteps* as, void* data, const char* code)
{
    (void)data;
    const char* info = as->api->stateVariable(as, NULL, "error_info", NULL, NULL);
    printf("unhandled error: %s (%s)\n", code, info ? info : "");
}

/* build gives root the example's steps. */
static void build(FutoInAsyncSteps* root, job* j)
{
    root->api->stateVariable(root, j, "job", alloc_job, NULL);
    root->api->add(root, NULL, outer, NULL);
    root->api->add(root, NULL, show_value, NULL);
    root->api->add(root, NULL, slow, on_timeout);
    root->api->add(root, NULL, looping, NULL);
    root->api->add(root, j, locked, NULL);
}

static void on_manual(void)
{
    printf("-- manual reactor\n");
    AsyncStepsReactor* r = asyncsteps_reactor_manual();
    FutoInSync* mutex = asyncsteps_mutex_new(1, 0);
    job a = {"a", mutex}, b = {"b", mutex};
    FutoInAsyncSteps* ra = asyncsteps_new(r);
    FutoInAsyncSteps* rb = asyncsteps_new(r);
    build(ra, &a);
    build(rb, &b);
    ra->api->execute(ra, NULL, unhandled);
    rb->api->execute(rb, NULL, unhandled);
    asyncsteps_reactor_run_until_idle(r);
    asyncsteps_reactor_advance(r, 20); /* virtual time: the timeouts fire */
    ra->api->free(ra);
    rb->api->free(rb);
    asyncsteps_sync_free(mutex);
    asyncsteps_reactor_free(r);
}

/* On a started reactor the flow runs on the reactor's thread: the last
   step tells the main thread it is done. */
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int done;

static void finish(FutoInAsyncSteps* as, void* data, const FutoInArgs* args)
{
    (void)as;
    (void)data;
    (void)args;
    pthread_mutex_lock(&done_mu);
    done = 1;
    pthread_cond_signal(&done_cv);
    pthread_mutex_unlock(&done_mu);
}

static void on_started(void)
{
    printf("-- started reactor\n");
    AsyncStepsReactor* r = asyncsteps_reactor_start(-1);
    if (!r) {
        printf("could not start a reactor\n");
        return;
    }
    FutoInSync* mutex = asyncsteps_mutex_new(1, 0);
    job c = {"c", mutex};
    FutoInAsyncSteps* root = asyncsteps_new(r);
    build(root, &c);
    root->api->add(root, NULL, finish, NULL);
    root->api->execute(root, NULL, unhandled);
    pthread_mutex_lock(&done_mu);
    while (!done) {
        pthread_cond_wait(&done_cv, &done_mu);
    }
    pthread_mutex_unlock(&done_mu);
    asyncsteps_reactor_free(r); /* the flow has ended; closing frees its root's steps */
    asyncsteps_sync_free(mutex);
}

int main(void)
{
    on_manual();
    on_started();
    return 0;
}
