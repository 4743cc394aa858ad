#!/usr/bin/env bash
# gpu.sh runs the GPU suite that `make gpu` built into build/gpu, on a machine
# with a GPU, CUDA and nvcc but no Go. Logs go to $OUT/logs.tgz (default
# build/out) and the benchmark results beside it; the last lines printed are
# the summary. "gpu.sh tests" runs only the tests and examples, "gpu.sh bench"
# only the benchmarks (Go, the C twins, CuPy and cuda.core; then the table
# of them all, table.md, table.csv and table.png, in $OUT, the raw results
# in $OUT/results.tgz), "gpu.sh nccl" only the all-reduce benchmarks and
# their twin, "gpu.sh mixed" only highlevel/internal/mixed's programs that mix
# every kind of work, several processes at once on the GPU (see its part below
# for the knobs), so that each part fits in one call to the device. Every run counts:
# the script exits non-zero when any test, example, benchmark, twin or the
# table failed, and on a machine with a GPU a test that finds none fails.
set -u -o pipefail
part=${1:-all}
cd "$(dirname "$0")"
out=${OUT:-../out}
mkdir -p "$out"
log=$(mktemp -d)
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$log/nvidia-smi.txt"

# The GPU tests skip where the machine has no GPU (internal/gpuprobe), and a
# driver that fails fails them. Where nvidia-smi or /dev/nvidia0 shows a GPU,
# and $GOCUDA_TEST_GPU is not set already, it is set to 1: a test that finds
# no GPU fails too. (grep reads all of nvidia-smi's list: with -q, nvidia-smi
# could die of SIGPIPE, and pipefail take that for no GPU.)
if [ -z "${GOCUDA_TEST_GPU:-}" ] && { nvidia-smi -L 2>/dev/null | grep '^GPU ' >/dev/null || [ -e /dev/nvidia0 ]; }; then
	export GOCUDA_TEST_GPU=1
fi
echo "GOCUDA_TEST_GPU=${GOCUDA_TEST_GPU:-}"

# findlib NAME prints the path of the library NAME: the loader's, else the
# first file of that name on the machine (a Python wheel's).
findlib() {
	local p
	p=$(ldconfig -p | awk -v n="$1" '$1 == n {print $NF; exit}')
	[ -n "$p" ] || p=$(find / -path /proc -prune -o -name "$1" -print 2>/dev/null | head -1)
	echo "$p"
}

# NCCL may come only as a Python wheel, off the loader's path: the tests,
# the Go benchmark and the C twin all use the file found here. NVLink
# multicast stays off (NCCL_NVLS_ENABLE=0 is set on the machine).
export NCCL_NVLS_ENABLE=0
ncclso=${GOCUDA_NCCL:-$(findlib libnccl.so.2)}
export GOCUDA_NCCL=$ncclso
echo "NCCL: $ncclso"

if [ "$part" = all ] || [ "$part" = tests ]; then
# The CUDA 13.0 NVRTC, for the tests built for another major (x_cuda12.test)
# that compile kernels: the GPU machines have no other.
nvrtc=$(findlib libnvrtc.so.13)
for t in *.test; do
	echo "== $t"
	# Under -race, the randomized tests run their short forms (5 seeds of
	# highlevel's, one program of highlevel/internal/mixed's).
	short=
	case $t in
	highlevel_race.test | highlevel_internal_mixed_race.test) short=-test.short ;;
	esac
	# highlevel built for another major runs on the driver alone, with
	# libcudart unloadable, and compiles with the NVRTC found above.
	# highlevel's staged copy stress runs its long form here alone.
	env=()
	case $t in
	highlevel_cuda*.test) env=(GOCUDA_CUDART=/nonexistent/libcudart.so GOCUDA_NVRTC="$nvrtc") short=-test.short ;;
	highlevel.test) env=(GOCUDA_STRESS_ROUNDS="${GOCUDA_STRESS_ROUNDS:-1000}") ;;
	esac
	# highlevel's randomized test runs apart from the rest of its binary,
	# into a log of its own, so that a crash in it hides none of the others.
	runs=(-test.run=.)
	case $t in
	highlevel.test | highlevel_race.test | highlevel_cuda[0-9]*.test) runs=(-test.skip=GPURandomOps -test.run=GPURandomOps) ;;
	esac
	for run in "${runs[@]}"; do
		l=$log/${t%.test}.log
		[ "$run" = -test.run=GPURandomOps ] && l=$log/${t%.test}-random.log
		# A test that hangs fails with its goroutines' stacks, and the rest run.
		env "${env[@]}" timeout 400 ./"$t" -test.v -test.count=1 -test.timeout 380s $short "$run" >"$l" 2>&1 || status=1
		grep -E '^(--- |=== RUN|ok|FAIL|PASS)' "$l" | grep -v '=== RUN' | tail -40
	done
