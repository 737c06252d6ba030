#!/usr/bin/env bash
# One device call's worth of checks after scripts/gpu-build.sh (bin/
# unpacked there): each named step under its own time limit in seconds, so
# that a step that runs long leaves the rest their turn and the logs are
# packed. Output in OUT, one folder a step, and OUT/summary.txt.
#
#   scripts/gpu-session.sh OUT STEP:SECONDS...
#
# Steps:
#   fresh     scripts/gpu-fresh.sh (issue 49's fresh-slice transfers) and
#             internal/hostcopy's BenchmarkPopulate
#   softmax   issue 48's grid for softmax and logsoftmax, float16 and float32
#             (scripts/gpu-perf.sh grid), beside PyTorch and CuPy
#             (GOCUDA_GRID_OPS and GOCUDA_GRID_DTYPES, if set, choose others)
#   solver    scripts/gpu-solver.sh, a short round (issue 51)
#   sparse    package cusparse's BenchmarkSparse and bench/pyref/sparse_peers.py
#   nd-calls  issue 50's call-cost and small cases (scripts/gpu-nd.sh subset)
#   purego-changed  the purego test binaries of the packages changed most
#             lately (cusparse, cusolver, the libraries' sweep, ndshape, nd,
#             compute), in that order while time is left
#   cgo-new   the cgo test binaries of the new packages (cusparse, cusolver,
#             its gonum checks) and of the root, in that order
#   test.NAME the test binary NAME (as in bin/tests/manifest: nn, cudnn,
#             examples_gpt2, cusolver, ...), purego then cgo while time is
#             left, -test.v, in the package's folder; test.NAME=REGEXP runs
#             only the tests REGEXP matches
#   attention scripts/gpu-attention.sh's benchmarks beside PyTorch's SDPA
#   layers    scripts/gpu-nn.sh's benchmarks beside PyTorch
#   conv      scripts/gpu-cudnn.sh's benchmarks beside PyTorch
#   gpt2      scripts/gpu-gpt2.sh: the references, -compare, -generate,
#             -bench and PyTorch eager's
#   cholesky  BenchmarkSolver's batched Cholesky, both triangles (Go only)
#   gridab    scripts/gpu-gridab.sh: compute's grid cells (GOCUDA_GRID_CELLS
#             or GOCUDA_GRID_OPS and its kin) of bin/ab/compute-before.test
#             and of this build, beside PyTorch and CuPy
#   ab.NAME=BENCH  scripts/gpu-abbench.sh: the benchmarks BENCH matches of
#             bin/ab/NAME-before.test and of this build's NAME test binary,
#             two interleaved rounds of 0.2s
#   register  the root's BenchmarkRegisterFresh (issue 49: a download
#             straight into fresh memory page-locked in place)
#   nd.OPS    issue 50's table for the ops OPS names (a comma list, as
#             GOCUDA_ND_OPS), two rounds, no profile, beside the peers
#   capture-probe  which driver calls a capture forbids, by mode and by
#             thread (internal/fakecuda/probes/capture_unsafe.c), on the
#             real driver and on the fake, side by side
#   tf32      cuDNN's TF32 benchmark fault (issue 52): the failing case alone
#             with cuDNN's debug log (OUT/tf32/dbg.log), then PyTorch's
#             convolution of the same cases (bench/pyref/conv_tf32_probe.py)
#
# Pack OUT into one file before the call ends: the device tool brings back
# a bounded count of files.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu-session.sh OUT STEP:SECONDS...}
shift
mkdir -p "$out"
export GOCUDA_REQUIRE_GPU=1 GOCUDA_FAKECUDA=$PWD/bin/libfakecuda.so NCCL_NVLS_ENABLE=0
bin=$PWD/bin
for arg in "$@"; do
	step=${arg%%:*} secs=${arg#*:}
	dir=$out/$(printf %s "$step" | tr -c "A-Za-z0-9._-" _)
	mkdir -p "$dir"
	start=$SECONDS
	case $step in
	fresh)
		timeout "$secs" bash -c "bash scripts/gpu-fresh.sh '$dir'; '$bin/tests/internal_hostcopy.test' -test.run '^\$' -test.bench BenchmarkPopulate -test.benchtime 1x >'$dir/populate.txt' 2>&1" >"$dir/log.txt" 2>&1 ;;
	softmax)
		GOCUDA_GRID_OPS=${GOCUDA_GRID_OPS:-softmax,logsoftmax} GOCUDA_GRID_DTYPES=${GOCUDA_GRID_DTYPES:-f16,f32} timeout "$secs" bash scripts/gpu-perf.sh "$dir" grid >"$dir/log.txt" 2>&1 ;;
	solver)
		SOLVER_COUNT=1 timeout "$secs" bash scripts/gpu-solver.sh "$dir" $((secs / 2)) $((secs / 2)) >"$dir/log.txt" 2>&1 ;;
	sparse)
		timeout "$secs" bash -c "cd cusparse && '$bin/tests/cusparse.test' -test.run '^\$' -test.bench BenchmarkSparse -test.benchtime 0.2s -test.count 3 >'$dir/sparse-go.txt' 2>&1; cd .. && python3 bench/pyref/sparse_peers.py >'$dir/sparse-peers.json' 2>'$dir/sparse-peers.err'" >"$dir/log.txt" 2>&1 ;;
	nd-calls)
		GOCUDA_ND_OPS=call_into,call_alloc,add,softmax_last,concat0,concat1,sum_mid,take timeout "$secs" bash scripts/gpu-nd.sh "$dir" $((secs / 2)) $((secs / 2)) >"$dir/log.txt" 2>&1 ;;
	purego-changed | cgo-new)
		set=tests list="cusparse:cusparse cusolver:cusolver internal_sweep_libs:internal/sweep/libs internal_ndshape:internal/ndshape nd:nd compute:compute"
		[ "$step" = cgo-new ] && set=tests-cgo list="cusparse:cusparse cusolver:cusolver cusolver_gonumtest:cusolver/gonumtest cuda:."
		for t in $list; do
			left=$((secs - (SECONDS - start)))
			[ "$left" -gt 5 ] || break
			(cd "${t#*:}" && timeout "$left" "$bin/$set/${t%%:*}.test" -test.count 1 -test.v) >"$dir/${t%%:*}.log" 2>&1
			echo "$set/${t%%:*}: exit $? ($(grep -c -- '--- PASS' "$dir/${t%%:*}.log") passed, $(grep -c -- '--- FAIL' "$dir/${t%%:*}.log") failed)" >>"$dir/log.txt"
		done
		cat "$dir/log.txt" ;;
	test.*)
		name=${step#test.} run=.
		case $name in *=*) run=${name#*=} name=${name%%=*} ;; esac
		pkgdir=$(awk -v n="$name" '$1 == n { print $2 }' "$bin/tests/manifest")
		# cuDNN is found as a user's program finds it, in PyTorch's wheel:
		# for package cudnn, and for nn's cuDNN attention (its tests under
		# "cudnn" and "auto" skip where cuDNN is not found), for their run
		# alone: the other packages' libraries stay those of /usr/local/cuda.
		venv=${VIRTUAL_ENV:-}
		case $name in cudnn | nn | examples_gpt2) [ -d /opt/torch/.venv ] && venv=${venv:-/opt/torch/.venv} ;; esac
		[ -n "$pkgdir" ] || { echo "$step: no test binary $name in bin/tests/manifest" | tee -a "$dir/log.txt" >>"$out/summary.txt"; continue; }
		for set in tests tests-cgo; do
			left=$((secs - (SECONDS - start)))
			[ "$left" -gt 5 ] || break
			[ -x "$bin/$set/$name.test" ] || continue
			(cd "$pkgdir" && VIRTUAL_ENV=$venv timeout "$left" "$bin/$set/$name.test" -test.count 1 -test.v -test.run "$run") >"$dir/$set-$name.log" 2>&1
			echo "$set/$name: exit $? ($(grep -c -- '--- PASS' "$dir/$set-$name.log") passed, $(grep -c -- '--- FAIL' "$dir/$set-$name.log") failed)" >>"$dir/log.txt"
		done
		cat "$dir/log.txt" ;;
	attention)
		timeout "$secs" bash scripts/gpu-attention.sh "$dir" 0 $((secs / 2)) $((secs / 2 - 5)) >"$dir/log.txt" 2>&1 ;;
	layers)
		timeout "$secs" bash scripts/gpu-nn.sh "$dir" 0 $((secs / 2)) $((secs / 2 - 5)) >"$dir/log.txt" 2>&1 ;;
	conv)
		timeout "$secs" bash scripts/gpu-cudnn.sh "$dir" 0 $((secs / 2)) $((secs / 2 - 5)) >"$dir/log.txt" 2>&1 ;;
	gpt2)
		GPT2_STEP_S=$((secs / 5)) timeout "$secs" bash scripts/gpu-gpt2.sh "$dir" >"$dir/log.txt" 2>&1
		rm -f "$dir"/*.safetensors ;;
	gridab)
		timeout "$secs" bash scripts/gpu-gridab.sh "$dir" >"$dir/log.txt" 2>&1 ;;
	ab.*)
		name=${step#ab.} bench=.
		case $name in *=*) bench=${name#*=} name=${name%%=*} ;; esac
		pkgdir=$(awk -v n="$name" '$1 == n { print $2 }' "$bin/tests/manifest")
		timeout "$secs" bash scripts/gpu-abbench.sh "$dir" "$name" "${pkgdir:-.}" "$bench" 0.2s >"$dir/log.txt" 2>&1 ;;
	register)
		timeout "$secs" "$bin/tests/cuda.test" -test.run '^$' -test.bench '^BenchmarkRegisterFresh$' -test.benchtime 1x >"$dir/log.txt" 2>&1 ;;
	nd.*)
		GOCUDA_ND_OPS=${step#nd.} ND_PROFILE_S=0 ND_COUNT=2 timeout "$secs" bash scripts/gpu-nd.sh "$dir" $((secs / 2)) $((secs / 2 - 5)) >"$dir/log.txt" 2>&1 ;;
	tf32)
		for set in tests-cgo tests; do
			(cd cudnn && VIRTUAL_ENV=/opt/torch/.venv CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG="$dir/dbg-$set.log" timeout $((secs / 3)) "$bin/$set/cudnn.test" -test.v -test.run 'TestConvBenchmarkEveryCase/float32_TF32/7x7_stride_2_pad_3_NCHW') >"$dir/$set.log" 2>&1
			echo "$set/cudnn: exit $?" >>"$dir/log.txt"
		done
		py=/opt/torch/.venv/bin/python; [ -x "$py" ] || py=python3
		timeout $((secs / 3)) "$py" bench/pyref/conv_tf32_probe.py >"$dir/probe.txt" 2>&1
		echo "probe: exit $?" >>"$dir/log.txt"
		cat "$dir/log.txt" ;;
	capture-probe)
		mkdir -p "$dir/fake" && ln -sf "$bin/libfakecuda.so" "$dir/fake/libcuda.so.1"
		timeout "$secs" "$bin/capture_unsafe" >"$dir/driver.txt" 2>&1
		echo "driver: exit $?" >"$dir/log.txt"
		LD_LIBRARY_PATH=$dir/fake timeout "$secs" "$bin/capture_unsafe" >"$dir/fake.txt" 2>&1
		echo "fake: exit $?" >>"$dir/log.txt"
		rm -r "$dir/fake"
		paste -d '|' "$dir/driver.txt" "$dir/fake.txt" >>"$dir/log.txt"
		cat "$dir/log.txt" ;;
	cholesky)
		(cd cusolver && GOCUDA_SOLVER_OPS=cholesky_batched,cholesky_batched_upper timeout "$secs" "$bin/tests/cusolver.test" -test.run '^$' -test.bench '^BenchmarkSolver$' -test.benchtime 0.2s -test.count 3) >"$dir/log.txt" 2>&1 ;;
	*)
		echo "gpu-session.sh: unknown step $step" >&2
		exit 2 ;;
	esac
	echo "$step: exit $? in $((SECONDS - start))s" >>"$out/summary.txt"
done
cat "$out/summary.txt"
