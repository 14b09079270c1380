module github.com/asyncsteps/asyncsteps/bench

go 1.24

require (
	github.com/asyncsteps/asyncsteps v0.0.0
	github.com/panjf2000/gnet/v2 v2.9.4
	github.com/redis/go-redis/v9 v9.22.0
	golang.org/x/sync v0.11.0
	golang.org/x/sys v0.33.0
	golang.org/x/time v0.8.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/panjf2000/ants/v2 v2.11.3 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)

replace github.com/asyncsteps/asyncsteps => ../