done

echo "== highlevel without libcudart"
# highlevel needs only the driver: with libcudart unloadable, every test
# passes but those of what still loads it (Properties, RuntimeVersion),
# which skip saying so. The randomized test runs its short form.
GOCUDA_CUDART=/nonexistent/libcudart.so timeout 400 ./highlevel.test -test.v -test.count=1 -test.short -test.timeout 380s \
	>"$log/highlevel-nocudart.log" 2>&1 || status=1
grep -E -A1 '^(--- SKIP|--- FAIL)' "$log/highlevel-nocudart.log" | grep -v '^--$' | tail -40
grep -E '^(ok|FAIL|PASS)' "$log/highlevel-nocudart.log"

echo "== highlevel under compute-sanitizer (memcheck)"
# The tests provoke API errors on purpose (out of memory); memcheck's own
# findings are what counts. The randomized test runs its short form.
HL_SANITIZER=1 timeout 400 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 ./highlevel.test -test.run GPU -test.short -test.count=1 >"$log/sanitizer.txt" 2>&1 || status=1
grep -E 'ERROR SUMMARY|^(ok|FAIL|PASS)' "$log/sanitizer.txt"
# racecheck and synccheck look at shared memory and barriers: the kernels
# that use them, and under synccheck the randomized test's launches.
# racecheck loses track of that test's launches ("Internal Sanitizer Error:
# Detected a failure to track a kernel launch") and then slows them past
# the test's one-second waits, on H100 and H200 alike; its kernels use no
# shared memory, all that racecheck checks.
for tool in racecheck synccheck; do
	echo "== highlevel under compute-sanitizer ($tool)"
	tests='GPUCompileAndLaunch|GPULaunchConfig'
	[ $tool = synccheck ] && tests="$tests|GPURandomOps"
	HL_RANDOM_SEEDS=3 timeout 300 compute-sanitizer --tool $tool --print-limit 20 ./highlevel.test -test.short -test.count=1 \
		-test.run "$tests" >"$log/$tool.txt" 2>&1 || status=1
	grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^(ok|FAIL|PASS)' "$log/$tool.txt"
done

echo "== examples"
./devicequery >"$log/devicequery.txt" 2>&1 || status=1
head -20 "$log/devicequery.txt"
./saxpy 2>&1 | tee "$log/saxpy.txt" || status=1
./pipeline 2>&1 | tee "$log/pipeline.txt" || status=1
./graphloop 2>&1 | tee "$log/graphloop.txt" || status=1
./memprofile -o "$log/memprofile.pprof" 2>&1 | tee "$log/memprofile.txt" || status=1
# highlevel/collective's example: one process over every GPU.
./allreduce 2>&1 | tee "$log/allreduce.txt" || status=1
if [ "$(nvidia-smi -L 2>/dev/null | wc -l)" -ge 2 ]; then
	./saxpy -device 1 2>&1 | tee "$log/saxpy-device1.txt" || status=1
fi
./sgemm 2>&1 | tee "$log/sgemm.txt" || status=1
./bandwidth 2>&1 | tee "$log/bandwidth.txt" || status=1
fi

