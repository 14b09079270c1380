/*
 * futoin.h: FTN12 v1.14 section 2.7, the universal binary interface of
 * AsyncSteps, exactly as the specification lays it out: binary values
 * (2.7.1), the AsyncSteps vtable (2.7.2) and the synchronization object
 * (2.7.3). Valid C11 and C++11; the static assertions below pin every size
 * and offset the interface depends on (LP64 and ILP32 alike).
 */
#ifndef FUTOIN_H
#define FUTOIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#include <cstdint>
#define FUTOIN_STATIC_ASSERT(c, m) static_assert(c, m)
typedef char16_t futoin_char16_t;
typedef char32_t futoin_char32_t;
extern "C" {
#else
#include <stdbool.h>
#include <uchar.h>
#define FUTOIN_STATIC_ASSERT(c, m) _Static_assert(c, m)
typedef char16_t futoin_char16_t;
typedef char32_t futoin_char32_t;
#endif

/* 2.7.1. Binary data */

typedef struct FutoInBinaryValue_ FutoInBinaryValue;
typedef struct FutoInType_ FutoInType;
typedef uint8_t FutoInTypeFlags;

enum {
    FTN_TYPE_CUSTOM_OBJECT = 0x01,
    FTN_TYPE_STRING = 0x02,
    FTN_TYPE_STRING16 = 0x03,
    FTN_TYPE_STRING32 = 0x04,
    FTN_TYPE_BOOL = 0x05,
    FTN_TYPE_INT8 = 0x06,
    FTN_TYPE_INT16 = 0x07,
    FTN_TYPE_INT32 = 0x08,
    FTN_TYPE_INT64 = 0x09,
    FTN_TYPE_UINT8 = 0x0A,
    FTN_TYPE_UINT16 = 0x0B,
    FTN_TYPE_UINT32 = 0x0C,
    FTN_TYPE_UINT64 = 0x0D,
    FTN_TYPE_FLOAT = 0x0E,
    FTN_TYPE_DOUBLE = 0x0F,
    FTN_BASE_TYPE_MASK = 0x0F,
    /* -- */
    FTN_TYPE_ARRAY = 0x10,
    FTN_COMPLEX_TYPE_MASK = 0xF0
};

struct FutoInType_ {
    const FutoInTypeFlags flags;
    void (*const cleanup)(FutoInBinaryValue* v);
    /* NOTE: extendable by implementation */
};

struct FutoInBinaryValue_ {
    const FutoInType* type;
    union {
        const void* p;
        const char* cstr;
        const futoin_char16_t* cstr16;
        const futoin_char32_t* cstr32;
        bool b;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
        uint16_t u16;
        uint32_t u32;
        uint64_t u64;
        float f;
        double d;
    };
    void* custom_data;
    uint32_t length;
};

/* Runs the value's cleanup (if its type has one) and empties it. */
static inline void futoin_reset_binval(FutoInBinaryValue* v)
{
    const FutoInType* tp = v->type;
    if (tp) {
        void (*f)(FutoInBinaryValue*) = tp->cleanup;
        if (f) {
            f(v);
        }
    }

    v->type = 0;
    v->u64 = 0;
    v->custom_data = 0;
    v->length = 0;
}

/* 2.7.2. Binary AsyncSteps interface */

typedef struct FutoInAsyncStepsAPI_ FutoInAsyncStepsAPI;
typedef struct FutoInAsyncSteps_ FutoInAsyncSteps;
typedef struct FutoInSyncAPI_ FutoInSyncAPI;
typedef struct FutoInSync_ FutoInSync;
typedef struct FutoInArgs_ FutoInArgs;
typedef struct FutoInHandle_ FutoInHandle;

struct FutoInArgs_ {
    union {
        struct {
            FutoInBinaryValue arg0;
            FutoInBinaryValue arg1;
            FutoInBinaryValue arg2;
            FutoInBinaryValue arg3;
        };
        FutoInBinaryValue args[4];
    };
};

struct FutoInHandle_ {
    void* data1;
    void* data2;
    ptrdiff_t data3;
};

typedef void (*FutoInAsyncSteps_execute_callback)(
        FutoInAsyncSteps* bsi, void* data, const FutoInArgs* args);
typedef void (*FutoInAsyncSteps_error_callback)(
        FutoInAsyncSteps* bsi, void* data, const char* code);
typedef void (*FutoInAsyncSteps_cancel_callback)(
        FutoInAsyncSteps* bsi, void* data);

struct FutoInAsyncStepsAPI_ {
    union {
        struct {
            /* Index 0 */
            void (*add)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 1 */
            FutoInAsyncSteps* (*parallel)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 2 */
            void* (*stateVariable)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    const char* name,
                    void* (*allocate)(void* data),
                    void (*cleanup)(void* data, void* value));
            /* Index 3 */
            void* (*stack)(
                    FutoInAsyncSteps* bsi,
                    size_t data_size,
                    void (*cleanup)(void* value));
            /* Index 4 */
            void (*success)(FutoInAsyncSteps* bsi, FutoInArgs* args);
            /* Index 5 */
            void (*handle_error)(
                    FutoInAsyncSteps* bsi, const char* code, const char* info);
            /* Index 6 */
            void (*setTimeout)(FutoInAsyncSteps* bsi, uint32_t timeout_ms);
            /* Index 7 */
            void (*setCancel)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_cancel_callback ch);
            /* Index 8 */
            void (*waitExternal)(FutoInAsyncSteps* bsi);
            /* Index 9 */
            void (*loop)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    void (*f)(FutoInAsyncSteps* bsi, void* data),
                    const char* label);
            /* Index 10 */
            void (*repeat)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    size_t count,
                    void (*f)(FutoInAsyncSteps* bsi, void* data, size_t i),
                    const char* label);
            /* Index 11 */
            void (*breakLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* Index 12 */
            void (*continueLoop)(FutoInAsyncSteps* bsi, const char* label);
            /* Index 13 */
            void (*execute)(
                    FutoInAsyncSteps* bsi,
                    void* data,
                    FutoInAsyncSteps_error_callback unhandled_error);
            /* Index 14 */
            void (*cancel)(FutoInAsyncSteps* bsi);
            /* Index 15 */
            void (*addSync)(
                    FutoInAsyncSteps* bsi,
                    FutoInSync* sync,
                    void* data,
                    FutoInAsyncSteps_execute_callback f,
                    FutoInAsyncSteps_error_callback eh);
            /* Index 16 */
            ptrdiff_t (*rootId)(FutoInAsyncSteps* bsi);
            /* Index 17 */
            int (*isValid)(FutoInAsyncSteps* bsi);
            /* Index 18 */
            FutoInAsyncSteps* (*newInstance)(FutoInAsyncSteps* bsi);
            /* Index 19 */
            void (*free)(FutoInAsyncSteps* bsi);
            /* Index 20 */
            FutoInHandle (*sched_immediate)(
                    FutoInAsyncSteps* bsi, void* data, void (*cb)(void* data));
            /* Index 21 */
            FutoInHandle (*sched_deferred)(
                    FutoInAsyncSteps* bsi,
                    uint32_t delay_ms,
                    void* data,
                    void (*cb)(void* data));
            /* Index 22 */
            void (*sched_cancel)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* Index 23 */
            int (*sched_is_valid)(FutoInAsyncSteps* bsi, FutoInHandle* handle);
            /* Index 24 */
            int (*is_same_thread)(FutoInAsyncSteps* bsi);
        };
        void* funcs[25];
    };
    /* NOTE: extendable by implementation */
};

