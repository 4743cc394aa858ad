package collective

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gocuda/cuda/internal/stubtest"
)

// These tests need neither a GPU nor NCCL: the rendezvous is plain TCP
// over loopback.

// listen returns a listener on a free loopback port and the port.
func listen(t *testing.T) (net.Listener, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln, ln.Addr().(*net.TCPAddr).Port
}

func testConfig(port, rank, size int, timeout time.Duration) Config {
	return Config{Addr: "127.0.0.1", Port: port, Rank: rank, WorldSize: size, Timeout: timeout}
}

type result struct {
	data []byte
	err  error
	took time.Duration
}

// start runs rendezvous for cfg in a goroutine; the root (rank 0) listens
// on ln and sends payload.
func start(cfg Config, ln net.Listener, payload []byte) <-chan result {
	ch := make(chan result, 1)
	go func() {
		t0 := time.Now()
		var f func() ([]byte, error)
		if cfg.Rank == 0 {
			f = func() ([]byte, error) { return payload, nil }
		}
		d, err := rendezvous(context.Background(), cfg, f, ln)
		ch <- result{d, err, time.Since(t0)}
	}()
	return ch
}

// get waits for a result, failing the test after a minute: a rendezvous
// that hangs is the bug these tests look for.
func get(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("rendezvous hangs")
		return result{}
	}
}

// wantErr checks that err is a *RendezvousError wrapping each of want.
func wantErr(t *testing.T, who string, err error, want ...error) *RendezvousError {
	t.Helper()
	var re *RendezvousError
	if !errors.As(err, &re) {
		t.Errorf("%s: error %v (%T), want a *RendezvousError", who, err, err)
		return nil
	}
	for _, w := range want {
		if !errors.Is(err, w) {
			t.Errorf("%s: error %q does not wrap %q", who, err, w)
		}
	}
	return re
}

func TestRendezvous(t *testing.T) {
	for _, size := range []int{1, 2, 5} {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			ln, port := listen(t)
			payload := []byte(fmt.Sprintf("id of a world of %d", size))
			var calls atomic.Int32
			chs := make([]<-chan result, size)
			// The other ranks first: they must retry until the root
			// listens. The root's listener is ready, but it accepts only
			// once the root runs.
			for r := size - 1; r >= 0; r-- {
				cfg := testConfig(port, r, size, 20*time.Second)
				if r == 0 {
					ch := make(chan result, 1)
					go func() {
						d, err := rendezvous(context.Background(), cfg, func() ([]byte, error) {
							calls.Add(1)
							return payload, nil
						}, ln)
						ch <- result{data: d, err: err}
					}()
					chs[r] = ch
				} else {
					chs[r] = start(cfg, nil, nil)
				}
			}
			for r, ch := range chs {
				res := get(t, ch)
				if res.err != nil || !bytes.Equal(res.data, payload) {
					t.Errorf("rank %d: %q, %v; want %q", r, res.data, res.err, payload)
				}
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("payload called %d times, want 1", n)
			}
		})
	}
}

// TestRendezvousRootLate starts the other ranks long before the root
// listens: they retry.
func TestRendezvousRootLate(t *testing.T) {
	ln, port := listen(t)
	ln.Close() // nothing listens: the ranks are refused until the root comes
	peers := []<-chan result{start(testConfig(port, 1, 3, 20*time.Second), nil, nil), start(testConfig(port, 2, 3, 20*time.Second), nil, nil)}
	time.Sleep(300 * time.Millisecond)
	cfg := testConfig(port, 0, 3, 20*time.Second)
	cfg.BindAddr = "127.0.0.1"
	res := get(t, startPublic(cfg, []byte("late")))
	if res.err != nil {
		t.Fatalf("root: %v", res.err)
	}
	for i, ch := range peers {
		if res := get(t, ch); res.err != nil || string(res.data) != "late" {
			t.Errorf("rank %d: %q, %v", i+1, res.data, res.err)
		}
	}
}

// startPublic is start through Rendezvous, which listens itself.
func startPublic(cfg Config, payload []byte) <-chan result {
	ch := make(chan result, 1)
	go func() {
		t0 := time.Now()
		d, err := Rendezvous(context.Background(), cfg, func() ([]byte, error) { return payload, nil })
		ch <- result{d, err, time.Since(t0)}
	}()
	return ch
}