if [ "$part" = all ] || [ "$part" = bench ]; then
echo "== benchmarks: Go, the C twins, CuPy and cuda.core"
# The calls run on two pinned cores, so that the scheduler adds little
# noise and Go's runtime threads (sysmon, the collector) have a core beside
# the benchmark's, as in any Go program; C and Python get the same two. The
# copies run unpinned: the staging copies with many cores.
go="./bench.test -test.run ^$ -test.benchmem"
two="taskset -c 2,3"
# gobench PATTERN BENCHTIME [PIN...] runs the Go benchmarks PATTERN names,
# $count times (5 unless set).
gobench() {
	local pattern=$1 times=$2
	shift 2
	"$@" $go -test.count "${count:-5}" -test.bench "$pattern" -test.benchtime "$times" | tee -a "$log/go.txt" || status=1
}
gobench 'CgoNoop|GetDevice|DeviceAttribute|PoolMallocFree' 5000000x $two
gobench 'EventRecord|StreamCreateDestroy|MallocAsyncFree|LaunchEmpty|LaunchArgs' 200000x $two
gobench 'LaunchSync' 50000x $two
gobench 'Graph100' 5000x $two
# Graphs built node by node (graphbuild_test.go; their twin, c/graphbuild.c,
# runs with the others below): a loop of 1000 kernels ended by the device,
# as a while node (2-5 ms a loop) and as the host's loops (9-15 ms); the
# build of 100 kernel nodes (about 0.4 ms); a node's arguments set, launch
# and sync (about 10 µs). About 0.2-0.5 s a run, 15 s in all.
gobench '^BenchmarkWhileNode$' 100x $two
gobench '^BenchmarkWhileHostLoop(Copy)?$' 30x $two
gobench '^BenchmarkGraphBuild100$' 1000x $two
gobench '^BenchmarkGraphSetKernelArgs$' 20000x $two
# The same two against c/graphbuild.c's calls alternating in one process
# (graphtwin.go), which separate runs drift too far apart to compare.
gobench '^BenchmarkGraphBuild100Paired$' 1000x $two
gobench '^BenchmarkGraphSetKernelArgsPaired$' 20000x $two
gobench '^Benchmark(H2D|D2H|D2D|Memset)' 20x
gobench 'Sgemm8192' 30x
inc=${CUDA_HOME:-/usr/local/cuda}/include
# twin SOURCE compiles the C twin SOURCE into the program of its name.
twin() {
	nvcc -O2 -arch=native -I"$inc" -o "${1%.*}" "$1" -lcudart -lcuda -ldl -lcublas -lnvrtc
}
# The mix and its twin take turns, one run each, seven times: a run of
# either drifts by up to 10% over minutes with the host and the GPU, more
# than the 5% the row's target allows, so both must see the same drift.
# BenchmarkMixPaired alternates them within one process, every 400 rounds;
# its C side (c-ns/op) goes to the C results under its name.
if twin mix.c; then
	for i in 1 2 3 4 5 6 7; do
		count=1 gobench '^BenchmarkMix$' 20000x $two
		count=1 gobench '^BenchmarkMix(Memset|Launch|D2D)$' 200000x $two
		count=1 gobench '^BenchmarkMixPaired$' 20000x $two
		count=1 gobench '^BenchmarkMixGraph$' 20000x $two
		$two ./mix 1 | tee -a "$log/c.txt" || status=1
	done
	# The paired benchmarks' C sides (c-ns/op) go to the C results under their names.
	awk '$1 ~ /^Benchmark[A-Za-z]*Paired/ { for (i = 3; i < NF; i++) if ($(i+1) == "c-ns/op") print $1, $2, $i, "ns/op" }' \
		"$log/go.txt" >>"$log/c.txt"
else
	status=1
fi
# The waits and their twin run unpinned: the serving rows have up to 64
# workers, and a waiter that sleeps gives its core back. The serving rows
# take turns with the twin's, three rounds of each.
gobench '^BenchmarkWait$' 1000x
count=1 gobench '^BenchmarkWaitLong$' 3x
count=1 gobench '^BenchmarkWaitMany$' 5x
if twin wait.cu; then
	./wait 5 latency | tee -a "$log/c.txt" || status=1
	for i in 1 2 3; do
		count=1 gobench '^BenchmarkServe$' 1s
		./wait 1 serve | tee -a "$log/c.txt" || status=1
	done
else
	status=1
