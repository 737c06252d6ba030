package cuda

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/gocuda/cuda/internal/driver"
)

// ClusterPolicy is how a launch's thread block clusters are spread over
// the device (CUclusterSchedulingPolicy).
type ClusterPolicy int

const (
	// ClusterPolicyDefault leaves the placement to the driver.
	ClusterPolicyDefault ClusterPolicy = 0
	// ClusterPolicySpread spreads the clusters over the device's
	// multiprocessors.
	ClusterPolicySpread ClusterPolicy = 1
	// ClusterPolicyLoadBalancing lets the device put clusters where there
	// is room, which may place several on the same multiprocessors.
	ClusterPolicyLoadBalancing ClusterPolicy = 2
)

func (p ClusterPolicy) String() string {
	switch p {
	case ClusterPolicyDefault:
		return "default"
	case ClusterPolicySpread:
		return "spread"
	case ClusterPolicyLoadBalancing:
		return "load balancing"
	}
	return fmt.Sprintf("ClusterPolicy(%d)", int(p))
}

// maxLaunchAttributes is how many attributes one launch sets at most:
// cooperative, cluster shape, cluster policy, priority, programmatic
// dependent launch.
const maxLaunchAttributes = 5

// hasAttributes reports whether cfg asks for more than cuLaunchKernel
// launches.
func (cfg *LaunchConfig) hasAttributes() bool {
	return cfg.Cooperative || cfg.Cluster != (Dim3{}) || cfg.ClusterPolicy != ClusterPolicyDefault || cfg.Priority != 0 || cfg.ProgrammaticDependent
}

// checkShape checks the attributes that need no driver call against the
// grid and returns the cluster's shape with Y and Z made 1 (the zero Dim3
// for no clusters).
func (cfg *LaunchConfig) checkShape(op string, grid Dim3) (Dim3, error) {
	if cfg.ClusterPolicy < ClusterPolicyDefault || cfg.ClusterPolicy > ClusterPolicyLoadBalancing {
		return Dim3{}, errorf(op, ErrInvalidValue, "cluster policy %d: want ClusterPolicyDefault, ClusterPolicySpread or ClusterPolicyLoadBalancing", int(cfg.ClusterPolicy))
	}
	if cfg.Priority < math.MinInt32 || cfg.Priority > math.MaxInt32 {
		return Dim3{}, errorf(op, ErrInvalidValue, "priority %d out of range", cfg.Priority)
	}
	if cfg.Cluster == (Dim3{}) {
		if cfg.ClusterPolicy != ClusterPolicyDefault {
			return Dim3{}, errorf(op, ErrInvalidValue, "cluster policy %v without a Cluster shape", cfg.ClusterPolicy)
		}
		return Dim3{}, nil
	}
	c := cfg.Cluster.norm()
	if c.X <= 0 || c.Y <= 0 || c.Z <= 0 || c.X > math.MaxUint32 || c.Y > math.MaxUint32 || c.Z > math.MaxUint32 {
		return Dim3{}, errorf(op, ErrInvalidValue, "cluster %v: every dimension must be from 1 (Y and Z may be 0, meaning 1, when X is set)", cfg.Cluster)
	}
	if grid.X%c.X != 0 || grid.Y%c.Y != 0 || grid.Z%c.Z != 0 {
		return Dim3{}, errorf(op, ErrInvalidValue, "grid %v is not a whole number of clusters %v: each grid dimension must be a multiple of the cluster's", grid, c)
	}
	return c, nil
}

