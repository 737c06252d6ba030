//go:build cgo && !gocuda_purego

package driver

const wantBackend = "cgo"