fi
for c in *.c *.cu; do
	case $c in nccl.cu | mix.c | wait.cu) continue ;; esac
	pin=$two
	[ "$c" = copy.c ] && pin=
	twin "$c" && $pin ./"${c%.*}" | tee -a "$log/c.txt" || status=1
done
for lib in cupy cudacore; do
	PYTHONUNBUFFERED=1 $two python3 py/bench.py "$lib" >"$log/$lib.txt" 2>"$log/$lib.err" || status=1
	cat "$log/$lib.txt" "$log/$lib.err"
done
fi

if [ "$part" = all ] || [ "$part" = nccl ]; then
echo "== all-reduce over all GPUs, in one process and in two: Go (raw and highlevel/collective) and C, taking turns (NCCL's threads need more than one core)"
inc=${CUDA_HOME:-/usr/local/cuda}/include
# The twin links the library the Go side loaded, through a libnccl.so link.
ln -sf "$ncclso" libnccl.so
if nvcc -O2 -arch=native -I"$inc" -I. -o nccl nccl.cu -L. -lnccl -Xlinker -rpath="$(dirname "$ncclso")" -lcudart -lcuda -ldl; then
	# Each round gives one run of each form, Go's and the twin's (nccl 1:
	# one run; nccl 1 procs: one run in two processes): each Go benchmark
	# takes about 0.9 s a size at 0.5s (b.N's ramp, then 0.5 s), 13 sizes,
	# and a few seconds to start; the twin 0.6 s a size (warm-up, probe,
	# one run of 0.5 s); the paired ones (Run against the raw binding's
	# calls, up to 2 MiB) about 1.5 s a size. Three rounds took 270 s on
	# 4×H200 before the paired collective benchmarks came; they should
	# stay under 7 minutes.
	for i in 1 2 3; do
		./bench.test -test.run '^$' -test.bench '^Benchmark(Collective)?AllReduce(Blocking|Paired|Processes|ProcessesBlocking|BlockingPaired|ProcessesPaired)?$' -test.count 1 -test.benchtime 0.5s -test.v | tee -a "$log/go-nccl.txt" || status=1
		./nccl 1 | tee -a "$log/c-nccl.txt" || status=1
		./nccl 1 procs | tee -a "$log/c-nccl.txt" || status=1
	done
	# BenchmarkAllReducePaired's C side (c-ns/op) goes to the C results under its name.
	awk '$1 ~ /^BenchmarkAllReducePaired/ { for (i = 3; i < NF; i++) if ($(i+1) == "c-ns/op") print $1, $2, $i, "ns/op" }' \
		"$log/go-nccl.txt" >>"$log/c-nccl.txt"
else
	status=1
fi
fi