struct FutoInAsyncSteps_ {
#ifdef __cplusplus
    FutoInAsyncSteps_(const FutoInAsyncStepsAPI* api) noexcept : api(api) {}
#endif
    const FutoInAsyncStepsAPI* const api;
    /* NOTE: extendable by implementation */
};

/* 2.7.3. Binary synchronization primitive's interface */

struct FutoInSyncAPI_ {
    union {
        struct {
            /* Index 0 */
            void (*lock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
            /* Index 1 */
            void (*unlock)(FutoInAsyncSteps* bsi, FutoInSync* sync);
        };
        void* funcs[2];
    };
    /* NOTE: extendable by implementation */
};

struct FutoInSync_ {
#ifdef __cplusplus
    FutoInSync_() noexcept : api(nullptr) {}
#endif
    const FutoInSyncAPI* const api;
    /* NOTE: extendable by implementation */
};

/* The layout every implementation relies on. */
#define FUTOIN_PTR sizeof(void*)
FUTOIN_STATIC_ASSERT(FUTOIN_PTR != 8 || sizeof(FutoInBinaryValue) == 32, "FutoInBinaryValue is 32 bytes");
FUTOIN_STATIC_ASSERT(offsetof(FutoInBinaryValue, type) == 0, "FutoInBinaryValue.type at 0");
FUTOIN_STATIC_ASSERT(offsetof(FutoInBinaryValue, u64) == 8, "FutoInBinaryValue union at 8");
FUTOIN_STATIC_ASSERT(FUTOIN_PTR != 8 || offsetof(FutoInBinaryValue, custom_data) == 16, "custom_data at 16");
FUTOIN_STATIC_ASSERT(FUTOIN_PTR != 8 || offsetof(FutoInBinaryValue, length) == 24, "length at 24");
FUTOIN_STATIC_ASSERT(sizeof(FutoInArgs) == 4 * sizeof(FutoInBinaryValue), "FutoInArgs is four values");
FUTOIN_STATIC_ASSERT(FUTOIN_PTR != 8 || sizeof(FutoInArgs) == 128, "FutoInArgs is 128 bytes");
FUTOIN_STATIC_ASSERT(offsetof(FutoInArgs, arg3) == 3 * sizeof(FutoInBinaryValue), "FutoInArgs.arg3");
FUTOIN_STATIC_ASSERT(sizeof(FutoInHandle) == 3 * FUTOIN_PTR, "FutoInHandle is three words");
FUTOIN_STATIC_ASSERT(sizeof(FutoInAsyncStepsAPI) == 25 * FUTOIN_PTR, "25 vtable slots");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, add) == 0 * FUTOIN_PTR, "add is slot 0");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, parallel) == 1 * FUTOIN_PTR, "parallel is slot 1");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, stateVariable) == 2 * FUTOIN_PTR, "stateVariable is slot 2");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, stack) == 3 * FUTOIN_PTR, "stack is slot 3");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, success) == 4 * FUTOIN_PTR, "success is slot 4");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, handle_error) == 5 * FUTOIN_PTR, "handle_error is slot 5");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, setTimeout) == 6 * FUTOIN_PTR, "setTimeout is slot 6");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, setCancel) == 7 * FUTOIN_PTR, "setCancel is slot 7");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, waitExternal) == 8 * FUTOIN_PTR, "waitExternal is slot 8");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, loop) == 9 * FUTOIN_PTR, "loop is slot 9");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, repeat) == 10 * FUTOIN_PTR, "repeat is slot 10");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, breakLoop) == 11 * FUTOIN_PTR, "breakLoop is slot 11");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, continueLoop) == 12 * FUTOIN_PTR, "continueLoop is slot 12");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, execute) == 13 * FUTOIN_PTR, "execute is slot 13");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, cancel) == 14 * FUTOIN_PTR, "cancel is slot 14");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, addSync) == 15 * FUTOIN_PTR, "addSync is slot 15");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, rootId) == 16 * FUTOIN_PTR, "rootId is slot 16");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, isValid) == 17 * FUTOIN_PTR, "isValid is slot 17");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, newInstance) == 18 * FUTOIN_PTR, "newInstance is slot 18");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, free) == 19 * FUTOIN_PTR, "free is slot 19");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, sched_immediate) == 20 * FUTOIN_PTR, "sched_immediate is slot 20");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, sched_deferred) == 21 * FUTOIN_PTR, "sched_deferred is slot 21");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, sched_cancel) == 22 * FUTOIN_PTR, "sched_cancel is slot 22");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, sched_is_valid) == 23 * FUTOIN_PTR, "sched_is_valid is slot 23");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncStepsAPI, is_same_thread) == 24 * FUTOIN_PTR, "is_same_thread is slot 24");
FUTOIN_STATIC_ASSERT(offsetof(FutoInAsyncSteps, api) == 0, "FutoInAsyncSteps starts with its api");
FUTOIN_STATIC_ASSERT(sizeof(FutoInSyncAPI) == 2 * FUTOIN_PTR, "two sync slots");
FUTOIN_STATIC_ASSERT(offsetof(FutoInSyncAPI, unlock) == FUTOIN_PTR, "unlock is slot 1");
FUTOIN_STATIC_ASSERT(offsetof(FutoInSync, api) == 0, "FutoInSync starts with its api");
#undef FUTOIN_PTR

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FUTOIN_H */
