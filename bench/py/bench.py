#!/usr/bin/env python3
"""Python twin of the Go benchmarks in ../ (and of their C twins in ../c/).

It times the same CUDA operations through CuPy or through NVIDIA's cuda.core
(with cuda.bindings for the rows cuda.core has no API for), and prints them in
Go's benchmark format, one line per repetition, so that the same parser can
put Go, C and Python side by side:

    BenchmarkGetDevice\t1000000\t123.45 ns/op
    BenchmarkH2DPinned\t20\t5432100.00 ns/op\t49417.00 MB/s

Usage (on the GPU machine):

    python3 bench.py cupy     > cupy.txt
    python3 bench.py cudacore > cudacore.txt

Options: --runs N (repetitions per row, default 5); --quick (iteration counts
divided by 100, for a smoke test); --bench REGEX (only rows whose name
matches, as go test -bench).

Timing: each row makes its objects (stream, kernel, buffers) once, runs one
warm-up loop of n/10 iterations, then times --runs loops of n iterations with
time.perf_counter_ns. A stream-based loop is "n calls, then one stream
synchronize, divided by n", as the Go and C versions do; rows named *Sync,
Graph100 and the copies synchronize every iteration. As timeit does, the
cyclic garbage collector is off while a loop is timed (reference counting
still frees every object at once). Attribute look-ups are bound to locals
before the loop, the usual way to write a hot loop in Python.

Lines starting with # are comments; rows that cannot run are reported on
stderr as "# skip <Name> <lib>: <reason>" and the script goes on. Only the
standard library, numpy and the library under test are needed; they are
imported when a library is chosen, not at import time.
"""

import argparse
import ctypes
import gc
import re
import sys
import time
from types import SimpleNamespace

MiB = 1 << 20
BIG = 256 * MiB  # bytes per copy / memset: 268435456

# Iterations per repetition, by row (Go name without "Benchmark").
N = {
    "GetDevice": 1_000_000,
    "CtxGetDevice": 1_000_000,
    "DeviceAttribute": 1_000_000,
    "LaunchEmpty": 100_000,
    "LaunchSync": 20_000,
    "PoolMallocFree": 200_000,
    "MallocAsyncFree": 100_000,
    "EventRecord": 200_000,
    "StreamCreateDestroy": 20_000,
    "Graph100": 2_000,
    "H2DPinned": 20,
    "D2HPinned": 20,
    "H2DPageable": 10,
    "D2HPageable": 10,
    "D2D": 50,
    "Memset": 50,
}

KERNEL_SRC = 'extern "C" __global__ void empty() {}\n'


class Skip(Exception):
    """A row the library has no way to run."""


