// Package nn is neural-network building blocks on the GPU, over package
// nd's arrays: normalisation, activations, embeddings, rotary position
// embeddings, masked softmax, cross-entropy, dropout and scaled dot-product
// attention, each a kernel of its own (compute.RawKernel) that reads and
// writes float32, float16 or bfloat16 arrays and accumulates in float32.
//
// Every function queues its work on its first array's stream and, as nd's
// operations, allocates its result in stream order.
//
// # Layers
//
// The layers take arrays of Float (float32, cuda.Float16, cuda.BFloat16):
//
//   - normalisation over the last axis: LayerNorm and RMSNorm, with
//     LayerNormBackward and RMSNormBackward (the gradients of the input,
//     the weight and the bias), and AddLayerNorm and AddRMSNorm, a
//     transformer's residual add and the norm after it in one pass;
//   - activations, element by element: GELU (erf), GELUTanh (GPT-2's),
//     SiLU, and SwiGLU of two arrays (silu(gate)·up, Llama's gate_proj
//     and up_proj kept apart);
//   - Embedding, rows of a table by int32 or int64 ids; RoPE, rotary
//     position embeddings in the rotate-half layout (GPT-NeoX's and
//     Hugging Face's Llama's), at a position offset for decoding;
//   - Softmax over the last axis, scaled, with a Mask: causal (aligned to
//     the bottom right) or of lengths per batch row, or both;
//   - CrossEntropy of logits [N, V] and int targets, the mean loss with an
//     ignore index, and CrossEntropyBackward (the gradient of the logits);
//   - Dropout, drawn by a counter-based hash of a seed and an offset, so
//     that DropoutBackward draws the same mask again, and DropoutMask
//     shows it.
//
// Most have an Into form that writes into an array given (the input
// itself for in place). An output that shares memory with an input in
// any other way (a view of it that starts elsewhere, a view of the sum
// AddLayerNormInto also writes, the weight, the keys of attention) is
// refused with an error: arrays are compared by their memory, not as
// pointers.
//
// The arrays given to a layer must be contiguous, row-major, as a fresh
// array is: the layers read rows in memory order, 16 bytes at a time where
// the row's length and the arrays' alignment allow, and make no hidden
// copies. A view that is contiguous (a Reshape, a Slice of whole rows,
// at any element) is taken as it is; a transposed view, or a slice that
// is not contiguous, is refused with an error that says so: its
// Contiguous makes a copy a layer takes. (Attention's and the KV cache's
// inputs are the exception: they take views with strides, so that the
// heads of a packed QKV projection are read where they lie.) Every array
// of a call must be on one stream.
//
// Scalars that shape the computation (eps, scales) are float32 whatever
// the element type, as the layers compute in float32 (cuBLAS's α and β
// are float64 for the same reason).
//
// A row is taken by a warp (rows of up to 1024 elements) or a whole block,
// its sums joined by warp shuffles, then across the block's warps in a
// fixed order: a layer gives the same bits every run, and the backward
// passes' sums over rows (the gradients of a weight) are made in chunks
// joined in order, with no atomics.
//
// # Attention
//
// Attention and AttentionInto compute softmax(Q·Kᵀ·scale)·V for q of
// [B, H, Sq, D] and k, v of [B, Hkv, Sk, D] (or the [B, S, H, D] layout
// of a projection's output, LayoutBSHD), causal or not, Hkv dividing H
// (grouped-query): one fused kernel in the FlashAttention manner that
// never holds an Sq x Sk matrix, on the tensor cores for the halves on
// sm_80 and later. A KVCache holds a layer's keys and values for
// decoding, its length on the device, so that one decoding step (Append,
// then AttentionInto) is captured once as a CUDA graph and replayed at
// every position (ExampleKVCache_graph).
//
// The halves' attention runs cuDNN's fused attention where cuDNN is found
// and takes the shape, and nn's own kernel wherever it does not or fails,
// and for a KV cache's decoding steps (EnvAttention says why);
// GOCUDA_NN_ATTENTION=own runs nn's own kernel always.
//
// On error a function returns nil arrays and an *Error that wraps
// cuda.ErrInvalidValue (a nil, zero or non-contiguous array where a
// contiguous one is needed, shapes that
// do not agree, a bad scalar), cuda.ErrClosed (a freed array) or the error
// of the call beneath.
package nn