// checkAttributes checks what the device must offer for cfg's attributes,
// with the context bound and the module held: clusters and cooperative
// launches where the device has them, a cooperative grid the device
// holds at once, a priority in the context's range.
func (f *Function) checkAttributes(op string, cfg *LaunchConfig, grid, block Dim3) error {
	dev := f.mod.ctx.dev
	if cfg.Cluster != (Dim3{}) {
		if err := f.needAttribute(op, AttrClusterLaunch, "thread block clusters, which need compute capability 9.0 or later"); err != nil {
			return err
		}
	}
	if cfg.Cooperative {
		if err := f.needAttribute(op, AttrCooperativeLaunch, "cooperative launches"); err != nil {
			return err
		}
		threads, err := blockThreads(op, block)
		if err != nil {
			return err
		}
		limit, per, sms, err := f.cooperativeLimit(op, threads, cfg.SharedMemBytes)
		if err != nil {
			return err
		}
		// A dimension above limit is too many blocks; with none above,
		// limit (some thousands at most) cubed fits an int.
		if grid.X > limit || grid.Y > limit || grid.Z > limit || grid.X*grid.Y*grid.Z > limit {
			return errorf(op, ErrInvalidValue, "cooperative launch of kernel %s: grid %v has more blocks than %v holds at once, %d (%d a multiprocessor × %d multiprocessors, for blocks of %d threads and %d bytes of dynamic shared memory)",
				f.name, grid, dev, limit, per, sms, block.X*block.Y*block.Z, cfg.SharedMemBytes)
		}
	}
	if cfg.ProgrammaticDependent {
		cc, err := f.mod.ctx.computeCapability()
		if err != nil {
			return err
		}
		if cc.Major < 9 {
			return errorf(op, ErrNotSupported, "%v (compute capability %d.%d) cannot start a kernel before the previous one ends (programmatic dependent launch needs 9.0 or later)", dev, cc.Major, cc.Minor)
		}
	}
	if cfg.Priority != 0 {
		var least, greatest int32
		if err := check(op, driver.CtxGetStreamPriorityRange(f.mod.ctx.handle, &least, &greatest)); err != nil {
			return err
		}
		if p := cfg.Priority; p > int(least) || p < int(greatest) {
			return errorf(op, ErrInvalidValue, "priority %d outside the context's range, %d (least) to %d (greatest)", p, least, greatest)
		}
	}
	return nil
}

// blockThreads returns the threads of a block whose dimensions are from 1
// to 2^32-1, or an error for more than an occupancy query takes, 2^31-1.
func blockThreads(op string, block Dim3) (int, error) {
	threads := uint64(block.X)
	for _, d := range []int{block.Y, block.Z} {
		if threads *= uint64(d); threads > math.MaxInt32 {
			break // below 2^31 × 2^32: no wrap
		}
	}
	if threads > math.MaxInt32 {
		if block.Z == 1 {
			return 0, errorf(op, ErrInvalidValue, "block %v has %d threads, more than a block may have", block, threads)
		}
		return 0, errorf(op, ErrInvalidValue, "block %v has more than %d threads, more than a block may have", block, math.MaxInt32)
	}
	return int(threads), nil
}

// needAttribute returns ErrNotSupported, naming what, unless the kernel's
// device has the attribute a.
func (f *Function) needAttribute(op string, a Attribute, what string) error {
	dev := f.mod.ctx.dev
	v, err := dev.Attribute(a)
	if err != nil {
		return err
	}
	if v == 0 {
		cc, _ := dev.ComputeCapability()
		return errorf(op, ErrNotSupported, "%v (compute capability %d.%d) cannot run %s", dev, cc.Major, cc.Minor, what)
	}
	return nil
}

// cooperativeLimit returns how many blocks of the shape a cooperative
// launch may have: per a multiprocessor times sms of them.
func (f *Function) cooperativeLimit(op string, threads, sharedMem int) (limit, per, sms int, err error) {
	if per, err = f.maxActiveBlocks(op, threads, sharedMem); err != nil {
		return 0, 0, 0, err
	}
	if sms, err = f.mod.ctx.dev.MultiprocessorCount(); err != nil {
		return 0, 0, 0, err
	}
	return per * sms, per, sms, nil
}