func TestRendezvousWorldSize(t *testing.T) {
	ln, port := listen(t)
	root := start(testConfig(port, 0, 2, 20*time.Second), ln, []byte("x"))
	peer := start(testConfig(port, 1, 3, 20*time.Second), nil, nil)
	wantErr(t, "root", get(t, root).err, ErrWorldSize)
	wantErr(t, "rank 1", get(t, peer).err, ErrWorldSize)
}

func TestRendezvousDuplicateRank(t *testing.T) {
	ln, port := listen(t)
	root := start(testConfig(port, 0, 3, 20*time.Second), ln, []byte("x"))
	a := start(testConfig(port, 1, 3, 20*time.Second), nil, nil)
	b := start(testConfig(port, 1, 3, 20*time.Second), nil, nil)
	wantErr(t, "root", get(t, root).err, ErrDuplicateRank)
	// One of the two is refused for the duplicate, the other told why the
	// root failed: both see ErrDuplicateRank.
	wantErr(t, "first rank 1", get(t, a).err, ErrDuplicateRank)
	wantErr(t, "second rank 1", get(t, b).err, ErrDuplicateRank)
}

// TestRendezvousBadHello sends the root hellos no Config can make.
func TestRendezvousBadHello(t *testing.T) {
	for _, c := range []struct {
		name       string
		size, rank int32
		want       error
	}{
		{"rank outside the world", 2, 5, ErrConfig},
		{"negative rank", 2, -1, ErrConfig},
		{"the root's rank", 2, 0, ErrDuplicateRank},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, port := listen(t)
			root := start(testConfig(port, 0, 2, 20*time.Second), ln, []byte("x"))
			conn := dial(t, port)
			sendHello(t, conn, c.size, c.rank)
			wantErr(t, "root", get(t, root).err, c.want)
			// The process is told why.
			status, msg := readReply(t, conn)
			if statusErr[status] != c.want {
				t.Errorf("reply status %d (%q), want that of %v", status, msg, c.want)
			}
		})
	}
}

func dial(t *testing.T, port int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	return conn
}

func sendHello(t *testing.T, c net.Conn, size, rank int32) {
	t.Helper()
	b := append([]byte{}, magic[:]...)
	b = binary.BigEndian.AppendUint32(b, uint32(size))
	b = binary.BigEndian.AppendUint32(b, uint32(rank))
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

func readReply(t *testing.T, c net.Conn) (byte, string) {
	t.Helper()
	var head [len(magic) + 5]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	msg := make([]byte, binary.BigEndian.Uint32(head[9:]))
	if _, err := io.ReadFull(c, msg); err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	return head[8], string(msg)
}

func TestRendezvousAddrInUse(t *testing.T) {
	_, port := listen(t) // held: the root cannot have it
	cfg := testConfig(port, 0, 2, 20*time.Second)
	cfg.BindAddr = "127.0.0.1"
	res := get(t, startPublic(cfg, []byte("x")))
	wantErr(t, "root", res.err, ErrAddrInUse)
	if res.took > 5*time.Second {
		t.Errorf("took %v to see the port in use", res.took)
	}
}

// TestRendezvousMissingRank gives the root a world of 3 where only rank 2
// comes: it fails at its deadline naming rank 1, and tells rank 2.
func TestRendezvousMissingRank(t *testing.T) {
	ln, port := listen(t)
	const timeout = 500 * time.Millisecond
	root := start(testConfig(port, 0, 3, timeout), ln, []byte("x"))
	peer := start(testConfig(port, 2, 3, 20*time.Second), nil, nil)
	res := get(t, root)
	re := wantErr(t, "root", res.err, ErrMissingRanks, context.DeadlineExceeded)
	if re != nil && !slices.Equal(re.Missing, []int{1}) {
		t.Errorf("Missing = %v, want [1]", re.Missing)
	}
	if res.took < timeout || res.took > timeout+5*time.Second {
		t.Errorf("root gave up after %v, want about %v", res.took, timeout)
	}
	p := get(t, peer)
	wantErr(t, "rank 2", p.err, ErrMissingRanks)
	if p.took > 10*time.Second {
		t.Errorf("rank 2 heard of it after %v", p.took)
	}
}

// TestRendezvousRootNeverComes: the other ranks retry until their deadline.
func TestRendezvousRootNeverComes(t *testing.T) {
	ln, port := listen(t)
	ln.Close()
	const timeout = 400 * time.Millisecond
	res := get(t, start(testConfig(port, 1, 2, timeout), nil, nil))
	wantErr(t, "rank 1", res.err, ErrRootUnreachable, context.DeadlineExceeded)
	if res.took < timeout || res.took > timeout+5*time.Second {
		t.Errorf("gave up after %v, want about %v", res.took, timeout)
	}
}

// TestRendezvousPeerClosesEarly: a rank that joins and leaves (dies)
// before the world is complete fails the root, which tells the others.
func TestRendezvousPeerClosesEarly(t *testing.T) {
	ln, port := listen(t)
	root := start(testConfig(port, 0, 4, 20*time.Second), ln, []byte("x"))
	peer := start(testConfig(port, 2, 4, 20*time.Second), nil, nil)
	time.Sleep(200 * time.Millisecond) // rank 2 joins first
	conn := dial(t, port)
	sendHello(t, conn, 4, 1)
	time.Sleep(50 * time.Millisecond)
	conn.Close()
	wantErr(t, "root", get(t, root).err, ErrPeerClosed)
	wantErr(t, "rank 2", get(t, peer).err, ErrPeerClosed)
}

// TestRendezvousRootClosesEarly: a root that goes away after the hello.
func TestRendezvousRootClosesEarly(t *testing.T) {
	ln, port := listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.ReadFull(c, make([]byte, helloSize))
		c.Close()
	}()
	wantErr(t, "rank 1", get(t, start(testConfig(port, 1, 2, 20*time.Second), nil, nil)).err, ErrPeerClosed)
}

