package cuda_test

import (
	"fmt"
	"log"

	cuda "github.com/gocuda/cuda"
)

// clusterPTX is a kernel whose first thread of each block writes the
// block's rank in its thread block cluster, the cluster's index, the
// cluster's size and the block's index. In CUDA C (sm_90):
//
//	__global__ void cluster_info(unsigned *out) {
//		namespace cg = cooperative_groups;
//		if (threadIdx.x == 0) {
//			cg::cluster_group c = cg::this_cluster();
//			uint4 v = {c.block_rank(), blockIdx.x / c.dim_blocks().x, c.num_blocks(), blockIdx.x};
//			((uint4 *)out)[blockIdx.x] = v;
//		}
//	}
const clusterPTX = `
.version 7.8
.target sm_90
.address_size 64

.visible .entry cluster_info(.param .u64 out)
{
	.reg .pred %p;
	.reg .b32 %r<6>;
	.reg .b64 %rd<4>;

	mov.u32 %r0, %tid.x;
	setp.ne.u32 %p, %r0, 0;
	@%p bra DONE;
	ld.param.u64 %rd0, [out];
	cvta.to.global.u64 %rd0, %rd0;
	mov.u32 %r1, %cluster_ctarank;
	mov.u32 %r2, %clusterid.x;
	mov.u32 %r3, %cluster_nctarank;
	mov.u32 %r4, %ctaid.x;
	mul.wide.u32 %rd1, %r4, 16;
	add.u64 %rd2, %rd0, %rd1;
	st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
DONE:
	ret;
}
`

// A launch in thread block clusters of 4 blocks (compute capability 9.0
// and later): each block reads its rank in its cluster.
func ExampleLaunchConfig_cluster() {
	ctx, s, err := cuda.Open(0)
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	defer s.Close()
	mod, err := ctx.LoadModule([]byte(clusterPTX))
	if err != nil {
		log.Fatal(err) // a device before 9.0 cannot load sm_90 code
	}
	defer mod.Close()
	info, err := mod.Function("cluster_info")
	if err != nil {
		log.Fatal(err)
	}
	out, err := cuda.Alloc[uint32](ctx, 8*4)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Free()
	cfg := cuda.LaunchConfig{
		Grid:    cuda.Dim3{X: 8}, // a whole number of clusters
		Block:   cuda.Dim3{X: 32},
		Cluster: cuda.Dim3{X: 4},
		Stream:  s,
	}
	if err := info.Launch(cfg, out); err != nil {
		log.Fatal(err) // ErrNotSupported before compute capability 9.0
	}
	got := make([]uint32, 8*4)
	if err := out.CopyToHost(got); err != nil {
		log.Fatal(err)
	}
	for b := 0; b < 8; b += 3 {
		fmt.Printf("block %d: rank %d in cluster %d of %d blocks\n", got[4*b+3], got[4*b], got[4*b+1], got[4*b+2])
	}
	// Output:
	// block 0: rank 0 in cluster 0 of 4 blocks
	// block 3: rank 3 in cluster 0 of 4 blocks
	// block 6: rank 2 in cluster 1 of 4 blocks
}
