# asyncsteps: the two commands a fresh machine (Go and gcc only) needs are
# `make bench` (the main job) and `make test`.

GO       ?= go
PKGS     := ./...
BENCHPKG := ./bench

.PHONY: all test vet lint race fallback debug memory allocs benchcompile abi cabi ctest bench run profile fmt clean fuzz soak devkit redis-deps pgo

# STATICCHECK is run through go run at a pinned version, so a fresh machine
# needs nothing installed: the first run downloads and builds it (once,
# then cached). v0.8.2 is the latest release; it supports Go 1.26.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

all: test

# test: vet, the race-enabled test suite, the allocation tests again without
# the race detector (it makes sync.Pool drop items on purpose), and every
# benchmark once so that they keep compiling and running.
test: redis-deps vet lint race fallback debug allocs memory benchcompile abi ctest ctest-asan

# redis-deps: redis-server, redis-tools (redis-cli, redis-benchmark) and
# nutcracker (twemproxy), the Debian packages of the real-client tests
# (bench/redistest) and of the redis-benchmark rows of make bench. Installed
# with apt-get where one is missing and we are root; otherwise it says so,
# and the tests and rows that need them skip with that message.
REDIS_PROGS := redis-server redis-cli redis-benchmark nutcracker
REDIS_PKGS  := redis-server redis-tools nutcracker
redis-deps:
	@missing=""; for p in $(REDIS_PROGS); do command -v $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "redis-deps: missing$$missing: apt-get install $(REDIS_PKGS)"; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -q $(REDIS_PKGS) >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $(REDIS_PKGS) >/dev/null; } || \
		echo "redis-deps: apt-get failed: the tests and bench rows that need$$missing skip"; \
	else echo "redis-deps:$$missing not installed, and not root with apt-get: the tests and bench rows that need them skip"; fi

vet:
	$(GO) vet $(PKGS)
	cd bench && $(GO) vet ./...
	@# the library and its tests build elsewhere too (*_other.go; tests that need Linux say so); abi is cgo, bench Linux-only
	GOOS=darwin $(GO) vet $$($(GO) list ./... | grep -v '/abi')
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo 'gofmt: files need formatting'; exit 1; }

lint:
	$(GO) run $(STATICCHECK) $(PKGS)
	cd bench && $(GO) run $(STATICCHECK) ./...

race:
	$(GO) test -race -count=1 $(PKGS)
	cd bench && $(GO) test -race -count=1 ./...

# fallback: the real-reactor suites again with every loop forced through
# gnet's Polling (the asyncsteps_polling build tag), the path a gnet
# upgrade that moved the Poller's private epoll field would select; the
# default build's TestRunTakesTheFastPath fails in that case.
fallback:
	$(GO) test -tags asyncsteps_polling -count=1 ./reactor ./engine ./netio ./stepsd ./syncprim

# debug: the engine's tests in the asyncsteps_debug build, where a released
# root is never reused and any call on one panics with its name.
debug:
	$(GO) test -tags asyncsteps_debug -count=1 ./engine

# memory: stepsd's burst-memory check (RSS back within 2x of its start
# within 10 s of a 20,000-request burst, no forced GC), without the race
# detector, whose shadow memory would swamp it.
memory:
	$(GO) test -count=1 -run '^TestMemoryReturnsAfterBurst$$' -v ./stepsd

allocs:
	$(GO) test -count=1 -run 'Alloc' $(PKGS)
	cd bench && $(GO) test -count=1 -run 'CppAllocs' .

benchcompile:
	$(GO) test -run '^$$' -bench . -benchtime=1x $(PKGS)
	cd bench && $(GO) test -run '^$$' -bench . -benchtime=1x ./...

# abi: the cgo package again with the cgo pointer rules checked on every
# call (GOEXPERIMENT=cgocheck2 rebuilds the runtime once, then is cached).
abi:
	GOEXPERIMENT=cgocheck2 $(GO) vet ./abi/...
	GOEXPERIMENT=cgocheck2 $(GO) test -count=1 ./abi/...

# cabi: the C library, build/libasyncsteps.a, for `gcc prog.c -Iabi
# build/libasyncsteps.a -lpthread`.
cabi:
	mkdir -p build
	$(GO) build -buildmode=c-archive -o build/libasyncsteps.a ./abi/cabi