// TestRendezvousRootSilent: a root that reads the hello and never answers
// ends the rank's rendezvous at its Timeout, with an error that says so
// (ErrMissingRanks and context.DeadlineExceeded), every time: not that
// the root closed the connection, though the deadline that ends the read
// may come before the context's.
func TestRendezvousRootSilent(t *testing.T) {
	ln, port := listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go io.ReadFull(c, make([]byte, helloSize))
		}
	}()
	for try := range 30 {
		err := get(t, start(testConfig(port, 1, 2, 50*time.Millisecond), nil, nil)).err
		wantErr(t, fmt.Sprintf("try %d", try), err, ErrMissingRanks, context.DeadlineExceeded)
		if errors.Is(err, ErrPeerClosed) {
			t.Errorf("try %d: %v, want no ErrPeerClosed", try, err)
		}
	}
}

// A flakyListener's Accept returns the errors errs, one a call, before it
// accepts; the last of them forever where forever is set.
type flakyListener struct {
	net.Listener
	errs    []error
	forever bool
	calls   atomic.Int32
}

func (l *flakyListener) Accept() (net.Conn, error) {
	n := int(l.calls.Add(1))
	switch {
	case n <= len(l.errs):
		return nil, l.errs[n-1]
	case l.forever:
		return nil, l.errs[len(l.errs)-1]
	}
	return l.Listener.Accept()
}

// tempErr is a net.Error that says it is temporary, as some listeners'
// errors do.
type tempErr struct{}

func (tempErr) Error() string   { return "a temporary error" }
func (tempErr) Timeout() bool   { return false }
func (tempErr) Temporary() bool { return true }

