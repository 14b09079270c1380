# asyncsteps: the two commands a fresh machine (Go and gcc only) needs are
# `make bench` (the main job) and `make test`.

GO       ?= go
PKGS     := ./...
BENCHPKG := ./bench

.PHONY: all test vet race allocs benchcompile bench run profile fmt clean fuzz soak

all: test

# test: vet, the race-enabled test suite, the allocation tests again without
# the race detector (it makes sync.Pool drop items on purpose), and every
# benchmark once so that they keep compiling and running.
test: vet race allocs benchcompile

vet:
	$(GO) vet $(PKGS)
	cd bench && $(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo 'gofmt: files need formatting'; exit 1; }

race:
	$(GO) test -race -count=1 $(PKGS)
	cd bench && $(GO) test -race -count=1 ./...

allocs:
	$(GO) test -count=1 -run 'Alloc' $(PKGS)

benchcompile:
	$(GO) test -run '^$$' -bench . -benchtime=1x $(PKGS)
	cd bench && $(GO) test -run '^$$' -bench . -benchtime=1x ./...

# bench: the engine's scenarios beside the idiomatic goroutine peers, as one
# table (ns/op, allocs/op, ratio), the timer wheel against time.AfterFunc,
# then stepsd under loopback load beside a plain gnet handler and a
# goroutine-per-connection server (req/s, latency quantiles, RSS).
bench:
	cd bench && $(GO) run ./cmd/benchtable
	$(GO) test -run '^$$' -bench 'AddCancel' -benchmem ./timerwheel
	cd bench && $(GO) run ./cmd/loadbench

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

# run: the example server, stepsd, on 127.0.0.1:7070 (flags: make run ARGS='-reactors 2').
run:
	$(GO) run ./cmd/stepsd $(ARGS)

# profile: CPU and allocation profiles of the engine scenarios into profiles/.
profile:
	mkdir -p profiles
	$(GO) test -run '^$$' -bench 'Simple|Sequential|ParallelExternal|ParallelWaitLoop|Timeout' -benchmem \
		-cpuprofile profiles/engine.cpu.prof -memprofile profiles/engine.mem.prof \
		-o profiles/engine.test ./engine
	$(GO) tool pprof -top -nodecount=30 profiles/engine.test profiles/engine.cpu.prof

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -f profiles/*.prof profiles/*.test