if [ "$part" = all ] || [ "$part" = mixed ]; then
# highlevel/internal/mixed's TestGPUMixed runs programs that mix every kind
# of highlevel's and linalg's work, one seed each, in several processes at
# once on the GPU, as issue 45's faults needed; then a few under -race and
# a few under compute-sanitizer's memcheck. A child that fails or dies is
# reported with its seeds and the end of its output; every child's whole
# output is in logs.tgz, under mixed/. Each stage has a bound of its own,
# and the defaults fit one 10-minute call on an H200, where a program of
# 4000 operations took 1.3 s alone, 1.5 to 2 s with 3 others beside it
# (400 in 4 processes: 3 to 4 minutes), 22 s under -race and 2 s under
# memcheck (2026-12-01).
# The knobs (a count of 0 leaves a stage out):
#   GOCUDA_MIXED_PROGRAMS (400) in GOCUDA_MIXED_PROCS (4) processes at once,
#   GOCUDA_MIXED_OPS (4000) operations each, GOCUDA_MIXED_SEED (0) the first
#   seed, GOCUDA_MIXED_TIMEOUT (360) seconds;
#   GOCUDA_MIXED_RACE_PROGRAMS (2) in GOCUDA_MIXED_RACE_PROCS (2) processes
#   under -race (about 40 s a program), GOCUDA_MIXED_RACE_TIMEOUT (100);
#   GOCUDA_MIXED_SANITIZER_PROGRAMS (3) of GOCUDA_MIXED_SANITIZER_OPS (4000)
#   operations under memcheck, GOCUDA_MIXED_SANITIZER_TIMEOUT (100);
#   GOCUDA_MIXED_COND_PROGRAMS (16) of the cond kind alone, in one process
#   (its while nodes fault beside other streams' and other processes' work
#   on driver 580: highlevel/testdata/whilefault.c),
#   GOCUDA_MIXED_COND_TIMEOUT (100).
echo "== highlevel/internal/mixed: every kind of work at once, several programs on one GPU"
mkdir -p "$log/mixed"
# mixed NAME SECONDS PROGRAMS COMMAND... runs TestGPUMixed's PROGRAMS with
# COMMAND, within SECONDS, into $log/NAME.log.
mixed() {
	local name=$1 limit=$2 n=$3
	shift 3
	[ "$n" -gt 0 ] || return 0
	echo "-- $name: $n programs"
	GOCUDA_MIXED_LOGDIR="$log/mixed" GOCUDA_MIXED_PROGRAMS=$n timeout "$limit" "$@" -test.run '^TestGPUMixed$' -test.v \
		-test.count=1 -test.timeout "$((limit - 10))s" >"$log/$name.log" 2>&1 || status=1
	grep -E '^\s*(--- |ok|FAIL|PASS)|child [0-9]+, seeds|mixed: seed .* hangs|ERROR SUMMARY|(programs|operations:) ' "$log/$name.log" | tail -40
}
mixed mixed "${GOCUDA_MIXED_TIMEOUT:-360}" "${GOCUDA_MIXED_PROGRAMS:-400}" \
	env GOCUDA_MIXED_PROCS="${GOCUDA_MIXED_PROCS:-4}" ./highlevel_internal_mixed.test
mixed mixed-cond "${GOCUDA_MIXED_COND_TIMEOUT:-100}" "${GOCUDA_MIXED_COND_PROGRAMS:-16}" \
	env GOCUDA_MIXED_ONLY=cond GOCUDA_MIXED_PROCS=1 ./highlevel_internal_mixed.test
mixed mixed-race "${GOCUDA_MIXED_RACE_TIMEOUT:-100}" "${GOCUDA_MIXED_RACE_PROGRAMS:-2}" \
	env GOCUDA_MIXED_PROCS="${GOCUDA_MIXED_RACE_PROCS:-2}" ./highlevel_internal_mixed_race.test
mixed mixed-sanitizer "${GOCUDA_MIXED_SANITIZER_TIMEOUT:-100}" "${GOCUDA_MIXED_SANITIZER_PROGRAMS:-3}" \
	env GOCUDA_MIXED_PROCS=1 GOCUDA_MIXED_OPS="${GOCUDA_MIXED_SANITIZER_OPS:-4000}" \
	compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 --print-limit 20 ./highlevel_internal_mixed.test
fi

if [ -e "$log/go.txt" ]; then
echo "== the table"
# bench-regen.txt was measured where the suite was built: the device
# machine has no Go.
title="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1), $(date +%Y-%m-%d)"
cat "$log"/go*.txt bench-regen.txt >"$log/all-go.txt" 2>/dev/null
cat "$log"/c.txt "$log"/c-nccl.txt >"$log/all-c.txt" 2>/dev/null
./benchtable -go "$log/all-go.txt" -c "$log/all-c.txt" \
	-cupy "$log/cupy.txt" -cudacore "$log/cudacore.txt" \
	-csv "$out/table.csv" -png "$out/table.png" -title "$title" | tee "$out/table.md" || status=1
fi

echo "== summary"
for l in "$log"/*.log; do
	[ -e "$l" ] || continue
	printf '%s: %d passed, %d failed, %d skipped\n' "$(basename "$l" .log)" \
		"$(grep -c -- '^--- PASS' "$l")" "$(grep -c -- '^--- FAIL' "$l")" "$(grep -c -- '^--- SKIP' "$l")"
done
# Only a few files come back from the device machine: pack the logs in one.
tar -C "$log" -czf "$out/logs.tgz" .
[ -e "$log/go.txt" ] && tar -C "$log" -czf "$out/results.tgz" $(cd "$log" && ls *.txt *.err)
exit $status