# ctest: the C test programs (abi_ctest; wrapper_ctest, the C++ FutoIn
# wrapper's calls) and the C example, through the two headers only.
ctest: cabi
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 -g -Iabi -o build/abi_ctest abi/ctests/abi_ctest.c build/libasyncsteps.a -lpthread
	./build/abi_ctest
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 -g -Iabi -o build/wrapper_ctest abi/ctests/wrapper_ctest.c build/libasyncsteps.a -lpthread
	./build/wrapper_ctest
	$(CC) -std=c11 -Wall -Wextra -Werror -O1 -Iabi -o build/example abi/examples/example.c build/libasyncsteps.a -lpthread
	./build/example > /dev/null

# ctest-valgrind (optional, not part of test): abi_ctest under valgrind's
# memcheck, with a copy of the library whose C parts carry DWARF 4 debug
# info (valgrind 3.19 cannot read gcc 12's DWARF 5). Errors in Go code are
# suppressed by abi/ctests/valgrind.supp (it says why); errors in C count.
# Prints a skip message when valgrind is not installed.
ctest-valgrind:
	@if command -v valgrind >/dev/null 2>&1; then \
		set -e; mkdir -p build; \
		CGO_CFLAGS='-O2 -g -gdwarf-4' $(GO) build -buildmode=c-archive -o build/libasyncsteps-vg.a ./abi/cabi; \
		$(CC) -std=c11 -Wall -Wextra -Werror -O1 -gdwarf-4 -Iabi -o build/abi_ctest-vg abi/ctests/abi_ctest.c build/libasyncsteps-vg.a -lpthread; \
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
			--suppressions=abi/ctests/valgrind.supp ./build/abi_ctest-vg; \
		$(CC) -std=c11 -Wall -Wextra -Werror -O1 -gdwarf-4 -Iabi -o build/wrapper_ctest-vg abi/ctests/wrapper_ctest.c build/libasyncsteps-vg.a -lpthread; \
		valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite --show-leak-kinds=definite \
			--suppressions=abi/ctests/valgrind.supp ./build/wrapper_ctest-vg; \
	else echo "ctest-valgrind: valgrind not installed, skipped"; fi

# ctest-asan (part of test): the library built with go build
# -asan and abi_ctest with -fsanitize=address, so that ASan checks the C
# memory the bridge and the test share (images, stack(), values). Prints a
# skip message when the C compiler has no AddressSanitizer runtime.
ctest-asan:
	@if printf 'int main(void){return 0;}\n' | $(CC) -fsanitize=address -x c -o /dev/null - >/dev/null 2>&1; then \
		set -e; mkdir -p build; \
		$(GO) build -asan -buildmode=c-archive -o build/libasyncsteps-asan.a ./abi/cabi; \
		$(CC) -std=c11 -Wall -Wextra -Werror -O1 -g -fsanitize=address -fno-omit-frame-pointer -Iabi -o build/abi_ctest-asan abi/ctests/abi_ctest.c build/libasyncsteps-asan.a -lpthread; \
		./build/abi_ctest-asan; \
		$(CC) -std=c11 -Wall -Wextra -Werror -O1 -g -fsanitize=address -fno-omit-frame-pointer -Iabi -o build/wrapper_ctest-asan abi/ctests/wrapper_ctest.c build/libasyncsteps-asan.a -lpthread; \
		./build/wrapper_ctest-asan; \
	else echo "ctest-asan: $(CC) has no AddressSanitizer runtime, skipped"; fi

.PHONY: ctest-valgrind ctest-asan

# bench: the benchmark harness (bench/cmd/benchtable): every scenario of the
# engine, the reactor, syncprim, abi and the server beside its Go peer, real
# reactors pinned one per CPU, as one table; the runs are saved as
# profiles/bench-<time>.txt (benchstat) and .json. 4-5 minutes on 2 CPUs.
# Flags: make bench BENCHFLAGS='-scenarios engine/ -count 5' (-h lists them);
# make bench BENCHFLAGS=-quick is a CI-sized run (about a minute).
BENCHFLAGS ?=
bench: redis-deps
	cd bench && $(GO) run ./cmd/benchtable $(BENCHFLAGS)

