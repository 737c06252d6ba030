package dl

// CUDADirs are /usr/local/cuda's folders, for the external tests.
var CUDADirs = cudaDirs
