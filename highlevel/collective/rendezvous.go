package collective

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// The rendezvous is a small TCP exchange, the part of torchrun's TCP store
// that NCCL needs: rank 0 listens, every other rank connects (retrying
// until the deadline: the root may start last), says who it is, and waits;
// once every rank has come, the root sends each the payload (NCCL's unique
// id) and each acknowledges it. Every read and write runs under the
// deadline, so a rank that never comes, or dies, or a root that is
// something else, ends in an error rather than a hang.
//
// A hello is magic, world size, rank (4 bytes each, big-endian, after the
// magic); a reply is magic, a status byte, a 4-byte length and that many
// bytes: the payload (statusOK) or a message; an acknowledgement is one
// byte, ackByte.

var magic = [8]byte{'g', 'o', 'c', 'u', 'd', 'a', 'r', '1'}

const (
	statusOK byte = iota
	statusWorldSize
	statusDuplicate
	statusConfig
	statusPeerClosed
	statusMissing
	statusProtocol
	statusRootFailed

	ackByte = 0x06

	maxPayload = 1 << 20
	maxMessage = 4 << 10

	// maxMissing bounds RendezvousError.Missing, whose world may have
	// math.MaxInt32 ranks: 8 MiB of ints.
	maxMissing = 1 << 20

	helloSize = len(magic) + 8
)

// statusErr maps a status of the wire to our sentinel, and back.
var statusErr = map[byte]error{
	statusWorldSize:  ErrWorldSize,
	statusDuplicate:  ErrDuplicateRank,
	statusConfig:     ErrConfig,
	statusPeerClosed: ErrPeerClosed,
	statusMissing:    ErrMissingRanks,
	statusProtocol:   ErrProtocol,
	statusRootFailed: ErrAborted,
}

func errStatus(err error) byte {
	for s, e := range statusErr {
		if errors.Is(err, e) {
			return s
		}
	}
	return statusRootFailed
}

// retryMin and retryMax bound the wait between a rank's attempts to reach
// the root.
const (
	retryMin = 20 * time.Millisecond
	retryMax = time.Second
)

// acceptRetryMin and acceptRetryMax bound the root's wait after an accept
// that failed for a while (too few file descriptors, buffers), as net/http's
// Server.Serve waits.
const (
	acceptRetryMin = 5 * time.Millisecond
	acceptRetryMax = time.Second
)

// temporary reports whether err, an error of Accept, may pass: a lack of
// file descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), a
// connection aborted before it was accepted, or an error that says it is
// temporary, as net/http's Server.Serve takes them.
func temporary(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, errno) {
			return true
		}
	}
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// Rendezvous brings the WorldSize processes of a job together through the
// root rank's address in cfg, and returns the payload the root's payload
// function made, the same bytes in every rank: NCCL's unique id, for
// Join. Only the root (rank 0) calls payload, once, after it has begun to
// listen; the other ranks pass nil. The root waits until every other rank
// has connected and received the payload; the others retry connecting
// until the root listens. cfg.Timeout and ctx bound all of it. The root
// goes on accepting after an error that may pass (EMFILE while other
// connections hold the file descriptors, ENFILE, ENOBUFS, ENOMEM,
// ECONNABORTED), waiting 5 ms, then twice as long each time up to 1 s, as
// net/http's Server.Serve does; another error of its listener ends the
// rendezvous at once. Its memory grows with the ranks that come, not with
// cfg.WorldSize.
//
// Its errors are *RendezvousError, wrapping ErrConfig for a bad cfg,
// ErrAddrInUse where the root cannot listen, ErrWorldSize and
// ErrDuplicateRank where the ranks disagree (the root then fails too, and
// tells every rank connected), ErrMissingRanks where ranks did not come
// in time (the error lists them at the root), ErrRootUnreachable where the
// root did not listen in time, ErrPeerClosed where a rank or the root went
// away, and ErrProtocol where something else answered; with ctx's error
// where ctx ended it.
func Rendezvous(ctx context.Context, cfg Config, payload func() ([]byte, error)) ([]byte, error) {
	return rendezvous(ctx, cfg, payload, nil)
}

