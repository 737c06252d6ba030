#!/usr/bin/env bash
# On the GPU machine, after scripts/gpu-build.sh here: the performance runs
# docs/performance.md quotes, each writing its table into OUTDIR (raw
# outputs stay beside them). Most run the research benchmarks, which
# gpu-build.sh's test binaries carry (-tags gocuda_research); the copy
# engine's own (BenchmarkParallelCopy, BenchmarkCopyParts) are in
# internal/hostcopy's binary:
#
#   copy      the Go copy benchmarks beside the C reference (bench/cref/copybench.c),
#             three interleaved rounds (the pageable path varies run to run, in C
#             as in Go), medians: OUTDIR/copy.md
#   staging   the staging benchmarks beside the plain copy of the same run, and
#             Upload/Download paired with it transfer by transfer: OUTDIR/staging.md
#   shape     the pipeline's chunk size and workers (BenchmarkPipelineShape):
#             OUTDIR/shape.txt
#   paired    Upload/Download against the plain copy and the plain copy against
#             the bare driver call, transfer by transfer, purego and cgo:
#             OUTDIR/paired-*.txt
#   kernels   the call-overhead (trivial call, 4-byte copies), launch and SAXPY
#             benchmarks, purego and cgo, beside bench/cref/kernelbench.c, three
#             interleaved rounds, medians: OUTDIR/kernels.md
#   calibrate gocuda calibrate: OUTDIR/calibrate.txt
#   split     the pipeline's least chunk count and copy part at mid sizes
#             (BenchmarkPipelineSplit), then each route forced back to back
#             (BenchmarkStagingRoutesLoop), and the steps of pipelined transfers
#             timed (BenchmarkPipelineTrace): OUTDIR/split.txt, loop.txt, trace.txt
#   graphs    stream-ordered allocation and CUDA graphs (BenchmarkAllocAsync,
#             BenchmarkGraph*, BenchmarkStreamLaunches), purego and cgo, beside
#             bench/cref/graphbench.c, bench/cref/graphwhile.cu (While nodes,
#             linked with the device runtime) and bench/pyref/torch_graph.py, two interleaved
#             rounds: OUTDIR/graphs.txt
#   capture   capturing 100 launches (BenchmarkGraphCapture, BenchmarkGraphCaptureOnly, BenchmarkGraphCaptureRaw,
#             BenchmarkGraphUpdate), purego and cgo, beside bench/cref/graphbench.c's
#             rows, seven interleaved rounds (CAPTURE_ROUNDS) and their medians, then a CPU profile of each set:
#             OUTDIR/capture.txt, OUTDIR/capture-tests{,-cgo}.pprof
#   blas      cuBLAS products (package cublas: BenchmarkGemm, BenchmarkGemmBatched,
#             BenchmarkGemmCall), purego and cgo, beside bench/pyref/torch_matmul.py and
#             bench/cref/gemmcall.c, in one run: OUTDIR/blas.txt
#   load      safetensors loading (BenchmarkLoad, BenchmarkReadPinned in package
#             safetensors) of a 2 GiB file in the page cache beside
#             bench/pyref/torch_safetensors.py's load_file(device="cuda"), and ReadFrom
#             from a pipe and a TCP connection beside their own speed: OUTDIR/load.txt
#   streaming the staging pipeline's copies with streaming stores and without
#             (BenchmarkPipelineStreaming, BenchmarkParallelCopy), two rounds, then
#             the steps of pipelined transfers timed (BenchmarkPipelineTrace), both
#             ways: OUTDIR/streaming.txt
#   streams   ReadFrom from a pipe and a TCP connection beside their own speed
#             (BenchmarkReadFromStream), and WriteTo into a pipe
#             (BenchmarkWriteToStream), three interleaved rounds, purego and cgo,
#             then ReadFrom by the pipeline's shape: OUTDIR/streams.md
#   slots     the pipeline's slots, of several sizes and counts, at 16 MiB-1 GiB
#             (BenchmarkPipelineSlots), three rounds: OUTDIR/slots.txt
#   grain     the pipeline's grain (least chunk, chunks, copy part) at mid sizes
#             beside the driver's path, with the steps of some transfers timed
#             (BenchmarkPipelineGrain), two rounds: OUTDIR/grain.txt
#   tail      pipelined transfers of 128 KiB-4.7 MiB, downloads with their
#             slots rotating and at one place, beside the pinned path with the
#             copy workers blocked and spinning, with the steps of each timed
#             (BenchmarkPipelineTail), two rounds: OUTDIR/tail.txt
#   parts     one small chunk's copy between host and pinned memory as the
#             pipeline makes it, by size, least part and workers, each part's
#             start and end timed, beside one goroutine's copy with the
#             workers blocked and spinning (BenchmarkCopyParts), two rounds,
#             and the CPUs' layout (lscpu): OUTDIR/parts.txt
#   large     Upload and Download at 256 MiB and 1 GiB with and without
#             streaming stores and with 8, 12 and 16 copy workers
#             (BenchmarkPipelineLarge), two rounds: OUTDIR/large.txt
#   timeline  one pipelined transfer's steps, chunk by chunk, at 16 MiB-1 GiB
#             both ways (BenchmarkPipelineTimeline), and the DMA of pinned
#             memory just written by the copy workers, with streaming stores
#             or without, beside memory not written (BenchmarkDMAAfterCopy):
#             OUTDIR/timeline.txt, OUTDIR/dma.txt
#   cores     Upload and Download at 256 MiB and 1 GiB by GOMAXPROCS (the copy
#             pool has one worker fewer), each transfer timed
#             (BenchmarkPipelineLarge), two interleaved rounds, then one upload's
#             timeline at each (BenchmarkPipelineTimeline): OUTDIR/cores.txt,
#             OUTDIR/cores-timeline.txt
#   compute   package compute's benchmarks (Add, CastBFloat16, Sum, Softmax, the
#             device-to-device copy, a cached call against Function.Launch),
#             purego and cgo, beside bench/pyref/cupy_compute.py (CuPy, PyTorch),
#             three interleaved rounds, and the first call with a warm disk
#             cache (TestDiskCache): OUTDIR/compute.txt
#   managed   managed memory (BenchmarkManagedPrefetch of 1 GiB there and back
#             and each way beside BenchmarkPinnedRoundTrip, BenchmarkManagedFirstTouch
#             with and without a prefetch), purego and cgo, beside the same calls
#             from C (bench/cref/managed.c), three interleaved rounds:
#             OUTDIR/managed.txt
#   rand      package curand's BenchmarkGenerate (Uniform and Normal of 256 Mi
#             float32) and package cufft's BenchmarkFFT and BenchmarkExecRepeated,
#             purego and cgo, beside the same calls from C (bench/cref/randfft.c),
#             bench/pyref/torch_rand.py (torch.rand, torch.randn) and bench/pyref/torch_fft.py,
#             two rounds: OUTDIR/rand.txt
#   growable  GrowableBuffer (BenchmarkGrowableGrow: 1 GiB to 16 GiB in 1 GiB
#             steps in place beside allocating and copying; BenchmarkGrowableCopy:
#             pinned copies into a grown buffer beside an Alloc'd one), purego and
#             cgo, two rounds: OUTDIR/growable.txt
#   stats     the cost of always-on memory statistics: BenchmarkAllocAsync of
#             this build and, when GOCUDA_OLD_TEST names a root-package test
#             binary built before them, of that one, three interleaved rounds:
#             OUTDIR/stats.txt
#   versus    transfers (BenchmarkUpload and BenchmarkDownload at 64 KiB, 1 MiB,
#             16 MiB, 256 MiB) and allocations (BenchmarkAllocAsync) of this build
#             beside GOCUDA_OLD_TEST, a root-package test binary of an earlier
#             commit, two interleaved rounds: OUTDIR/versus.txt
#   pool      the staging pipeline's ways of waiting (BenchmarkCopyPool) beside the
#             plain copies and Upload/Download at 16 and 256 MiB, two rounds:
#             OUTDIR/pool.txt (not part of the default set; BenchmarkParallelCopy
#             times the host copy alone)
#   grid      issue 48's grid: package compute's operations at every size and
#             shape of BenchmarkGrid beside the same cells in PyTorch and CuPy
#             (bench/pyref/compute_grid.py), worst ratio first (bench/report/gridreport.py);
#             GOCUDA_GRID_OPS, GOCUDA_GRID_DTYPES (comma lists),
#             GOCUDA_GRID_MAXELEMS and GOCUDA_GRID_CELLS pick the cells,
#             GRID_BENCHTIME the Go cells' time (0.1s), GRID_ROUNDS the
#             interleaved rounds of both sides (1; a cell's figure is the
#             median): OUTDIR/grid.md. GRID_RECHECK=X then runs the cells
#             below X again in GRID_RECHECK_ROUNDS rounds (3) at 0.3s, the
#             small cells' noise being as large as their ratios:
#             OUTDIR/grid-recheck.md
#
#   scripts/gpu-perf.sh OUTDIR [SECTION...]     (default: copy staging kernels calibrate)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-perf.sh OUTDIR [copy] [staging] [paired] [shape] [kernels] [calibrate] [split] [graphs] [capture] [blas] [load] [streaming] [slots] [streams] [grain] [tail] [parts] [large] [timeline] [cores] [compute] [managed] [rand] [growable] [stats] [versus] [pool] [grid]}
shift
sections=${*:-copy staging kernels calibrate}
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1

