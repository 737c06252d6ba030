module github.com/gocuda/cuda

go 1.26.0

require (
	github.com/ebitengine/purego v0.11.3
	golang.org/x/term v0.48.0
)

require golang.org/x/sys v0.50.0 // indirect
