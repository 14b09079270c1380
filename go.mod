module github.com/asyncsteps/asyncsteps

go 1.24

require (
	github.com/panjf2000/gnet/v2 v2.9.4
	github.com/valyala/bytebufferpool v1.0.0
	golang.org/x/sys v0.33.0
)

require (
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.0 // indirect
	gopkg.in/natefinch/lumberjack.v2 v2.2.1 // indirect
)