# summary prints the benchmark lines and round headers of a log, without
# the iteration counts and ns/op.
summary() {
	grep -E '^(Benchmark|==)' "$1" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns\/op[[:space:]]+/ /'
}

# rounds NAME N PATTERN BENCHTIME [BINARY] runs the purego benchmarks
# matching PATTERN, of the test binary BINARY (by default cuda, the root
# package's), N times into OUTDIR/NAME.txt, each round headed, and prints
# the summary.
rounds() {
	for round in $(seq "$2"); do
		echo "== round $round"
		"bin/tests/${5:-cuda}.test" -test.run '^$' -test.bench "$3" -test.benchtime "$4"
	done >"$out/$1.txt" 2>&1
	summary "$out/$1.txt"
}
machine=$(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv,noheader |
	awk -F', ' 'NR == 1 { printf "%s, driver %s, PCIe Gen%s x%s", $1, $2, $3, $4 }')
stamp="Measured $(date -u +%Y-%m-%d) on $machine, GOMAXPROCS=$(nproc)"
for section in $sections; do
	case $section in
	copy)
		nvcc -O2 -o /tmp/copybench bench/cref/copybench.c -lcuda
		for round in 1 2 3; do
			/tmp/copybench pageable pinned >"$out/cref$round.txt"
			bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopy(From|To)(Host|Pinned)$' -test.benchtime 0.3s >"$out/gocopy$round.txt"
		done
		{
			echo "$stamp; medians of 3 interleaved rounds"
			python3 bench/report/copyreport.py "$out/cref1.txt,$out/cref2.txt,$out/cref3.txt" "$out/gocopy1.txt,$out/gocopy2.txt,$out/gocopy3.txt"
		} >"$out/copy.md"
		cat "$out/copy.md"
		;;
	staging)
		bin/tests/cuda.test -test.run '^$' -test.bench '^Benchmark(Copy(From|To)Host|Upload|Download|StagingPaired)' -test.benchtime 0.5s -test.benchmem >"$out/gostaging.txt"
		{
			echo "$stamp"
			python3 bench/report/stagingreport.py "$out/gostaging.txt"
		} >"$out/staging.md"
		cat "$out/staging.md"
		;;
	paired)
		for set in tests tests-cgo; do
			bin/$set/cuda.test -test.run '^$' -test.bench '^Benchmark(StagingPaired|CopyPaired)$' -test.benchtime 0.4s >"$out/paired-$set.txt"
			echo "== $set"
			grep -E '^Benchmark' "$out/paired-$set.txt" | grep -oE '^\S+|[0-9.]+ (speedup|ratio)' | paste - -
		done
		;;
	shape)
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineShape$' -test.benchtime 0.3s >"$out/shape.txt"
		grep -E '^Benchmark' "$out/shape.txt" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns\/op[[:space:]]+/ /; s/ MB\/s.*//'
		;;
	kernels)
		# Three interleaved rounds (C, purego, cgo): a call's cost moves
		# between runs, and a sequence would fold that drift into the ratios.
		nvcc -O2 -o /tmp/kernelbench bench/cref/kernelbench.c -lcuda
		for round in 1 2 3; do
			/tmp/kernelbench testdata/kernels.ptx >"$out/kcref$round.txt"
			for set in tests tests-cgo; do
				# Two runs: a sub-benchmark pattern would skip those without any.
				for benches in '^Benchmark(StreamQuery|LaunchSync|LaunchAsync|Saxpy|CopyDeviceToDevice)$' '^BenchmarkCopy(From|To)Host$/^4B$' '^BenchmarkStreamQueryRaw$'; do
					bin/$set/cuda.test -test.run '^$' -test.bench "$benches" -test.benchtime 0.3s
				done >"$out/gokernels-$set-$round.txt"
			done
		done
		{
			echo "$stamp"
			python3 bench/report/kernelreport.py "$out/kcref1.txt,$out/kcref2.txt,$out/kcref3.txt" \
				"$out/gokernels-tests-1.txt,$out/gokernels-tests-2.txt,$out/gokernels-tests-3.txt" \
				"$out/gokernels-tests-cgo-1.txt,$out/gokernels-tests-cgo-2.txt,$out/gokernels-tests-cgo-3.txt"
		} >"$out/kernels.md"
		cat "$out/kernels.md"
		;;
	calibrate)
		bin/gocuda calibrate >"$out/calibrate.txt"
		cat "$out/calibrate.txt"
		;;
	split)
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineSplit$' -test.benchtime 300x >"$out/split.txt"
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkStagingRoutesLoop$' -test.benchtime 300x >"$out/loop.txt"
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineTrace$' -test.benchtime 300x >"$out/trace.txt"
		grep -hE '^Benchmark' "$out/trace.txt"
		grep -hE '^Benchmark' "$out/split.txt" "$out/loop.txt" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns\/op[[:space:]]+/ /; s/ MB\/s.*//'
		;;
	graphs)
		nvcc -O2 -o /tmp/graphbench bench/cref/graphbench.c -lcuda
		nvcc -O2 -arch=sm_90 -rdc=true -o /tmp/graphwhile bench/cref/graphwhile.cu -lcudadevrt
		for round in 1 2; do
			echo "== round $round: C"
			/tmp/graphbench testdata/kernels.ptx
			/tmp/graphwhile
			for set in tests tests-cgo; do
				echo "== round $round: $set"
				bin/$set/cuda.test -test.run '^$' -test.bench '^Benchmark(AllocAsync|GraphReplay|StreamLaunches|GraphCapture|GraphUpdate|GraphSetKernelParams|GraphWhile|DependentChain)$' -test.benchtime 0.3s | grep -E '^Benchmark'
			done
		done >"$out/graphs.txt" 2>&1
		python3 bench/pyref/torch_graph.py >"$out/torch_graph.json" 2>"$out/torch_graph.err" || echo "torch_graph.py failed: see torch_graph.err" >&2
		cat "$out/graphs.txt" "$out/torch_graph.json"
		;;
	capture)
		nvcc -O2 -o /tmp/graphbench bench/cref/graphbench.c -lcuda
		# C and Go run on the same four cores: unpinned, the machine's
		# times for both moved by up to 2x between rounds, with where the
		# scheduler put each.
		pin=
		if command -v taskset >/dev/null; then
			pin="taskset -c 2-5"
		fi
		for round in $(seq "${CAPTURE_ROUNDS:-7}"); do
			echo "== round $round: C"
			$pin /tmp/graphbench testdata/kernels.ptx | grep -E '^Graph(Capture|Update)' | sed 's/^/C /'
			for set in tests tests-cgo; do
				echo "== round $round: $set"
				$pin bin/$set/cuda.test -test.run '^$' -test.bench '^BenchmarkGraph(Capture|CaptureOnly|CaptureRaw|Update)$' -test.benchtime 0.2s |
					awk -v set=$set '/^Benchmark/ { sub(/^BenchmarkGraph/, "Graph", $1); sub(/-[0-9]+$/, "", $1); print set, $1, $3 }'
			done
		done >"$out/capture.txt" 2>&1
		for set in tests tests-cgo; do
			$pin bin/$set/cuda.test -test.run '^$' -test.bench '^BenchmarkGraph(CaptureOnly|Update)$' -test.benchtime 2s \
				-test.cpuprofile "$out/capture-$set.pprof" >/dev/null 2>&1
		done
		# The median of the rounds, µs per op, by row and set.
		awk '!/^==/ { v[$2 " " $1] = v[$2 " " $1] " " $3 } END { for (k in v) print k, v[k] }' "$out/capture.txt" |
			python3 -c 'import sys, statistics as st
