// Package collective is NCCL's collectives on highlevel's devices, streams
// and arrays, for programs that use several GPUs: in one process, in one
// process per GPU, or on several hosts. It does what every NCCL program
// repeats: carries the unique id to every rank (a small TCP rendezvous
// configured as torchrun configures PyTorch's), maps Go element types to
// NCCL's, groups calls, holds the memory and streams a call names while it
// is queued, and watches for failures, aborting a communicator whose peer
// died rather than hanging.
//
// All the GPUs of one process:
//
//	comms, err := collective.NewComms(ctx, nil, nil) // one rank per device
//	...
//	err = collective.RunEach(comms, func(c *collective.Comm) error {
//		// a goroutine per rank: its arrays and stream on c.Device()
//		if err := collective.Run(collective.AllReduce(s, c, x, x, collective.Sum)); err != nil {
//			return err
//		}
//		return c.Wait(ctx, s)
//	})
//
// One rank of a job of several processes, started by torchrun or with its
// variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK):
//
//	cfg, err := collective.ConfigFromEnv()
//	c, err := collective.Join(ctx, cfg, highlevel.Device(cfg.LocalRank), nil)
//
// ConfigFromEnv, and Config.Check for a Config filled in by hand, refuse at
// once, with an error wrapping ErrConfig, what could only fail later: a
// MASTER_ADDR with a port (10.0.0.1:29500, [::1]:29500; the port goes in
// MASTER_PORT), a WORLD_SIZE outside 1 to math.MaxInt32 (NCCL counts ranks
// in a C int), a RANK outside the world. A bare IPv6 address (::1) or one
// in brackets ([::1]) is a host, and so is a name.
//
// # Calls
//
// AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, Send and Recv
// make a Call from a *highlevel.Stream, which comes first as in every call
// of highlevel's that queues work (nil: the legacy default stream of the
// communicator's device), a communicator, and highlevel.Arrays of an
// element type NCCL has (Elem: a type it lacks does not compile); Run
// queues one Call, or several as one NCCL group. The work runs on the
// stream in its order, so the stream's Wait, Done, Synchronize and events
// recorded after it work as for any other operation; Comm.Wait waits while
// watching the communicator. Arrays and streams must be on the
// communicator's device. A call is in place where send and recv are the
// same array (for AllGather, where send is recv's slice at the rank's
// place; for ReduceScatter, recv send's). Arrays that overlap otherwise,
// in one call or in the calls of one Run where one of them is written,
// are refused with ErrConfig: NCCL's result would be undefined.
//
// # Failure
//
// Communicators are non-blocking (NCCL's blocking = 0), and so are their
// collectives unless Options.Blocking asks for speed instead (see there):
// NCCL's calls return at once, and the package polls
// ncclCommGetAsyncError while NCCL works in the background, for no longer
// than the Options' Timeout.
// Comm.Wait does the same while the stream's work runs. An error of NCCL's
// or a Timeout passed aborts the communicator (ncclCommAbort): its
// collectives stop on the GPU, the waits for them return errors wrapping
// ErrAborted, and later calls return highlevel.ErrClosed. So a rank that
// dies, even by SIGKILL, leaves the others waiting no longer than their
// Timeout. RunEach aborts every communicator of the group as soon as one
// goroutine fails or panics. Comm.Close waits for the operations in
// progress, as highlevel's Close does; Comm.Abort does not.
//
// # Logs
//
// SetLogger, called before the first communicator, sends NCCL's debug
// output (NCCL_DEBUG, NCCL_DEBUG_FILE) to a *slog.Logger, at slog's
// levels, as highlevel.SetLogger does the driver's log; docs/logging.md
// in the repository says more.
//
// # Coming from PyTorch and CuPy
//
//	PyTorch / CuPy                           Go
//	dist.init_process_group("nccl")          cfg, _ := ConfigFromEnv(); Join(ctx, cfg, dev, opts)
//	init_process_group(timeout=...)          Options{Timeout: ...}
//	dist.all_reduce(t, op=ReduceOp.SUM)      Run(AllReduce(s, c, t, t, Sum))
//	dist.broadcast(t, src)                   Run(Broadcast(s, c, t, t, src))
//	dist.all_gather_into_tensor(out, t)      Run(AllGather(s, c, t, out))
//	dist.reduce_scatter_tensor(out, t)       Run(ReduceScatter(s, c, t, out, Sum))
//	dist.send / dist.recv                    Run(Send(s, c, t, peer)), Run(Recv(s, c, t, peer))
//	dist.batch_isend_irecv, ncclGroupStart   Run(call1, call2, ...)
//	dist.new_subgroups, ncclCommSplit        c.Split(ctx, color, key, opts)
//	dist.destroy_process_group               c.Close()
//	cupyx.distributed.NCCLBackend            Join (a TCP rendezvous, then NCCL)
//	cupy.cuda.nccl.NcclCommunicator.initAll  NewComms(ctx, devices, opts)
package collective
