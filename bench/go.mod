module github.com/asyncsteps/asyncsteps/bench

go 1.24

require github.com/asyncsteps/asyncsteps v0.0.0

require golang.org/x/sys v0.33.0 // indirect

replace github.com/asyncsteps/asyncsteps => ../