for l in sorted(sys.stdin):
    f = l.split(); xs = [float(x) / 1000 for x in f[2:]]
    print("%-18s %-10s median %7.1f  min %7.1f  max %7.1f" % (f[0], f[1], st.median(xs), min(xs), max(xs)))'
		;;
	blas)
		lib=$(python3 -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13", "lib"))' 2>/dev/null)
		nvcc -O2 -o /tmp/gemmcall bench/cref/gemmcall.c -lcublas -lcuda
		{
			echo "== C"
			/tmp/gemmcall
			echo "== tests"
			bin/tests/cublas.test -test.run '^$' -test.bench '^BenchmarkGemm(Call|Batched)?$' -test.benchtime 1s | grep -E '^(Benchmark|ok|FAIL)'
			echo "== tests-cgo"
			bin/tests-cgo/cublas.test -test.run '^$' -test.bench '^BenchmarkGemmCall$' -test.benchtime 1s | grep -E '^(Benchmark|ok|FAIL)'
			echo "== torch"
			python3 bench/pyref/torch_matmul.py
			echo "== C again"
			/tmp/gemmcall
		} >"$out/blas.txt" 2>&1
		echo "(PyTorch's cuBLAS: $lib)" >>"$out/blas.txt"
		cat "$out/blas.txt"
		;;
	load)
		file=/tmp/gocuda-bench.safetensors
		{
			echo "== torch (first: makes the file)"
			python3 bench/pyref/torch_safetensors.py $file
			echo "== gocuda"
			GOCUDA_SAFETENSORS_FILE=$file bin/tests/safetensors.test -test.run '^$' -test.bench '^Benchmark(Load|ReadPinned)$' -test.benchtime 5x | grep -E '^(Benchmark|ok|FAIL)'
			bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkReadFromStream$' -test.benchtime 3x | grep -E '^(Benchmark|ok|FAIL)'
			echo "== torch again"
			python3 bench/pyref/torch_safetensors.py $file
		} >"$out/load.txt" 2>&1
		cat "$out/load.txt"
		;;
	streaming)
		{
			for round in 1 2; do
				bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineStreaming$' -test.benchtime 200x
				bin/tests/internal_hostcopy.test -test.run '^$' -test.bench '^BenchmarkParallelCopy$/(up|down)/(1|16)MiB/workers=(1|8|16)$/' -test.benchtime 200x
			done
			bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineTrace$' -test.benchtime 300x
		} >"$out/streaming.txt" 2>&1
		summary "$out/streaming.txt"
		;;
	slots)
		# The pipeline's slots, of several sizes and counts, three rounds.
		rounds slots 3 '^BenchmarkPipelineSlots$' 60x
		;;
	tail)
		# Pipelined downloads with their slots rotating and at one place,
		# beside the pinned path with the copy workers blocked and
		# spinning, two rounds.
		rounds tail 2 '^BenchmarkPipelineTail$' 0.15s
		;;
	large)
		rounds large 2 '^BenchmarkPipelineLarge$' 12x
		;;
	parts)
		lscpu >"$out/lscpu.txt" 2>&1 || true
		rounds parts 2 '^BenchmarkCopyParts$' 2000x internal_hostcopy
		;;
	timeline)
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineTimeline$' -test.benchtime 1x >"$out/timeline.txt" 2>&1
		rounds dma 2 '^BenchmarkDMAAfterCopy$' 40x
		;;
	cores)
		procs=$(nproc)
		for round in 1 2; do
			for cpu in $procs $((procs - 1)) $((procs - 2)); do
				echo "== round $round: GOMAXPROCS=$cpu"
				bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineLarge$///^streaming=false$/^workers=16$' -test.benchtime 16x -test.cpu "$cpu"
			done
		done >"$out/cores.txt" 2>&1
		summary "$out/cores.txt"
		for cpu in $procs $((procs - 1)) $((procs - 2)); do
			echo "== GOMAXPROCS=$cpu"
			bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkPipelineTimeline$/^up$/^(256MiB|1GiB)$/^streaming=false$' -test.benchtime 1x -test.cpu "$cpu"
		done >"$out/cores-timeline.txt" 2>&1
		;;
	grain)
		# The pipeline's grain at mid sizes beside the driver's path, with
		# the steps of some transfers timed, two rounds.
		rounds grain 2 '^BenchmarkPipelineGrain$' 0.15s
		;;
	streams)
		# Three interleaved rounds of the sources, ReadFrom at its default
		# shape and WriteTo, purego and cgo (a pipe's speed moves between
		# runs), then every shape once, purego.
		for round in 1 2 3; do
			for set in tests tests-cgo; do
				for pat in '^BenchmarkReadFromStream$/^(pipe|tcp)$/^source$' \
					'^BenchmarkReadFromStream$/^(pipe|tcp)$/^ReadFrom$/^slots=4$/^chunk=1024KiB$' '^BenchmarkWriteToStream$'; do
					bin/$set/cuda.test -test.run '^$' -test.bench "$pat" -test.benchtime 5x
				done >"$out/streams-$set-r$round.txt" 2>&1
			done
		done
		bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkReadFromStream$/^(pipe|tcp)$/^ReadFrom$' -test.benchtime 5x >"$out/streams-shapes.txt" 2>&1
		{
			echo "$stamp; MB/s, rounds 1 / 2 / 3"
			for set in tests tests-cgo; do
				echo "== $set"
				grep -h '^Benchmark' "$out"/streams-$set-r*.txt | awk '{ v[$1] = v[$1] (v[$1] == "" ? "" : " / ") $5 } END { for (k in v) print k, v[k] }' | sort
			done
			echo "== shapes, purego"
			grep -h '^Benchmark' "$out/streams-shapes.txt" | awk '{ print $1, $5 }'
		} >"$out/streams.md"
		cat "$out/streams.md"
		;;
	compute)
		for round in 1 2 3; do
			echo "== round $round"
			for set in tests tests-cgo; do
				echo "== $set"
				(cd compute && "../bin/$set/compute.test" -test.run '^$' -test.bench . -test.benchtime 1s)
			done
			echo "== peers"
			python3 bench/pyref/cupy_compute.py
		done >"$out/compute.txt" 2>&1
		echo "== first call, warm disk cache" >>"$out/compute.txt"
		for set in tests tests-cgo; do
			(cd compute && "../bin/$set/compute.test" -test.run '^TestDiskCache$' -test.v -test.count 3) 2>&1 | grep -E 'first call|^(ok|FAIL|---)' >>"$out/compute.txt"
		done
		grep -E '^(==|Benchmark|cupy|torch)|first call' "$out/compute.txt" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+([0-9.]+ ns\/op)/ \1/'
		;;
	managed)
		nvcc -O2 -o "$out/managed" bench/cref/managed.c -lcuda
		for round in 1 2 3; do
			echo "== round $round"
			for set in tests tests-cgo; do
				echo "== $set"
				bin/$set/cuda.test -test.run '^$' -test.bench '^Benchmark(ManagedPrefetch|PinnedRoundTrip|ManagedFirstTouch)$' -test.benchtime 10x
			done
			echo "== C (bench/cref/managed.c), GB/s"
			"$out/managed"
		done >"$out/managed.txt" 2>&1
		summary "$out/managed.txt"
		grep -E '^(managed|pinned) ' "$out/managed.txt"
		;;
	rand)
		nvcc -O2 -o "$out/randfft" bench/cref/randfft.c -lcurand -lcufft -lcuda
		# C runs on the toolkit's libraries; Go on those it finds first (the
		# Python wheels' may come first: gocuda version names them) and again
		# on the toolkit's, so that a difference can be told from a version's.
		toolkit=/usr/local/cuda/lib64
		for round in 1 2; do
			for set in tests tests-cgo; do
				for libs in found toolkit; do
					[ $libs = toolkit ] && [ $set = tests-cgo ] && continue
					echo "== round $round: $set, libraries $libs"
					(
						if [ $libs = toolkit ]; then
							export GOCUDA_LIBCURAND=$(ls $toolkit/libcurand.so.* | head -1) GOCUDA_LIBCUFFT=$(ls $toolkit/libcufft.so.* | head -1)
						fi
						bin/gocuda version | grep -E 'cuRAND|cuFFT'
						cd curand && "../bin/$set/curand.test" -test.run '^$' -test.bench '^BenchmarkGenerate$' -test.benchtime 20x
						cd ../cufft && "../bin/$set/cufft.test" -test.run '^$' -test.bench '^BenchmarkFFT$' -test.benchtime 20x
						"../bin/$set/cufft.test" -test.run '^$' -test.bench '^BenchmarkExecRepeated$' -test.benchtime 40960x
					)
				done
			done
			echo "== C (bench/cref/randfft.c, $toolkit), microseconds"
			LD_LIBRARY_PATH=$toolkit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$out/randfft"
			echo "== PyTorch"
			python3 bench/pyref/torch_rand.py
			python3 bench/pyref/torch_fft.py
		done >"$out/rand.txt" 2>&1
		grep -E '^(==|Benchmark|torch|c\.|cuRAND|cuFFT)' "$out/rand.txt" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+([0-9.]+ ns\/op)/ \1/'
		;;
	growable)
		for round in 1 2; do
			for set in tests tests-cgo; do
				echo "== round $round: $set"
				bin/$set/cuda.test -test.run '^$' -test.bench '^BenchmarkGrowable(Grow|Copy)$' -test.benchtime 5x
			done
		done >"$out/growable.txt" 2>&1
		summary "$out/growable.txt"
		;;
	stats)
		for round in 1 2 3; do
			for test in bin/tests/cuda.test ${GOCUDA_OLD_TEST:-}; do
				echo "== round $round: $test"
				$test -test.run '^$' -test.bench '^BenchmarkAllocAsync$' -test.benchtime 0.5s
			done
		done >"$out/stats.txt" 2>&1
		summary "$out/stats.txt"
		;;
	versus)
		for round in 1 2; do
			for test in bin/tests/cuda.test ${GOCUDA_OLD_TEST:-}; do
				echo "== round $round: $test"
				$test -test.run '^$' -test.bench '^Benchmark(Upload|Download)$/^(64KiB|1MiB|16MiB|256MiB)$' -test.benchtime 0.3s
				$test -test.run '^$' -test.bench '^BenchmarkAllocAsync$/^(async|uncached)/' -test.benchtime 0.3s
			done
		done >"$out/versus.txt" 2>&1
		summary "$out/versus.txt"
		;;
	pool)
		for round in 1 2; do
			bin/tests/cuda.test -test.run '^$' -test.bench '^Benchmark(Copy(From|To)Host|Upload|Download)$/^(16MiB|256MiB)$' -test.benchtime 0.3s
			bin/tests/cuda.test -test.run '^$' -test.bench '^BenchmarkCopyPool$' -test.benchtime 0.3s
		done >"$out/pool.txt"
		grep -E '^Benchmark' "$out/pool.txt" | sed -E 's/[[:space:]]+[0-9]+[[:space:]]+[0-9.]+ ns\/op[[:space:]]+/ /; s/ MB\/s.*//'
		;;
	grid)
		# Rounds interleave the two sides, so that a drift of the card or the
		# host between them lands on both. A failed cell leaves the others'
		# rows: the table is still made.
		gridrounds() { # PREFIX ROUNDS BENCHTIME
			local r gofiles= pyfiles=
			for r in $(seq 1 "$2"); do
				(cd compute && ../bin/tests/compute.test -test.run '^$' -test.bench '^BenchmarkGrid$' -test.benchtime "$3") >"$out/$1-go.$r.txt" 2>&1 ||
					echo "BenchmarkGrid failed: see $1-go.$r.txt" >&2
				python3 bench/pyref/compute_grid.py >"$out/$1-peers.$r.json" 2>"$out/$1-peers.$r.err" ||
					echo "compute_grid.py failed: see $1-peers.$r.err" >&2
				gofiles=$gofiles${gofiles:+,}$out/$1-go.$r.txt
				pyfiles=$pyfiles${pyfiles:+,}$out/$1-peers.$r.json
			done
			{
				echo "$stamp; µs per call (a loop of calls, then one synchronize; the median of $2 interleaved rounds), ratio = the faster peer's µs / gocuda's"
				echo
				python3 bench/report/gridreport.py "$gofiles" "$pyfiles"
			} >"$out/$1.md"
			sed -n "/^[0-9]* cells/,\$p" "$out/$1.md"
			[ -z "${GRID_RECHECK:-}" ] || python3 bench/report/gridreport.py -cells "$GRID_RECHECK" "$gofiles" "$pyfiles" >"$out/$1-slow.txt"
		}
		gridrounds grid "${GRID_ROUNDS:-1}" "${GRID_BENCHTIME:-0.1s}"
		if [ -n "${GRID_RECHECK:-}" ] && [ -s "$out/grid-slow.txt" ]; then
			GOCUDA_GRID_CELLS=$(cat "$out/grid-slow.txt") GRID_RECHECK= gridrounds grid-recheck "${GRID_RECHECK_ROUNDS:-3}" 0.3s
		fi
		;;
	*)
		echo "gpu-perf.sh: unknown section $section" >&2
		exit 2
		;;
	esac
done