// MaxCooperativeBlocks returns the most blocks of blockSize threads, each
// with dynamicSharedMem bytes of dynamic shared memory, that a
// cooperative launch of the kernel may have: as many as the device holds
// at once (MaxActiveBlocks times the multiprocessors).
func (f *Function) MaxCooperativeBlocks(blockSize, dynamicSharedMem int) (int, error) {
	const op = "Function.MaxCooperativeBlocks"
	if err := f.valid(op); err != nil {
		return 0, err
	}
	if err := checkOccupancyArgs(op, blockSize, dynamicSharedMem); err != nil {
		return 0, err
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	limit, _, _, err := f.cooperativeLimit(op, blockSize, dynamicSharedMem)
	return limit, err
}

// MaxActiveClusters returns how many clusters of cfg.Cluster's shape, of
// blocks of cfg.Block with cfg.SharedMemBytes each, the device runs at
// once (cuOccupancyMaxActiveClusters): 0 when such a cluster does not fit.
// cfg.Grid and cfg.Stream are not needed.
func (f *Function) MaxActiveClusters(cfg LaunchConfig) (int, error) {
	const op = "Function.MaxActiveClusters"
	if err := f.valid(op); err != nil {
		return 0, err
	}
	if cfg.Cluster == (Dim3{}) {
		return 0, errorf(op, ErrInvalidValue, "no Cluster shape in the configuration")
	}
	block := cfg.Block.norm()
	if block.X <= 0 || block.Y <= 0 || block.Z <= 0 || block.X > math.MaxUint32 || block.Y > math.MaxUint32 || block.Z > math.MaxUint32 {
		return 0, errorf(op, ErrInvalidValue, "block %v: every dimension must be from 1 to %d", block, uint32(math.MaxUint32))
	}
	threads, err := blockThreads(op, block)
	if err != nil {
		return 0, err
	}
	if err := checkOccupancyArgs(op, threads, cfg.SharedMemBytes); err != nil {
		return 0, err
	}
	// The driver needs a grid of whole clusters: one cluster.
	cluster, err := cfg.checkShape(op, cfg.Cluster.norm())
	if err != nil {
		return 0, err
	}
	if err := f.mod.enter(op); err != nil {
		return 0, err
	}
	defer f.mod.leave()
	if err := f.needAttribute(op, AttrClusterLaunch, "thread block clusters, which need compute capability 9.0 or later"); err != nil {
		return 0, err
	}
	pb := paramBlocks.Get().(*paramBlock)
	defer paramBlocks.Put(pb)
	dims := [6]uint32{uint32(cluster.X), uint32(cluster.Y), uint32(cluster.Z), uint32(block.X), uint32(block.Y), uint32(block.Z)}
	cfg.Stream = nil
	var n int32
	if err := check(op, driver.OccupancyMaxActiveClusters(f.mod.ctx.handle, &n, f.handle, pb.launchConfig(&cfg, dims, cluster))); err != nil {
		err.(*Error).Detail = fmt.Sprintf("kernel %s, cluster %v, block %v", f.name, cluster, block)
		return 0, err
	}
	return int(n), nil
}

// launchConfig fills pb's CUlaunchConfig for cfg, with the grid and block
// dims and the cluster shape checked before, and returns its address.
func (pb *paramBlock) launchConfig(cfg *LaunchConfig, dims [6]uint32, cluster Dim3) unsafe.Pointer {
	n := 0
	add := func(id int32, values ...uint32) {
		a := &pb.attrs[n]
		*a = driver.LaunchAttribute{ID: id}
		copy(a.Value[:], values)
		n++
	}
	if cfg.Cooperative {
		add(driver.LaunchAttributeCooperative, 1)
	}
	if cluster != (Dim3{}) {
		add(driver.LaunchAttributeClusterDimension, uint32(cluster.X), uint32(cluster.Y), uint32(cluster.Z))
	}
	if cfg.ClusterPolicy != ClusterPolicyDefault {
		add(driver.LaunchAttributeClusterSchedulingPolicy, uint32(cfg.ClusterPolicy))
	}
	if cfg.Priority != 0 {
		add(driver.LaunchAttributePriority, uint32(int32(cfg.Priority)))
	}
	if cfg.ProgrammaticDependent {
		add(driver.LaunchAttributeProgrammaticStreamSerialization, 1)
	}
	var stream driver.Stream
	if cfg.Stream != nil {
		stream = cfg.Stream.handle
	}
	pb.ex = driver.LaunchConfig{
		GridDimX: dims[0], GridDimY: dims[1], GridDimZ: dims[2],
		BlockDimX: dims[3], BlockDimY: dims[4], BlockDimZ: dims[5],
		SharedMemBytes: uint32(cfg.SharedMemBytes),
		Stream:         stream,
		Attrs:          uintptr(unsafe.Pointer(&pb.attrs[0])),
		NumAttrs:       uint32(n),
	}
	return unsafe.Pointer(&pb.ex)
}

// attributeText describes cfg's attributes for an error, "" for none.
func (cfg *LaunchConfig) attributeText() string {
	s := ""
	if cfg.Cooperative {
		s += ", cooperative"
	}
	if cfg.Cluster != (Dim3{}) {
		s += fmt.Sprintf(", cluster %v", cfg.Cluster.norm())
	}
	if cfg.ClusterPolicy != ClusterPolicyDefault {
		s += fmt.Sprintf(", cluster policy %v", cfg.ClusterPolicy)
	}
	if cfg.Priority != 0 {
		s += fmt.Sprintf(", priority %d", cfg.Priority)
	}
	if cfg.ProgrammaticDependent {
		s += ", programmatic dependent"
	}
	return s
}
