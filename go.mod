module github.com/gocuda/cuda

go 1.26

require github.com/ebitengine/purego v0.11.3 // indirect