// TestRendezvousAcceptRetries: the root goes on accepting after an
// error that passes (descriptors or buffers short, a connection aborted
// before it was accepted), as net/http's Server.Serve does, and fails at
// once on one that does not.
func TestRendezvousAcceptRetries(t *testing.T) {
	acceptErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	}
	broken := errors.New("the listener is broken")
	for _, c := range []struct {
		name    string
		errs    []error
		forever bool
		want    []error // the root's error; none: the rendezvous succeeds
	}{
		{"EMFILE", []error{acceptErr(syscall.EMFILE), acceptErr(syscall.EMFILE), acceptErr(syscall.EMFILE)}, false, nil},
		{"ENFILE", []error{acceptErr(syscall.ENFILE)}, false, nil},
		{"ECONNABORTED", []error{acceptErr(syscall.ECONNABORTED)}, false, nil},
		{"ENOBUFS", []error{acceptErr(syscall.ENOBUFS)}, false, nil},
		{"ENOMEM", []error{acceptErr(syscall.ENOMEM)}, false, nil},
		{"temporary net.Error", []error{tempErr{}, tempErr{}}, false, nil},
		{"a mix", []error{acceptErr(syscall.ENOBUFS), tempErr{}, acceptErr(syscall.EMFILE)}, false, nil},
		// A permanent error ends the rendezvous at once, not at the
		// Timeout with ErrMissingRanks.
		{"permanent", []error{broken}, false, []error{broken}},
		{"permanent after a temporary", []error{acceptErr(syscall.EMFILE), broken}, false, []error{broken}},
		// One that lasts ends at the Timeout.
		{"EMFILE forever", []error{acceptErr(syscall.EMFILE)}, true, []error{ErrMissingRanks, context.DeadlineExceeded}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, port := listen(t)
			fl := &flakyListener{Listener: ln, errs: c.errs, forever: c.forever}
			timeout := 20 * time.Second
			if c.forever {
				timeout = 500 * time.Millisecond
			}
			root := start(testConfig(port, 0, 2, timeout), fl, []byte("again"))
			if c.want != nil {
				res := get(t, root)
				wantErr(t, "root", res.err, c.want...)
				if !c.forever && errors.Is(res.err, ErrMissingRanks) {
					t.Errorf("root: %v, want no ErrMissingRanks", res.err)
				}
				if n := fl.calls.Load(); c.forever && n > 20 {
					t.Errorf("Accept called %d times in %v: a busy loop", n, timeout)
				}
				return
			}
			peer := start(testConfig(port, 1, 2, 20*time.Second), nil, nil)
			for who, ch := range map[string]<-chan result{"root": root, "rank 1": peer} {
				if res := get(t, ch); res.err != nil || string(res.data) != "again" {
					t.Errorf("%s: %q, %v", who, res.data, res.err)
				}
			}
		})
	}
}

// TestRendezvousAcceptEMFILE: a root out of file descriptors, its accept
// failing with EMFILE while a burst of idle connections holds them, takes
// the real rank once they close. The root runs in a child process whose
// limit of descriptors is a few above those it has open; the idle
// connections and rank 1 come from this one. The child writes lines:
// "port N" once it listens, "accept failed: ..." at its first failed
// Accept.
func TestRendezvousAcceptEMFILE(t *testing.T) {
	lines, wait := startChild(t, "TestRendezvousAcceptEMFILEChild")
	var port int
	if _, err := fmt.Sscanf(<-lines, "port %d", &port); err != nil {
		wait()
		t.Fatalf("the child's first line: %v", err)
	}
	// Connect and hold until the root's accept fails.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for failed := false; !failed; {
		if len(idle) == 1000 {
			t.Fatal("1000 idle connections, and the root's accept has not failed")
		}
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
		select {
		case line, ok := <-lines:
			if !ok || !strings.HasPrefix(line, "accept failed:") {
				wait()
				t.Fatalf("the child says %q, want \"accept failed: ...\"", line)
			}
			t.Logf("after %d idle connections: %s", len(idle), line)
			failed = true
		case <-time.After(20 * time.Millisecond): // another
		}
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	res := get(t, start(testConfig(port, 1, 2, 20*time.Second), nil, nil))
	if res.err != nil || string(res.data) != "emfile" {
		t.Errorf("rank 1: %q, %v", res.data, res.err)
	}
	wait()
}

// acceptChildEnv marks the child process of TestRendezvousAcceptEMFILE.
const acceptChildEnv = "GOCUDA_COLLECTIVE_ACCEPT_CHILD"