// rendezvous is Rendezvous; the root listens on ln where it is not nil.
func rendezvous(ctx context.Context, cfg Config, payload func() ([]byte, error), ln net.Listener) (_ []byte, err error) {
	defer func() {
		if err != nil {
			if _, ok := err.(*RendezvousError); !ok {
				err = &RendezvousError{Rank: cfg.Rank, WorldSize: cfg.WorldSize, Addr: cfg.rootAddr(), Err: err}
			}
		}
	}()
	if ctx == nil {
		return nil, fmt.Errorf("%w: nil context", ErrConfig)
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cfg.Rank == 0 {
		if payload == nil {
			return nil, fmt.Errorf("%w: no payload function at the root", ErrConfig)
		}
		return root(ctx, &cfg, payload, ln)
	}
	return join(ctx, &cfg)
}

// A peer is one connection at the root.
type peer struct {
	conn net.Conn
	rank int
}

// A peerEvent is what a connection's reader tells the root: a hello, or,
// after it, the acknowledgement or the end of the connection.
type peerEvent struct {
	p         *peer
	hello     bool
	worldSize int
	ack       bool
	err       error
}

// root is rank 0's side.
func root(ctx context.Context, cfg *Config, payload func() ([]byte, error), ln net.Listener) ([]byte, error) {
	if ln == nil {
		addr, err := cfg.bindAddr()
		if err != nil {
			return nil, err
		}
		var lc net.ListenConfig
		if ln, err = lc.Listen(ctx, "tcp", addr); err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, wrapf(ErrAddrInUse, err, "listening on %s", addr)
			}
			return nil, fmt.Errorf("listening on %s: %w", addr, err)
		}
	}
	defer ln.Close()
	data, err := payload()
	if err != nil {
		return nil, fmt.Errorf("making the payload: %w", err)
	}
	if len(data) > maxPayload {
		return nil, fmt.Errorf("%w: a payload of %d bytes, more than %d", ErrConfig, len(data), maxPayload)
	}
	if cfg.WorldSize == 1 {
		return data, nil
	}

	quit := make(chan struct{})
	defer close(quit)
	events := make(chan peerEvent)
	send := func(ev peerEvent) bool {
		select {
		case events <- ev:
			return true
		case <-quit:
			return false
		}
	}
	var conns []net.Conn // every connection accepted, closed at the end
	connCh := make(chan net.Conn)
	acceptErr := make(chan error, 1) // the error that ended the accepts
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// Closing the listener and the connections ends the goroutines'
	// blocked calls when ctx ends; the deadlines bound the rest.
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	go func() {
		var wait time.Duration
		for {
			c, err := ln.Accept()
			if err != nil {
				// An error that may pass (EMFILE while other connections
				// hold the descriptors) does not end the accepts: the
				// ranks that come later would find nobody to take them.
				if temporary(err) && ctx.Err() == nil {
					wait = min(max(2*wait, acceptRetryMin), acceptRetryMax)
					timer := time.NewTimer(wait)
					select {
					case <-timer.C:
						continue
					case <-ctx.Done():
						timer.Stop()
					case <-quit:
						timer.Stop()
					}
				}
				acceptErr <- err
				return
			}
			wait = 0
			select {
			case connCh <- c:
			case <-quit:
				c.Close()
				return
			}
			go func() {
				p := &peer{conn: c, rank: -1}
				// A backstop: the root's loop ends at ctx's deadline
				// and closes the connection.
				if dl, ok := ctx.Deadline(); ok {
					c.SetDeadline(dl.Add(time.Second))
				}
				var h [helloSize]byte
				if _, err := io.ReadFull(c, h[:]); err != nil || [8]byte(h[:8]) != magic {
					// Not ours (a port scanner, a health check): dropped.
					c.Close()
					return
				}
				ws := int(int32(binary.BigEndian.Uint32(h[8:])))
				p.rank = int(int32(binary.BigEndian.Uint32(h[12:])))
				if !send(peerEvent{p: p, hello: true, worldSize: ws}) {
					return
				}
				var b [1]byte
				_, err := io.ReadFull(c, b[:])
				send(peerEvent{p: p, ack: err == nil && b[0] == ackByte, err: err})
			}()
		}
	}()

	// peers grows with the ranks that come, not with the world, which
	// may be of math.MaxInt32 ranks.
	peers := make(map[int]*peer)
	// fail tells every peer that joined why the rendezvous failed, and
	// offender, when not nil, its own error.
	fail := func(err error, offender *peer, offenderErr error) error {
		for _, p := range peers {
			if p != offender {
				writeReply(p.conn, errStatus(err), []byte(bare(err)))
			}
		}
		if offender != nil {
			writeReply(offender.conn, errStatus(offenderErr), []byte(bare(offenderErr)))
		}
		return err
	}
	missing := func() error {
		// The lowest maxMissing ranks that did not come; n in all.
		n := cfg.WorldSize - 1 - len(peers)
		var missing []int
		for r := 1; r < cfg.WorldSize && len(missing) < min(n, maxMissing); r++ {
			if peers[r] == nil {
				missing = append(missing, r)
			}
		}
		err := wrapf(ErrMissingRanks, ctx.Err(), "%d of %d ranks did not join: %s", n, cfg.WorldSize, rankList(missing, n))
		fail(err, nil, nil)
		return &RendezvousError{Rank: 0, WorldSize: cfg.WorldSize, Addr: cfg.rootAddr(), Missing: missing, Err: err}
	}
	for len(peers) < cfg.WorldSize-1 {
		select {
		case c := <-connCh:
			conns = append(conns, c)
		case ev := <-events:
			p := ev.p
			if !ev.hello {
				if ev.err == nil {
					return nil, fail(wrapf(ErrProtocol, nil, "rank %d at %v sent data before its turn", p.rank, p.conn.RemoteAddr()), p, wrapf(ErrProtocol, nil, "data sent before the root's reply"))
				}
				if ctx.Err() != nil { // the connection ended with ctx
					return nil, missing()
				}
				if peers[p.rank] == p {
					delete(peers, p.rank)
				}
				return nil, fail(wrapf(ErrPeerClosed, ev.err, "rank %d at %v left before every rank had joined", p.rank, p.conn.RemoteAddr()), nil, nil)
			}
			switch {
			case ev.worldSize != cfg.WorldSize:
				return nil, fail(
					wrapf(ErrWorldSize, nil, "rank %d at %v has a world size of %d, the root %d", p.rank, p.conn.RemoteAddr(), ev.worldSize, cfg.WorldSize),
					p, wrapf(ErrWorldSize, nil, "the root has a world size of %d, this rank %d", cfg.WorldSize, ev.worldSize))
			case p.rank == 0 || peers[p.rank] != nil:
				from := "the root"
				if p.rank != 0 {
					from = peers[p.rank].conn.RemoteAddr().String()
				}
				return nil, fail(
					wrapf(ErrDuplicateRank, nil, "rank %d claimed by %v and by %s", p.rank, p.conn.RemoteAddr(), from),
					p, wrapf(ErrDuplicateRank, nil, "rank %d already taken by %s", p.rank, from))
			case p.rank < 0 || p.rank >= cfg.WorldSize:
				return nil, fail(
					wrapf(ErrConfig, nil, "a process at %v claims rank %d of %d", p.conn.RemoteAddr(), p.rank, cfg.WorldSize),
					p, wrapf(ErrConfig, nil, "rank %d is outside the world of %d ranks", p.rank, cfg.WorldSize))
			}
			peers[p.rank] = p
		case err := <-acceptErr:
			if ctx.Err() != nil { // ctx closed the listener
				return nil, missing()
			}
			return nil, fail(fmt.Errorf("accepting connections on %v: %w", ln.Addr(), err), nil, nil)
		case <-ctx.Done():
			return nil, missing()
		}
	}
	for _, p := range peers {
		if err := writeReply(p.conn, statusOK, data); err != nil {
			return nil, fail(wrapf(ErrPeerClosed, err, "sending the payload to rank %d at %v", p.rank, p.conn.RemoteAddr()), nil, nil)
		}
	}
	for acked := 0; acked < len(peers); {
		select {
		case c := <-connCh:
			// Too late to join: every rank has.
			conns = append(conns, c)
			c.Close()
		case ev := <-events:
			p := ev.p
			switch {
			case ev.hello:
				ev.p.conn.Close() // a latecomer; the world is complete
			case ev.ack:
				acked++
			default:
				return nil, wrapf(ErrPeerClosed, ev.err, "rank %d at %v did not acknowledge the payload", p.rank, p.conn.RemoteAddr())
			}
		case <-ctx.Done():
			return nil, wrapf(ErrPeerClosed, ctx.Err(), "waiting for the ranks' acknowledgements")
		}
	}
	return data, nil
}

