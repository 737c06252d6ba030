// What the C reference programs share: stopping at the first failed driver
// call, and the clock they time with.
#ifndef CREF_H
#define CREF_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(x)                                                            \
	do {                                                                    \
		CUresult r_ = (x);                                                  \
		if (r_ != CUDA_SUCCESS) {                                           \
			fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
			exit(1);                                                        \
		}                                                                   \
	} while (0)

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

#endif