func TestRendezvousAcceptEMFILEChild(t *testing.T) {
	if os.Getenv(acceptChildEnv) == "" {
		t.Skip("run by TestRendezvousAcceptEMFILE")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	wl := &watchedListener{Listener: ln, failed: make(chan error, 1)}
	go func() {
		if err, ok := <-wl.failed; ok {
			fmt.Printf("accept failed: %v\n", err)
		}
	}()
	// Room for a few descriptors more: the root's accepted connections.
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = min(lim.Cur, fdLimit(t, 4))
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("port %d\n", ln.Addr().(*net.TCPAddr).Port)
	data, err := rendezvous(context.Background(), testConfig(ln.Addr().(*net.TCPAddr).Port, 0, 2, 20*time.Second),
		func() ([]byte, error) { return []byte("emfile"), nil }, wl)
	if err != nil || string(data) != "emfile" {
		t.Fatalf("root: %q, %v", data, err)
	}
}

// A watchedListener sends the first error of its Accept on failed.
type watchedListener struct {
	net.Listener
	failed chan error
}

func (l *watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		select {
		case l.failed <- err:
		default:
		}
	}
	return c, err
}

// fdLimit is the limit of file descriptors (RLIMIT_NOFILE) that leaves
// the process n free ones, or one more: the limit bounds the number a new
// descriptor takes, the lowest free, and those open above it stay open.
func fdLimit(t *testing.T, n int) uint64 {
	ents, err := os.ReadDir("/proc/self/fd") // one of them, closed since
	if err != nil {
		t.Skip(err)
	}
	open := make(map[int]bool)
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil {
			open[fd] = true
		}
	}
	fd := 0
	for free := 0; free < n; fd++ {
		if !open[fd] {
			free++
		}
	}
	return uint64(fd)
}

// startChild runs the test binary's test named child in a child process,
// under the emulator where there is one, and returns the lines it writes,
// as they come, but go test's own (closed at its end), and a function
// that waits for its end and fails t unless the test passed. A child that
// writes nothing for two minutes is killed and, under an emulator (whose
// fork has been seen to hang), started again, three times at most.
func startChild(t *testing.T, child string) (<-chan string, func()) {
	t.Helper()
	for try := 1; ; try++ {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd := stubtest.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
		cmd.Env = append(os.Environ(), acceptChildEnv+"=1")
		cmd.Stdout, cmd.Stderr = pw, pw
		err = cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill() })
		started := make(chan struct{})
		lines := make(chan string, 1000)
		var log []string // every line, for the report
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			defer close(lines)
			defer pr.Close()
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				l := sc.Text()
				if log = append(log, l); len(log) == 1 {
					close(started)
				}
				if !strings.HasPrefix(l, "=== ") && !strings.HasPrefix(l, "--- ") && l != "PASS" {
					select {
					case lines <- l:
					default: // nobody reads that many
					}
				}
			}
		}()
		// wait waits for the end, for at most two minutes.
		wait := func() error {
			select {
			case <-ended:
			case <-time.After(2 * time.Minute):
				cmd.Process.Kill()
				<-ended
				cmd.Wait()
				return errors.New("still running after two minutes")
			}
			return cmd.Wait()
		}
		select {
		case <-started:
		case <-ended:
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			<-ended
			cmd.Wait()
			if try < 3 && os.Getenv(stubtest.ExecEnv) != "" {
				continue
			}
			t.Fatalf("%s wrote nothing in two minutes", child)
		}
		return lines, func() {
			t.Helper()
			err := wait() // then log is whole
			passed := slices.ContainsFunc(log, func(l string) bool { return strings.HasPrefix(l, "--- PASS: "+child+" ") })
			if err != nil || !passed {
				t.Errorf("%s: %v\n%s", child, err, strings.Join(log, "\n"))
			}
		}
	}
}

// TestRendezvousForeignServer: something else listens at the root's port.
func TestRendezvousForeignServer(t *testing.T) {
	ln, port := listen(t)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.ReadFull(c, make([]byte, helloSize))
		io.WriteString(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
	}()
	wantErr(t, "rank 1", get(t, start(testConfig(port, 1, 2, 20*time.Second), nil, nil)).err, ErrProtocol)
}

// TestRendezvousIgnoresStrangers: a connection that says something else
// (a port scanner) does not disturb the rendezvous.
func TestRendezvousIgnoresStrangers(t *testing.T) {
	ln, port := listen(t)
	root := start(testConfig(port, 0, 2, 20*time.Second), ln, []byte("ok"))
	stranger := dial(t, port)
	io.WriteString(stranger, "GET / HTTP/1.0\r\n\r\n")
	silent := dial(t, port)
	_ = silent // connects and says nothing until the end
	peer := start(testConfig(port, 1, 2, 20*time.Second), nil, nil)
	for who, ch := range map[string]<-chan result{"root": root, "rank 1": peer} {
		if res := get(t, ch); res.err != nil || string(res.data) != "ok" {
			t.Errorf("%s: %q, %v", who, res.data, res.err)
		}
	}
}

