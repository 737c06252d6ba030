// Package nn is neural-network building blocks on the GPU, over package
// nd's arrays: normalisation, activations, embeddings, rotary position
// embeddings, masked softmax, cross-entropy, dropout and scaled dot-product
// attention, each a kernel of its own (compute.RawKernel) that reads and
// writes float32, float16 or bfloat16 arrays and accumulates in float32.
//
// Every function queues its work on its first array's stream and, as nd's
// operations, allocates its result in stream order.
package nn
