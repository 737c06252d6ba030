// Package libs holds, in its tests, the fault sweep's and the zero-value
// tables' rows of the library packages (cublas, cufft, curand, nccl,
// nvrtc, safetensors), run by internal/sweep, so that package cuda's tests
// import nothing above the root. It has no code of its own.
package libs