func TestRendezvousCanceled(t *testing.T) {
	for _, rank := range []int{0, 1} {
		// Rank 0 listens on ln; rank 1 meets a root that never answers,
		// on a port the test holds: the root's, closed when rank 0
		// returned, may serve another test meanwhile.
		ln, port := listen(t)
		ctx, cancel := context.WithCancel(context.Background())
		ch := make(chan error, 1)
		go func() {
			_, err := rendezvous(ctx, testConfig(port, rank, 2, time.Minute), func() ([]byte, error) { return []byte("x"), nil }, ln)
			ch <- err
		}()
		time.Sleep(100 * time.Millisecond)
		cancel()
		select {
		case err := <-ch:
			wantErr(t, fmt.Sprintf("rank %d", rank), err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatalf("rank %d: cancel did not end the rendezvous", rank)
		}
	}
}

func TestRendezvousPayloadError(t *testing.T) {
	ln, _ := listen(t)
	boom := errors.New("no NCCL here")
	_, err := rendezvous(context.Background(), testConfig(1, 0, 2, time.Second), func() ([]byte, error) { return nil, boom }, ln)
	wantErr(t, "root", err, boom)
}

func TestRendezvousBadConfig(t *testing.T) {
	ok := func() ([]byte, error) { return []byte("x"), nil }
	for _, c := range []struct {
		name    string
		ctx     context.Context
		cfg     Config
		payload func() ([]byte, error)
	}{
		{"nil context", nil, testConfig(1, 0, 1, 0), ok},
		{"rank too large", context.Background(), testConfig(1, 2, 2, 0), nil},
		{"negative rank", context.Background(), testConfig(1, -1, 2, 0), nil},
		{"world size 0", context.Background(), testConfig(1, 0, 0, 0), ok},
		{"port 0", context.Background(), testConfig(0, 1, 2, 0), nil},
		{"port too large", context.Background(), testConfig(65536, 1, 2, 0), nil},
		{"negative timeout", context.Background(), testConfig(1, 1, 2, -time.Second), nil},
		{"no root address", context.Background(), Config{Port: 1, Rank: 1, WorldSize: 2}, nil},
		{"no payload at the root", context.Background(), testConfig(1, 0, 2, 0), nil},
		{"no such interface", context.Background(), Config{Port: 1, WorldSize: 2, Interface: "no-such-if0"}, ok},
		// Dialled as [127.0.0.1:29500]:29500, it would fail at the Timeout.
		{"root address with a port", context.Background(), Config{Addr: "127.0.0.1:29500", Port: 29500, Rank: 1, WorldSize: 2, Timeout: 3 * time.Second}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t0 := time.Now()
			_, err := Rendezvous(c.ctx, c.cfg, c.payload)
			wantErr(t, "Rendezvous", err, ErrConfig)
			if d := time.Since(t0); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestRendezvousInterface binds the root to the loopback interface by
// name.
func TestRendezvousInterface(t *testing.T) {
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	var lo string
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback != 0 {
			if ip, err := interfaceAddr(i.Name); err == nil && ip.To4() != nil {
				lo = i.Name
			}
		}
	}
	if lo == "" {
		t.Skip("no loopback interface with an IPv4 address")
	}
	ln, port := listen(t)
	ln.Close()
	cfg := testConfig(port, 0, 2, 20*time.Second)
	cfg.Interface = lo
	root := startPublic(cfg, []byte("lo"))
	peer := start(testConfig(port, 1, 2, 20*time.Second), nil, nil)
	for who, ch := range map[string]<-chan result{"root": root, "rank 1": peer} {
		if res := get(t, ch); res.err != nil || string(res.data) != "lo" {
			t.Errorf("%s: %q, %v", who, res.data, res.err)
		}
	}
}

// TestRendezvousConcurrentJobs runs several worlds at once on separate
// ports, as a test suite or a host with several jobs might.
func TestRendezvousConcurrentJobs(t *testing.T) {
	var wg sync.WaitGroup
	for job := range 4 {
		ln, port := listen(t)
		payload := []byte{byte(job)}
		chs := []<-chan result{start(testConfig(port, 0, 3, 20*time.Second), ln, payload)}
		for r := 1; r < 3; r++ {
			chs = append(chs, start(testConfig(port, r, 3, 20*time.Second), nil, nil))
		}
		wg.Go(func() {
			for r, ch := range chs {
				if res := <-ch; res.err != nil || !bytes.Equal(res.data, payload) {
					t.Errorf("job %d rank %d: %v, %v", job, r, res.data, res.err)
				}
			}
		})
	}
	wg.Wait()
}

// TestRendezvousHugeWorld: a root of a world of math.MaxInt32 ranks, the
// most NCCL takes, keeps memory for the ranks that come, not for the
// world: it listens at once, takes the ranks that come, and fails at its
// Timeout naming the missing ones. It runs in a child process, whose
// address space is limited to 1 GiB where the limit holds (not under the
// race detector, whose shadow memory takes terabytes of it, nor under
// qemu-user, which ignores the limit): a root that allocated for every
// rank would die there of it.
func TestRendezvousHugeWorld(t *testing.T) {
	stubtest.Child(t, "TestRendezvousHugeWorldChild", EnvAddr+"=127.0.0.1", EnvPort+"=29500", EnvRank+"=0", EnvWorldSize+"=2147483647")
}

func TestRendezvousHugeWorldChild(t *testing.T) {
	stubtest.SkipUnlessChild(t, "TestRendezvousHugeWorld")
	defer time.AfterFunc(5*time.Minute, func() {
		fmt.Println("TestRendezvousHugeWorldChild: still running after 5 minutes")
		os.Exit(3)
	}).Stop()
	if !raceEnabled && os.Getenv(stubtest.ExecEnv) == "" {
		// 1 GiB more than the process has mapped (the runtime's
		// reservations, the threads' stacks) when it starts.
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			t.Fatal(err)
		}
		lim.Cur = min(lim.Cur, addressSpace(t)+1<<30)
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &lim); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := ConfigFromEnv()
	if err != nil || cfg.WorldSize != math.MaxInt32 {
		t.Fatalf("ConfigFromEnv: %+v, %v; want a world size of %d", cfg, err, math.MaxInt32)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)

	t.Run("no rank comes", func(t *testing.T) {
		ln, port := listen(t)
		cfg.Port, cfg.Timeout = port, 300*time.Millisecond
		re := wantErr(t, "root", get(t, start(cfg, ln, []byte("huge"))).err, ErrMissingRanks, context.DeadlineExceeded)
		if re == nil {
			return
		}
		// The ranks listed are the lowest, as many as Missing takes.
		if len(re.Missing) != maxMissing || re.Missing[0] != 1 || re.Missing[maxMissing-1] != maxMissing {
			t.Errorf("Missing has %d ranks, %v ... %v; want 1 to %d", len(re.Missing), re.Missing[:min(3, len(re.Missing))], re.Missing[max(0, len(re.Missing)-3):], maxMissing)
		}
		if want := "2147483646 of 2147483647 ranks did not join"; !strings.Contains(re.Error(), want) {
			t.Errorf("error %q does not say %q", re, want)
		}
	})
	t.Run("ranks come", func(t *testing.T) {
		// Rank 1 joins, then another process claims rank 1 too: the root
		// fails at once, having taken the first.
		ln, port := listen(t)
		cfg.Port, cfg.Timeout = port, time.Minute
		root := start(cfg, ln, []byte("huge"))
		conn := dial(t, port)
		sendHello(t, conn, math.MaxInt32, 1)
		second := dial(t, port)
		sendHello(t, second, math.MaxInt32, 1)
		wantErr(t, "root", get(t, root).err, ErrDuplicateRank)
		for _, c := range []net.Conn{conn, second} {
			if status, msg := readReply(t, c); statusErr[status] != ErrDuplicateRank {
				t.Errorf("reply status %d (%q), want that of ErrDuplicateRank", status, msg)
			}
		}
	})

	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("the rendezvous allocated %d MiB, want less than 64", n>>20)
	}
}

// addressSpace is the size of the process's address space, VmSize.
func addressSpace(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmSize: %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}
