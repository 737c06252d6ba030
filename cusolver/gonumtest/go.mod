module github.com/gocuda/cuda/cusolver/gonumtest

go 1.25.0

require (
	github.com/gocuda/cuda v0.0.0
	gonum.org/v1/gonum v0.17.0
)

require github.com/ebitengine/purego v0.11.3 // indirect

replace github.com/gocuda/cuda => ../..
