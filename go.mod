module github.com/asyncsteps/asyncsteps

go 1.24

require golang.org/x/sys v0.33.0