def bench(name, fn, n, runs, nbytes=0):
    """Time fn(n), which runs n iterations (and its own stream synchronize).

    One warm-up call of n/10 iterations, then runs timed calls, each printed
    as one Go benchmark line; nbytes > 0 adds MB/s (1e6 bytes per second).
    """
    fn(max(1, n // 10))
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter_ns()
            fn(n)
            dt = time.perf_counter_ns() - t0
        finally:
            gc.enable()
        ns = dt / n
        line = f"Benchmark{name}\t{n}\t{ns:.2f} ns/op"
        if nbytes:
            line += f"\t{nbytes * 1e3 / ns:.2f} MB/s"  # bytes/op / (ns*1e-9) / 1e6
        print(line, flush=True)


def note(msg):
    print(f"# {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# CuPy
# ---------------------------------------------------------------------------


def cupy_setup():
    import numpy as np
    import cupy

    rt = cupy.cuda.runtime
    cupy.cuda.Device(0).use()
    rt.setDevice(0)
    x = cupy.zeros(1, dtype=cupy.uint8)  # creates the context, allocates once
    rt.deviceSynchronize()
    del x
    name = rt.getDeviceProperties(0)["name"]
    if isinstance(name, bytes):
        name = name.decode()
    print(f"# cupy {cupy.__version__} on {name}", flush=True)
    extra = []
    for what, f in (("CUDA runtime", "runtimeGetVersion"), ("driver", "driverGetVersion")):
        try:
            extra.append(f"{what} {getattr(rt, f)()}")
        except Exception:
            pass
    extra.append(f"numpy {np.__version__}")
    print("# cupy: " + ", ".join(extra), flush=True)
    return SimpleNamespace(cupy=cupy, np=np, rt=rt, _kernel=None)


def cupy_kernel(env):
    if env._kernel is None:
        k = env.cupy.RawKernel(KERNEL_SRC, "empty")
        k((1,), (1,), ())  # compile and load outside any timing or capture
        env.rt.deviceSynchronize()
        env._kernel = k
    return env._kernel


def cupy_stream(env):
    return env.cupy.cuda.Stream(non_blocking=False)


def cupy_get_device(env, n, runs):
    get = env.rt.getDevice

    def loop(n):
        for _ in range(n):
            get()

    bench("GetDevice", loop, n, runs)


def cupy_ctx_get_device(env, n, runs):
    drv = env.cupy.cuda.driver
    get = getattr(drv, "ctxGetDevice", None)
    if get is None:
        raise Skip("cupy.cuda.driver has no ctxGetDevice")
    get()

    def loop(n):
        for _ in range(n):
            get()

    bench("CtxGetDevice", loop, n, runs)


def cupy_device_attribute(env, n, runs):
    attr = env.rt.deviceGetAttribute
    mp = env.rt.cudaDevAttrMultiProcessorCount

    def loop(n):
        for _ in range(n):
            attr(mp, 0)

    bench("DeviceAttribute", loop, n, runs)


def cupy_launch_empty(env, n, runs):
    k = cupy_kernel(env)
    s = cupy_stream(env)
    g, b, a = (1,), (1,), ()

    def loop(n):
        for _ in range(n):
            k(g, b, a, stream=s)
        s.synchronize()

    bench("LaunchEmpty", loop, n, runs)


def cupy_launch_sync(env, n, runs):
    k = cupy_kernel(env)
    s = cupy_stream(env)
    g, b, a = (1,), (1,), ()
    sync = s.synchronize

    def loop(n):
        for _ in range(n):
            k(g, b, a, stream=s)
            sync()

    bench("LaunchSync", loop, n, runs)


def cupy_pool_malloc_free(env, n, runs):
    pool = env.cupy.cuda.MemoryPool()
    malloc = pool.malloc

    def loop(n):
        for _ in range(n):
            m = malloc(MiB)
            del m  # back to the pool

    try:
        bench("PoolMallocFree", loop, n, runs)
    finally:
        pool.free_all_blocks()


def cupy_malloc_async_free(env, n, runs):
    pool = env.cupy.cuda.MemoryAsyncPool()
    malloc = pool.malloc
    s = cupy_stream(env)

    def loop(n):
        with s:  # MemoryAsyncPool allocates and frees on the current stream
            for _ in range(n):
                m = malloc(MiB)
                del m  # cudaFreeAsync on s
        s.synchronize()

    bench("MallocAsyncFree", loop, n, runs)


def cupy_event_record(env, n, runs):
    s = cupy_stream(env)
    e = env.cupy.cuda.Event()  # timing enabled: cudaEventCreate's default, as in Go and C
    rec = e.record

    def loop(n):
        for _ in range(n):
            rec(s)
        s.synchronize()

    bench("EventRecord", loop, n, runs)


def cupy_stream_create_destroy(env, n, runs):
    Stream = env.cupy.cuda.Stream
    probe = Stream(non_blocking=False)
    has_close = callable(getattr(probe, "close", None))
    del probe

    def loop_close(n):
        for _ in range(n):
            Stream(non_blocking=False).close()

    def loop_del(n):
        for _ in range(n):
            st = Stream(non_blocking=False)
            del st  # refcount drop: Stream.__del__ calls cudaStreamDestroy

    bench("StreamCreateDestroy", loop_close if has_close else loop_del, n, runs)


def cupy_graph100(env, n, runs):
    k = cupy_kernel(env)
    s = cupy_stream(env)
    g1, b1, a = (1,), (1,), ()
    s.begin_capture()
    try:
        for _ in range(100):
            k(g1, b1, a, stream=s)
    finally:
        graph = s.end_capture()
    try:
        graph.upload(s)
    except Exception:
        pass
    s.synchronize()
    launch = graph.launch
    sync = s.synchronize

    def loop(n):
        for _ in range(n):
            launch(s)
            sync()

    bench("Graph100", loop, n, runs)


def _cupy_copy_rows(env, name, n, runs, pinned, to_device):
    cupy, rt = env.cupy, env.rt
    s = cupy_stream(env)
    d = cupy.empty(BIG, dtype=cupy.uint8)
    d.fill(1)
    if pinned:
        h = cupy.cuda.alloc_pinned_memory(BIG)
        ctypes.memset(h.ptr, 1, BIG)  # touch once
        kind = rt.memcpyHostToDevice if to_device else rt.memcpyDeviceToHost
        dst, src = (d.data.ptr, h.ptr) if to_device else (h.ptr, d.data.ptr)
        copy, sp, sync = rt.memcpyAsync, s.ptr, s.synchronize

        def loop(n):
            for _ in range(n):
                copy(dst, src, BIG, kind, sp)
                sync()

    else:
        h = env.np.ones(BIG, dtype=env.np.uint8)  # pageable, touched once
        sync = s.synchronize
        if to_device:
            put = d.set

            def loop(n):
                for _ in range(n):
                    put(h, s)
                    sync()

        else:
            get = d.get

            def loop(n):
                for _ in range(n):
                    get(stream=s, out=h)  # blocking=True: waits for s itself
                    sync()

    rt.deviceSynchronize()
    bench(name, loop, n, runs, BIG)
    del d, h


def cupy_h2d_pinned(env, n, runs):
    _cupy_copy_rows(env, "H2DPinned", n, runs, pinned=True, to_device=True)


def cupy_d2h_pinned(env, n, runs):
    _cupy_copy_rows(env, "D2HPinned", n, runs, pinned=True, to_device=False)


def cupy_h2d_pageable(env, n, runs):
    _cupy_copy_rows(env, "H2DPageable", n, runs, pinned=False, to_device=True)


def cupy_d2h_pageable(env, n, runs):
    _cupy_copy_rows(env, "D2HPageable", n, runs, pinned=False, to_device=False)


def cupy_d2d(env, n, runs):
    cupy, rt = env.cupy, env.rt
    s = cupy_stream(env)
    src = cupy.ones(BIG, dtype=cupy.uint8)
    dst = cupy.zeros(BIG, dtype=cupy.uint8)
    rt.deviceSynchronize()
    copy, d, sp, sync = rt.memcpyAsync, dst.data.ptr, s.ptr, s.synchronize
    sptr, kind = src.data.ptr, rt.memcpyDeviceToDevice

    def loop(n):
        for _ in range(n):
            copy(d, sptr, BIG, kind, sp)
            sync()

    bench("D2D", loop, n, runs, BIG)


def cupy_memset(env, n, runs):
    cupy, rt = env.cupy, env.rt
    s = cupy_stream(env)
    d = cupy.empty(BIG, dtype=cupy.uint8)
    rt.deviceSynchronize()
    memset, p, sp, sync = rt.memsetAsync, d.data.ptr, s.ptr, s.synchronize

    def loop(n):
        for _ in range(n):
            memset(p, 0, BIG, sp)
            sync()

    bench("Memset", loop, n, runs, BIG)


CUPY_ROWS = [
    ("GetDevice", cupy_get_device),
    ("CtxGetDevice", cupy_ctx_get_device),
    ("DeviceAttribute", cupy_device_attribute),
    ("LaunchEmpty", cupy_launch_empty),
    ("LaunchSync", cupy_launch_sync),
    ("PoolMallocFree", cupy_pool_malloc_free),
    ("MallocAsyncFree", cupy_malloc_async_free),
    ("EventRecord", cupy_event_record),
    ("StreamCreateDestroy", cupy_stream_create_destroy),
    ("Graph100", cupy_graph100),
    ("H2DPinned", cupy_h2d_pinned),
    ("D2HPinned", cupy_d2h_pinned),
    ("H2DPageable", cupy_h2d_pageable),
    ("D2HPageable", cupy_d2h_pageable),
    ("D2D", cupy_d2d),
    ("Memset", cupy_memset),
]


# ---------------------------------------------------------------------------
# cuda.core (+ cuda.bindings)
# ---------------------------------------------------------------------------


def _version(mod, dist):
    v = getattr(mod, "__version__", None)
    if v:
        return v
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return "unknown"


def _ck(ret):
    """Check a cuda.bindings result tuple (err, *values); return the values."""
    err = ret[0]
    if int(err) != 0:
        raise RuntimeError(f"cuda.bindings call failed: {err!r}")
    rest = ret[1:]
    return rest[0] if len(rest) == 1 else (rest or None)


def cudacore_setup():
    import numpy as np
    import cuda.core as core

    if not hasattr(core, "Device"):  # cuda.core < 0.5: everything lives in .experimental
        import cuda.core.experimental as core
    import cuda.bindings
    from cuda.bindings import driver, runtime

    dev = core.Device(0)
    dev.set_current()
    cc = dev.compute_capability
    SOpt = getattr(core, "StreamOptions", None)
    sopts = SOpt(nonblocking=False) if SOpt is not None else None
    env = SimpleNamespace(
        core=core, np=np, dev=dev, drv=driver, rt=runtime,
        arch=f"sm_{cc[0]}{cc[1]}", sopts=sopts, _kernel=None,
    )
    s = cudacore_stream(env)
    buf = dev.memory_resource.allocate(MiB, stream=s)  # allocate once
    buf.close(s)
    s.sync()
    s.close()
    _ck(runtime.cudaSetDevice(0))  # the runtime shares the primary context
    _ck(runtime.cudaFree(0))
    ver = _version(core, "cuda-core")
    print(f"# cuda.core {ver} on {dev.name}", flush=True)
    print(
        f"# cudacore: cuda.bindings {_version(cuda.bindings, 'cuda-bindings')}, "
        f"numpy {np.__version__}, module {core.__name__}; GetDevice, CtxGetDevice and the "
        "pageable copies go through cuda.bindings (cuda.core has no such call)",
        flush=True,
    )
    return env


def cudacore_stream(env):
    """A blocking stream (flags 0), as cudaStreamCreate makes in Go and C.

    cuda.core's own default is a non-blocking stream.
    """
    if env.sopts is not None:
        return env.dev.create_stream(options=env.sopts)
    return env.dev.create_stream()


def cudacore_kernel(env):
    if env._kernel is None:
        core = env.core
        opts = None
        POpt = getattr(core, "ProgramOptions", None)
        if POpt is not None:
            opts = POpt(arch=env.arch)
        prog = core.Program(KERNEL_SRC, code_type="c++", options=opts)
        k = prog.compile("cubin").get_kernel("empty")
        cfg = core.LaunchConfig(grid=1, block=1)
        s = cudacore_stream(env)
        core.launch(s, cfg, k)  # load outside any timing or capture
        s.sync()
        s.close()
        env._kernel = (k, cfg)
    return env._kernel


def cudacore_get_device(env, n, runs):
    get = env.rt.cudaGetDevice
    ok = env.rt.cudaError_t.cudaSuccess

    def loop(n):
        for _ in range(n):
            err, _d = get()
            if err != ok:
                raise RuntimeError(repr(err))

    bench("GetDevice", loop, n, runs)


def cudacore_ctx_get_device(env, n, runs):
    get = env.drv.cuCtxGetDevice
    ok = env.drv.CUresult.CUDA_SUCCESS
    _ck(get())

    def loop(n):
        for _ in range(n):
            err, _d = get()
            if err != ok:
                raise RuntimeError(repr(err))

    bench("CtxGetDevice", loop, n, runs)


def cudacore_device_attribute(env, n, runs):
    # Recent cuda.core caches this attribute after the first read
    # (DeviceProperties._get_cached_attribute), so this may time a cached
    # Python look-up rather than cuDeviceGetAttribute.
    dev = env.dev
    dev.properties.multiprocessor_count

    def loop(n):
        for _ in range(n):
            dev.properties.multiprocessor_count

    bench("DeviceAttribute", loop, n, runs)


def cudacore_launch_empty(env, n, runs):
    k, cfg = cudacore_kernel(env)
    s = cudacore_stream(env)
    launch = env.core.launch

    def loop(n):
        for _ in range(n):
            launch(s, cfg, k)
        s.sync()

    try:
        bench("LaunchEmpty", loop, n, runs)
    finally:
        s.close()


def cudacore_launch_sync(env, n, runs):
    k, cfg = cudacore_kernel(env)
    s = cudacore_stream(env)
    launch, sync = env.core.launch, s.sync

    def loop(n):
        for _ in range(n):
            launch(s, cfg, k)
            sync()

    try:
        bench("LaunchSync", loop, n, runs)
    finally:
        s.close()


def cudacore_pool_malloc_free(env, n, runs):
    raise Skip("no caching pool of its own: its memory resource is CUDA's "
               "stream-ordered pool, timed as MallocAsyncFree")


def cudacore_malloc_async_free(env, n, runs):
    s = cudacore_stream(env)
    alloc = env.dev.memory_resource.allocate

    def loop(n):
        for _ in range(n):
            b = alloc(MiB, stream=s)
            b.close(s)
        s.sync()

    try:
        bench("MallocAsyncFree", loop, n, runs)
    finally:
        s.close()


def cudacore_event_record(env, n, runs):
    core = env.core
    s = cudacore_stream(env)
    EOpt = getattr(core, "EventOptions", None)
    opts = None
    if EOpt is not None:  # timing on, as cudaEventCreate; the field was renamed in 1.x
        try:
            opts = EOpt(timing_enabled=True)
        except TypeError:
            opts = EOpt(enable_timing=True)
    if hasattr(env.dev, "create_event"):
        e = env.dev.create_event(options=opts)
    else:
        e = s.record(options=opts)
    rec = s.record

    def loop(n):
        for _ in range(n):
            rec(e)
        s.sync()

    try:
        bench("EventRecord", loop, n, runs)
    finally:
        s.sync()
        if hasattr(e, "close"):
            e.close()
        s.close()


def cudacore_stream_create_destroy(env, n, runs):
    create, opts = env.dev.create_stream, env.sopts

    def loop(n):
        for _ in range(n):
            create(options=opts).close()

    bench("StreamCreateDestroy", loop, n, runs)


def cudacore_graph100(env, n, runs):
    k, cfg = cudacore_kernel(env)
    launch = env.core.launch
    s = cudacore_stream(env)
    if hasattr(s, "create_graph_builder"):
        gb = s.create_graph_builder()
    elif hasattr(env.dev, "create_graph_builder"):
        gb = env.dev.create_graph_builder()
    else:
        s.close()
        raise Skip("no GraphBuilder (Stream/Device.create_graph_builder) in this cuda.core")
    gb.begin_building()
    try:
        for _ in range(100):
            launch(gb, cfg, k)
    finally:
        gb.end_building()
    graph = gb.complete()
    try:
        graph.upload(s)
    except Exception:
        pass
    s.sync()
    glaunch, sync = graph.launch, s.sync

    def loop(n):
        for _ in range(n):
            glaunch(s)
            sync()

    try:
        bench("Graph100", loop, n, runs)
    finally:
        s.sync()
        for o in (graph, gb, s):
            try:
                o.close()
            except Exception:
                pass


def _cudacore_pinned(env, name, n, runs, to_device):
    core, rt = env.core, env.rt
    s = cudacore_stream(env)
    d = env.dev.memory_resource.allocate(BIG, stream=s)
    PMR = getattr(core, "LegacyPinnedMemoryResource", None)
    sync = s.sync
    if PMR is not None:
        h = PMR().allocate(BIG, stream=s)
        free_h = lambda: h.close(s)  # noqa: E731
        hptr = int(h.handle)
        copy = d.copy_from if to_device else d.copy_to

        def loop(n):
            for _ in range(n):
                copy(h, stream=s)
                sync()

    else:
        note(f"{name} cudacore: no LegacyPinnedMemoryResource, using cudaMallocHost + cudaMemcpyAsync")
        hptr = _ck(rt.cudaMallocHost(BIG))
        free_h = lambda: _ck(rt.cudaFreeHost(hptr))  # noqa: E731
        copy, sh = rt.cudaMemcpyAsync, s.handle
        dptr = int(d.handle)
        K = rt.cudaMemcpyKind
        kind = K.cudaMemcpyHostToDevice if to_device else K.cudaMemcpyDeviceToHost
        dst, src = (dptr, hptr) if to_device else (hptr, dptr)

        def loop(n):
            for _ in range(n):
                _ck(copy(dst, src, BIG, kind, sh))
                sync()

    try:
        ctypes.memset(hptr, 1, BIG)  # touch once
        _fill(env, d, 1, s)
        s.sync()
        bench(name, loop, n, runs, BIG)
    finally:
        s.sync()
        free_h()
        d.close(s)
        s.sync()
        s.close()


def cudacore_h2d_pinned(env, n, runs):
    _cudacore_pinned(env, "H2DPinned", n, runs, to_device=True)


def cudacore_d2h_pinned(env, n, runs):
    _cudacore_pinned(env, "D2HPinned", n, runs, to_device=False)


def _cudacore_pageable(env, name, n, runs, to_device):
    rt, np = env.rt, env.np
    s = cudacore_stream(env)
    d = env.dev.memory_resource.allocate(BIG, stream=s)
    h = np.ones(BIG, dtype=np.uint8)  # pageable, touched once
    hptr, dptr = h.ctypes.data, int(d.handle)
    K = rt.cudaMemcpyKind
    kind = K.cudaMemcpyHostToDevice if to_device else K.cudaMemcpyDeviceToHost
    dst, src = (dptr, hptr) if to_device else (hptr, dptr)
    copy, sh, sync = rt.cudaMemcpyAsync, s.handle, s.sync
    ok = rt.cudaError_t.cudaSuccess

    def loop(n):
        for _ in range(n):
            (err,) = copy(dst, src, BIG, kind, sh)
            if err != ok:
                raise RuntimeError(repr(err))
            sync()

    try:
        _fill(env, d, 1, s)
        s.sync()
        bench(name, loop, n, runs, BIG)
    finally:
        s.sync()
        d.close(s)
        s.sync()
        s.close()


def cudacore_h2d_pageable(env, n, runs):
    _cudacore_pageable(env, "H2DPageable", n, runs, to_device=True)


def cudacore_d2h_pageable(env, n, runs):
    _cudacore_pageable(env, "D2HPageable", n, runs, to_device=False)


def cudacore_d2d(env, n, runs):
    s = cudacore_stream(env)
    mr = env.dev.memory_resource
    src = mr.allocate(BIG, stream=s)
    dst = mr.allocate(BIG, stream=s)
    copy_to, sync = src.copy_to, s.sync

    def loop(n):
        for _ in range(n):
            copy_to(dst, stream=s)
            sync()

    try:
        _fill(env, src, 1, s)
        s.sync()
        bench("D2D", loop, n, runs, BIG)
    finally:
        s.sync()
        src.close(s)
        dst.close(s)
        s.sync()
        s.close()


def _fill_fn(env, buf, s):
    """A one-argument callable that memsets buf on s: Buffer.fill where this
    cuda.core has it (fill(value, *, stream) or the older fill(value, width,
    *, stream)), else cuda.bindings' cuMemsetD8Async; and its description."""
    fill = getattr(buf, "fill", None)
    if fill is not None:
        try:
            fill(0, stream=s)
            s.sync()
            return (lambda v: fill(v, stream=s)), "Buffer.fill(v, stream=s)"
        except TypeError:
            fill(0, 1, stream=s)
            s.sync()
            return (lambda v: fill(v, 1, stream=s)), "Buffer.fill(v, 1, stream=s)"
    memset, ptr, sh = env.drv.cuMemsetD8Async, int(buf.handle), s.handle
    size = buf.size
    return (lambda v: _ck(memset(ptr, v, size, sh))), "cuda.bindings cuMemsetD8Async"


def _fill(env, buf, value, s):
    _fill_fn(env, buf, s)[0](value)


def cudacore_memset(env, n, runs):
    s = cudacore_stream(env)
    d = env.dev.memory_resource.allocate(BIG, stream=s)
    try:
        fill, how = _fill_fn(env, d, s)
        if how != "Buffer.fill(v, stream=s)":
            note(f"Memset cudacore: timed through {how}")
        sync = s.sync

        def loop(n):
            for _ in range(n):
                fill(0)
                sync()

        s.sync()
        bench("Memset", loop, n, runs, BIG)
    finally:
        s.sync()
        d.close(s)
        s.sync()
        s.close()


CUDACORE_ROWS = [
    ("GetDevice", cudacore_get_device),
    ("CtxGetDevice", cudacore_ctx_get_device),
    ("DeviceAttribute", cudacore_device_attribute),
    ("LaunchEmpty", cudacore_launch_empty),
    ("LaunchSync", cudacore_launch_sync),
    ("PoolMallocFree", cudacore_pool_malloc_free),
    ("MallocAsyncFree", cudacore_malloc_async_free),
    ("EventRecord", cudacore_event_record),
    ("StreamCreateDestroy", cudacore_stream_create_destroy),
    ("Graph100", cudacore_graph100),
    ("H2DPinned", cudacore_h2d_pinned),
    ("D2HPinned", cudacore_d2h_pinned),
    ("H2DPageable", cudacore_h2d_pageable),
    ("D2HPageable", cudacore_d2h_pageable),
    ("D2D", cudacore_d2d),
    ("Memset", cudacore_memset),
]

LIBS = {
    "cupy": (cupy_setup, CUPY_ROWS),
    "cudacore": (cudacore_setup, CUDACORE_ROWS),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("lib", choices=sorted(LIBS), help="library to time")
    ap.add_argument("--runs", type=int, default=5, help="repetitions per row (default 5)")
    ap.add_argument("--quick", action="store_true", help="iteration counts / 100 (smoke test)")
    ap.add_argument("--bench", default=".", metavar="REGEX", help="only rows matching REGEX")
    args = ap.parse_args(argv)

    setup, rows = LIBS[args.lib]
    try:
        env = setup()
    except Exception as e:
        note(f"skip all {args.lib}: setup failed: {type(e).__name__}: {e}")
        return 1
    pick = re.compile(args.bench)
    for name, row in rows:
        if not pick.search(name):
            continue
        n = N[name] // 100 if args.quick else N[name]
        try:
            row(env, max(1, n), args.runs)
        except Skip as e:
            note(f"skip {name} {args.lib}: {e}")
        except Exception as e:
            msg = " ".join(f"{type(e).__name__}: {e}".split())
            note(f"skip {name} {args.lib}: {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
