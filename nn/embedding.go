package nn

import (
	cuda "github.com/gocuda/cuda"
	"github.com/gocuda/cuda/nd"
)

// embeddingKernels: a row of the table copied for each id, a warp a row,
// 16 bytes at a time where the table allows.
var embeddingKernels = &layerSource{body: `
template <int V>
__device__ __forceinline__ void nn_embedding_run(const nn_t* table, const void* ids, int wide, nn_t* out, long long n, long long vocab, int dim) {
	typedef nn_vec<nn_t, V> vec;
	const long long r = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	const int lane = threadIdx.x % 32, m = dim / V;
	if (r >= n) return;
	const long long id = wide ? ((const long long*)ids)[r] : (long long)((const int*)ids)[r];
	vec* o = (vec*)(out + r * dim);
	if (id < 0 || id >= vocab) {
		vec z;
		#pragma unroll
		for (int k = 0; k < V; k++) z.v[k] = nn_st(0.0f);
		for (int j = lane; j < m; j += 32) o[j] = z;
		return;
	}
	const vec* row = (const vec*)(table + id * dim);
	for (int j = lane; j < m; j += 32) o[j] = row[j];
}
#define NN_EMB_V (16 / (int)sizeof(nn_t))
extern "C" __global__ void nn_embedding_NN_SUFFIX(const nn_t* table, const void* ids, int wide, nn_t* out, long long n, long long vocab, int dim) {
	if (dim % NN_EMB_V == 0 && nn_aligned(table) && nn_aligned(out)) nn_embedding_run<NN_EMB_V>(table, ids, wide, out, n, vocab, dim);
	else nn_embedding_run<1>(table, ids, wide, out, n, vocab, dim);
}
`}

// Embedding returns the rows of table [V, D] that ids name: an array of
// ids' shape and one more axis, D long, as PyTorch's F.embedding(ids,
// table). An id out of [0, V) gives a row of zeros (PyTorch stops at a
// device assertion; a kernel cannot return an error). ids (int32 or
// int64, any shape) and table must be contiguous and on one stream.
func Embedding[T Float, I Index](table *nd.Array[T], ids *nd.Array[I]) (*nd.Array[T], error) {
	const op = "Embedding"
	if _, _, err := embeddingArgs(op, table, ids); err != nil {
		return nil, err
	}
	shape := append(ids.Shape(), table.Shape()[1])
	out, err := nd.Empty[T](table.Stream(), shape...)
	if err != nil {
		return nil, wrap(op, err)
	}
	if err := embeddingInto(op, out, table, ids); err != nil {
		layerDrop(out)
		return nil, err
	}
	return out, nil
}

// EmbeddingInto is Embedding writing into dst, of ids' shape and table's
// row length.
func EmbeddingInto[T Float, I Index](dst, table *nd.Array[T], ids *nd.Array[I]) error {
	return embeddingInto("EmbeddingInto", dst, table, ids)
}

func embeddingArgs[T Float, I Index](op string, table *nd.Array[T], ids *nd.Array[I]) (*cuda.DeviceBuffer[T], *cuda.DeviceBuffer[I], error) {
	tb, err := layerBuffer(op, "table", table, nil)
	if err != nil {
		return nil, nil, err
	}
	if table.Ndim() != 2 {
		return nil, nil, errorf(op, cuda.ErrInvalidValue, "table has shape %v: want [V, D], V rows of D", table.Shape())
	}
	ib, err := layerBuffer(op, "ids", ids, table.Stream())
	if err != nil {
		return nil, nil, err
	}
	return tb, ib, nil
}

func embeddingInto[T Float, I Index](op string, dst, table *nd.Array[T], ids *nd.Array[I]) error {
	tb, ib, err := embeddingArgs(op, table, ids)
	if err != nil {
		return err
	}
	s := table.Stream()
	db, err := layerBuffer(op, "dst", dst, s)
	if err != nil {
		return err
	}
	vocab, dim := table.Shape()[0], table.Shape()[1]
	if err := layerSameShape(op, "dst", dst.Shape(), append(ids.Shape(), dim)); err != nil {
		return err
	}
	// rows are copied from anywhere in the table: no in place
	if err := layerAliased(op, "dst", layerSpanOf(db), layerIn{"table", layerSpanOf(tb), false}, layerIn{"ids", layerSpanOf(ib), false}); err != nil {
		return err
	}
	wide := int32(0)
	if ids.Dtype() == "int64" {
		wide = 1
	}
	n := ids.Size()
	if dim == 0 {
		return nil
	}
	const warps = 4
	return layerLaunch[T](op, embeddingKernels, "nn_embedding", s, (n+warps-1)/warps, 32*warps, tb, ib, wide, db, int64(n), int64(vocab), int32(dim))
}