# devkit: a self-contained kit for measuring on a bigger machine without Go
# (scripts/devkit.sh): static benchtable and loadbench and the go.mod stubs
# benchtable looks for, in the git-ignored .devkit/ (DEVKIT=dir elsewhere).
# scripts/devkit-run.sh .devkit OUT runs every many-core table there (the
# reactor and syncprim rows, the idle group, loadbench at 1-8 reactors);
# by hand, the reactor and syncprim rows at 16, 8 and 2 CPUs, from .devkit/bench:
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 16 -count 3 -o -
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 8 -count 3 -o -
#   ../benchtable -scenarios 'reactor/|syncprim/' -cpus 2 -count 3 -o -
# loadbench is there twice: `loadbench`, built with the PGO profile
# PGO (default profiles/pgo/loadbench.pgo, from make pgo; PGO=off for none),
# and `loadbench-nopgo`, without; AB=1 scripts/devkit-run.sh runs both in
# the same rounds (loadbench -exe-b).
# BASE=<rev> also builds that commit's kit, without PGO, into
# $(DEVKIT)/base (scripts/devkit-base.sh): devkit-run.sh then alternates
# its benchtable with the kit's, and AB=base sets its servers beside the
# kit's in the same loadbench rounds.
DEVKIT ?= .devkit
PGO    ?= profiles/pgo/loadbench.pgo
BASE   ?=
devkit:
	GO=$(GO) PGO=$(PGO) ./scripts/devkit.sh $(DEVKIT)
	@if [ -n "$(BASE)" ]; then GO=$(GO) ./scripts/devkit-base.sh $(BASE) $(DEVKIT)/base; fi

# pgo: regenerate profiles/pgo/loadbench.pgo, the PGO profile of
# cmd/loadbench (stepsd, the gnet and net peers, the load generator), from
# a fixed workload: a -pgo=off loadbench, one reactor, the full matrix, 3
# rounds of 2s per cell and server (about 2.5 minutes), each server's child
# and the generator profiled alike and given equal weight
# (scripts/pgo.sh says why; profiles/pgo/loadbench.pgo.txt says how and
# where the last one was taken). Not default.pgo: make test and make bench
# stay without PGO; make devkit applies it.
pgo:
	GO=$(GO) ./scripts/pgo.sh

# fuzz: each fuzz target for FUZZTIME (default 1m; make fuzz FUZZTIME=10m).
# make test runs their seed corpora (f.Add and testdata/fuzz) as plain tests.
FUZZTIME ?= 1m
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzModel$$' -fuzztime $(FUZZTIME) ./engine
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./stepsd
	$(GO) test -run '^$$' -fuzz '^FuzzFraming$$' -fuzztime $(FUZZTIME) ./netio

# soak: the server under a mixed load beside mixed flows for SOAKTIME
# (default 2m), sampling heap, RSS, goroutines, descriptors and engine
# occupancy; prints the series and fails if any grows. Not part of test.
SOAKTIME ?= 2m
soak:
	STEPSD_SOAK=$(SOAKTIME) $(GO) test -count=1 -run '^TestSoak$$' -v -timeout 0 ./stepsd

# run: the example server, stepsd, on 127.0.0.1:7070 (flags: make run ARGS='-reactors 2');
# then `redis-cli -p 7070 set a b`, or `redis-benchmark -p 7070 -q`: its
# whole default suite (INCR, lists, sets, hashes, sorted sets, MSET; stepsd
# has Redis's value types). Stop it with Ctrl-C (SIGINT): requests in
# flight finish first.
run:
	@echo "make run: stepsd (go run ./cmd/stepsd $(ARGS)); try redis-cli -p 7070 set a b, redis-benchmark -p 7070 -q; Ctrl-C stops it"
	$(GO) run ./cmd/stepsd $(ARGS)

# profile: CPU, heap, allocation, mutex and block profiles of ours in every
# scenario of the harness, one process and one set of files per scenario
# (profiles/<suite>-<scenario>[-<driver>].<kind>.prof), then the top of each
# CPU profile. profiles/README.md says how to read them and what they show.
# PROFILEFLAGS='-scenarios engine/' narrows it.
PROFILEFLAGS ?=
profile:
	cd bench && $(GO) run ./cmd/benchtable -profile ../profiles $(PROFILEFLAGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -f profiles/*.prof profiles/*.test profiles/bench-*.txt profiles/bench-*.json
	rm -rf build .devkit