// rankList writes ranks, the first of n, as "1, 2, 5"; at most 32 of
// them.
func rankList(ranks []int, n int) string {
	s := ""
	for i, r := range ranks {
		if i == 32 {
			return s + fmt.Sprintf(", ... (%d more)", n-32)
		}
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(r)
	}
	return s
}

func writeReply(c net.Conn, status byte, data []byte) error {
	if status != statusOK && len(data) > maxMessage {
		data = data[:maxMessage]
	}
	b := make([]byte, 0, len(magic)+5+len(data))
	b = append(b, magic[:]...)
	b = append(b, status)
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	b = append(b, data...)
	_, err := c.Write(b)
	return err
}

// join is the side of every rank but the root.
func join(ctx context.Context, cfg *Config) ([]byte, error) {
	addr := cfg.rootAddr()
	var (
		d       net.Dialer
		c       net.Conn
		lastErr error
		wait    = retryMin
	)
	for c == nil {
		var err error
		c, err = d.DialContext(ctx, "tcp", addr)
		if err == nil {
			break
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return nil, wrapf(ErrRootUnreachable, &wrapped{sentinel: ctx.Err(), err: lastErr}, "no answer from %s", addr)
		case <-time.After(wait):
		}
		wait = min(2*wait, retryMax)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	hello := make([]byte, 0, helloSize)
	hello = append(hello, magic[:]...)
	hello = binary.BigEndian.AppendUint32(hello, uint32(cfg.WorldSize))
	hello = binary.BigEndian.AppendUint32(hello, uint32(cfg.Rank))
	if _, err := c.Write(hello); err != nil {
		return nil, ctxFirst(ctx, err, wrapf(ErrPeerClosed, err, "saying hello to the root"))
	}
	var head [len(magic) + 5]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		if cerr := ctxErr(ctx, err); cerr != nil {
			return nil, wrapf(ErrMissingRanks, cerr, "the root did not hear from every rank in time")
		}
		return nil, wrapf(ErrPeerClosed, err, "the root closed the connection")
	}
	if [8]byte(head[:8]) != magic {
		return nil, wrapf(ErrProtocol, nil, "%s answered %q, not a rendezvous", addr, head[:])
	}
	status := head[8]
	n := binary.BigEndian.Uint32(head[9:])
	limit := uint32(maxPayload)
	if status != statusOK {
		limit = maxMessage
	}
	if n > limit {
		return nil, wrapf(ErrProtocol, nil, "a reply of %d bytes", n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(c, data); err != nil {
		return nil, ctxFirst(ctx, err, wrapf(ErrPeerClosed, err, "reading the root's reply"))
	}
	if status != statusOK {
		sentinel, ok := statusErr[status]
		if !ok {
			sentinel = ErrProtocol
		}
		return nil, wrapf(sentinel, nil, "the root says: %s", data)
	}
	if _, err := c.Write([]byte{ackByte}); err != nil {
		return nil, ctxFirst(ctx, err, wrapf(ErrPeerClosed, err, "acknowledging the payload"))
	}
	return data, nil
}

// ctxFirst adds ctx's error to err, the error of an operation on the
// connection that ioErr failed, where ctx ended it.
func ctxFirst(ctx context.Context, ioErr, err error) error {
	if cerr := ctxErr(ctx, ioErr); cerr != nil {
		return &wrapped{sentinel: err, err: cerr}
	}
	return err
}

// ctxErr is ctx's error where ctx ended err, the error of a read or write
// on a connection whose deadline is ctx's and which ctx's end closes; nil
// where the connection failed of itself. The connection's deadline may
// pass before ctx's timer has fired: its i/o timeout is ctx's deadline.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return nil
}
