// Supplementary C++ rows, written for this measurement (NOT in the reference's
// bench/): sequential step, reactor turn, empty iteration, Mutex section.
// Same AsyncTool setup as the reference's bench programs (mempool_mutex=false,
// no thread: the benchmark drives iterate() itself). Prints ns per unit.
#include <cassert>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <futoin/ri/asynctool.hpp>
#include <futoin/ri/asyncsteps.hpp>
#include <futoin/ri/nitrosteps.hpp>
#include <futoin/ri/mutex.hpp>

using namespace futoin;
using Clock = std::chrono::steady_clock;

// the reference bench's tuned NitroSteps, with room for a sequential chain
template<unsigned N>
using Nitro = ri::NitroSteps<
    ri::nitro::MaxSteps<N>, ri::nitro::MaxTimeouts<1>, ri::nitro::MaxCancels<1>,
    ri::nitro::MaxExtended<1>, ri::nitro::MaxStackAllocs<1>>;

static double since(Clock::time_point t0, double units) {
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / units;
}

static ri::AsyncTool::Params params() {
    ri::AsyncTool::Params prm;
    prm.mempool_mutex = false;
    return prm;
}

// Sequential: a root of 1 + n steps; the first succeeds with 0, each of the
// n next takes an int and succeeds with int+1. Per step (of the n).
template<typename Root>
double sequential(unsigned total, unsigned n) {
    ri::AsyncTool at{[]() {}, params()};
    int last = -1;
    auto round = [&]() {
        Root root(at);
        root.add([&](IAsyncSteps& asi) {
            asi.add([](IAsyncSteps& asi) { asi.success(0); });
            for (unsigned i = 0; i < n; ++i) {
                asi.add([&](IAsyncSteps& asi, int v) { last = v + 1; asi.success(v + 1); });
            }
        });
        root.execute();
        while (at.iterate().have_work) {}
        if (last != int(n)) { std::fprintf(stderr, "sequential: %d != %u\n", last, n); std::abort(); }
    };
    for (int i = 0; i < 16; ++i) round();
    unsigned rounds = total / n;
    auto t0 = Clock::now();
    for (unsigned r = 0; r < rounds; ++r) round();
    return since(t0, double(rounds) * n);
}

// Turn: AsyncTool immediate(empty) + iterate(). Per turn.
double turn(unsigned count) {
    ri::AsyncTool at{[]() {}, params()};
    unsigned ran = 0;
    for (int i = 0; i < 1000; ++i) { at.immediate([&]() { ++ran; }); at.iterate(); }
    auto t0 = Clock::now();
    for (unsigned i = count; i > 0; --i) {
        at.immediate([&]() { ++ran; });
        at.iterate();
    }
    double r = since(t0, count);
    if (ran != count + 1000) std::abort();
    return r;
}

// EmptyIteration: iterate() with nothing to do. Per iteration.
double empty_iteration(unsigned count) {
    ri::AsyncTool at{[]() {}, params()};
    unsigned busy = 0;
    auto t0 = Clock::now();
    for (unsigned i = count; i > 0; --i) busy += at.iterate().have_work;
    double r = since(t0, count);
    if (busy) std::abort();
    return r;
}

// Simple (the reference's Simple_bench), and the same with its step inside an
// uncontended ri::Mutex (asi.sync). Per op.
template<typename Root, bool WithMutex>
double simple(unsigned count) {
    ri::AsyncTool at{[]() {}, params()};
    ri::Mutex mtx;
    auto t0 = Clock::now();
    for (; count > 0; --count) {
        Root asi(at);
        if (WithMutex) asi.sync(mtx, [](IAsyncSteps&) {});
        else asi.add([](IAsyncSteps&) {});
        asi.execute();
        while (at.iterate().have_work) {}
    }
    return 0 + since(t0, 1);
}

int main(int argc, char** argv) {
    const char* only = argc > 1 ? argv[1] : "";
    if (argc > 2) { unsigned n = std::atoi(argv[2]); std::printf("Sequential/AsyncSteps n=%u: %.2f ns/step\n", n, sequential<ri::AsyncSteps>(1000000, n)); std::printf("Sequential/NitroSteps n=%u: %.2f ns/step\n", n, sequential<Nitro<255>>(1000000, n)); return 0; }
    auto want = [&](const char* n) { return !*only || std::strstr(n, only) || (!std::strcmp(only, "-") && !std::strstr(n, "Sequential")); };
    const unsigned M = 1000000;
    // Sequential is run only when asked for by name (argv[1] = "Sequential"):
    // its timings were erratic (hundreds of ns to tens of us per step
    // depending on the chain length), see the report.
    if (!*only) only = "-";
    if (!std::strcmp(argv[argc > 1 ? 1 : 0], "all")) only = "";
    if (want("Sequential/AsyncSteps")) std::printf("Sequential/AsyncSteps: %.2f ns/step\n", sequential<ri::AsyncSteps>(4 * M, 1024));
    if (want("Sequential/NitroSteps")) std::printf("Sequential/NitroSteps: %.2f ns/step\n", sequential<Nitro<255>>(4 * M, 254));
    if (want("Turn")) std::printf("Turn/AsyncTool: %.2f ns/turn\n", turn(10 * M));
    if (want("EmptyIteration")) std::printf("EmptyIteration/AsyncTool: %.2f ns/iter\n", empty_iteration(20 * M));
    const unsigned S = 1 * M;
    if (want("Mutex/AsyncSteps")) {
        double a = simple<ri::AsyncSteps, false>(S) / S, b = simple<ri::AsyncSteps, true>(S) / S;
        std::printf("SimpleLoopIter/AsyncSteps: %.2f ns/op\nMutexSection/AsyncSteps: %.2f ns/op (+%.2f)\n", a, b, b - a);
    }
    if (want("Mutex/NitroSteps")) {
        double a = simple<Nitro<16>, false>(S) / S, b = simple<Nitro<16>, true>(S) / S; // MaxSteps<3> is too few for sync()
        std::printf("SimpleLoopIter/NitroSteps: %.2f ns/op\nMutexSection/NitroSteps: %.2f ns/op (+%.2f)\n", a, b, b - a);
    }
    return 0;
}
