package highlevel

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	const us = time.Microsecond
	const ms = time.Millisecond
	tests := []struct {
		name          string
		age, due, dev time.Duration
		nap, spin     time.Duration
	}{
		{"nothing learned: spin first", 0, 0, 0, 0, firstSpin},
		{"nothing learned: spin to firstSpin", 5 * us, 0, 0, 0, firstSpin - 5*us},
		{"nothing learned, past the spin: an eighth of the age", 800 * us, 0, 0, 100 * us, 0},
		{"nothing learned: at least minNap", firstSpin, 0, 0, minNap, 0},
		{"short: spin at once", 0, 20 * us, 10 * us, 0, 20*us + lead + 20*us/32},
		{"short, waits agree: sleep until minLead before", 0, 20 * us, 0, 12 * us, 2 * minLead},
		{"due in 1 ms: sleep until the lead", 600 * us, ms, ms, ms - lead - ms/32 - 600*us, 2 * (lead + ms/32)},
		{"due in 1 ms, young, waits disagree: at most twice the age", 100 * us, ms, ms, 200 * us, 0},
		{"due in 1 ms, just begun, waits disagree: firstNap", 1 * us, ms, ms, firstNap, 0},
		{"due in 1 ms, just begun, waits agree: to four deviations before", 1 * us, ms, 10 * us, ms - lead - 40*us, 0},
		{"due in 1 ms, waits agree exactly: to the lead before", 1 * us, ms, 0, ms - lead, 0},
		{"due in 1 ms, waits agree exactly: then until minLead before", 980 * us, ms, 0, 20*us - minLead, 2 * minLead},
		{"due in 1 ms, waits agree: the lead is two deviations", 950 * us, ms, 10 * us, 50*us - minLead - 20*us, 2 * (minLead + 20*us)},
		{"due in 1 ms, within the lead: spin across the end", 960 * us, ms, ms, 0, ms + lead + ms/32 - 960*us},
		{"due in 1 s: the lead is capped", 600 * ms, time.Second, time.Second, 400*ms - maxLead, 2 * maxLead},
		{"late: an eighth of the age", 2 * ms, ms, 0, 250 * us, 0},
		{"just late: a quarter of the lateness", 1100 * us, ms, 10 * us, 25 * us, 0},
		{"just late: at least minNap", 1010 * us, ms, 0, minNap, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nap, spin := plan(tt.age, tt.due, tt.dev)
			if nap != tt.nap || spin != tt.spin {
				t.Errorf("plan(%v, %v, %v) = %v, %v; want %v, %v", tt.age, tt.due, tt.dev, nap, spin, tt.nap, tt.spin)
			}
		})
	}
}

// fakeEvent is a step for waitSteps over an event that happens at a given
// time, which counts the steps and the time they slept and spun.
type fakeEvent struct {
	at         time.Time
	first      time.Time // when the first step began
	steps      int
	nap, spun  time.Duration
	superseded bool // report superseded instead of the event's state
}

func (f *fakeEvent) step(nap, spin time.Duration) int {
	if f.steps == 0 {
		f.first = time.Now()
	}
	f.steps++
	f.nap += nap
	f.spun += spin
	time.Sleep(nap)
	if f.superseded {
		return superseded
	}
	for end := time.Now().Add(spin); ; {
		if !time.Now().Before(f.at) {
			return 0
		}
		if !time.Now().Before(end) {
			return notReady
		}
	}
}

func TestWaitSteps(t *testing.T) {
	var c waitClock
	start := time.Now()
	f := &fakeEvent{at: start.Add(3 * time.Millisecond)}
	if r := waitSteps(context.Background(), &c, f.step); r != 0 {
		t.Fatalf("waitSteps = %d, want 0", r)
	}
	took := time.Since(start)
	if took < 3*time.Millisecond {
		t.Errorf("waitSteps returned after %v, before the event (3ms)", took)
	}
	// The clock times the wait from its own start, which is after start
	// and before the first step, to when it saw the event.
	learned := time.Duration(c.avg.Load())
	if least := f.at.Sub(f.first); learned < least || learned > took {
		t.Errorf("the clock learned %v from a wait of %v for an event %v after the first step", learned, took, least)
	}
	t.Logf("nothing learned: %d steps, %v asleep, %v spinning at most, returned after %v", f.steps, f.nap, f.spun, took)

	// A second wait like the first sleeps until it is nearly due, and
	// spins no longer than two leads.
	f = &fakeEvent{at: time.Now().Add(3 * time.Millisecond)}
	if r := waitSteps(context.Background(), &c, f.step); r != 0 {
		t.Fatalf("waitSteps = %d, want 0", r)
	}
	// Under an emulator ($GOCUDA_TEST_EXEC: qemu-user, for arm64) sleeps
	// overrun by more than the plan allows for, and the bounds of time
	// below do not hold.
	emulated := os.Getenv("GOCUDA_TEST_EXEC") != ""
	if f.spun > 2*maxLead+firstSpin && !emulated {
		t.Errorf("a wait like the last one spun for up to %v in %d steps", f.spun, f.steps)
	}

	// A wait much shorter than the last ones, which agreed, or one already
	// done, costs little more than itself, and the clock learns it.
	c.avg.Store(int64(200 * time.Millisecond))
	c.dev.Store(0)
	f = &fakeEvent{at: time.Now()}
	start = time.Now()
	if r := waitSteps(context.Background(), &c, f.step); r != 0 || f.steps != 1 || f.nap != 0 {
		t.Errorf("a wait already done: waitSteps = %d after %d steps and %v asleep, want 0 after one query", r, f.steps, f.nap)
	}
	for i := range 3 {
		f = &fakeEvent{at: time.Now().Add(time.Millisecond)}
		start = time.Now()
		waitSteps(context.Background(), &c, f.step)
		if took := time.Since(start); took > 20*time.Millisecond && !emulated {
			t.Errorf("wait %d for 1 ms after waits of 200 ms took %v", i, took)
		}
	}
	if learned := time.Duration(c.avg.Load()); learned > 120*time.Millisecond {
		t.Errorf("after four short waits the clock still expects %v", learned)
	}

	// Other reports than notReady are returned as they are.
	f = &fakeEvent{at: time.Now().Add(time.Hour), superseded: true}
	if r := waitSteps(context.Background(), &c, f.step); r != superseded || f.steps != 1 {
		t.Errorf("waitSteps = %d after %d steps, want superseded after 1", r, f.steps)
	}
}

func TestWaitStepsContext(t *testing.T) {
	for _, learned := range []time.Duration{0, time.Hour} {
		var c waitClock
		c.avg.Store(int64(learned))
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		f := &fakeEvent{at: time.Now().Add(time.Hour)}
		start := time.Now()
		r := waitSteps(ctx, &c, f.step)
		took := time.Since(start)
		cancel()
		if r != ctxDone {
			t.Errorf("learned %v: waitSteps = %d, want ctxDone", learned, r)
		}
		if took > time.Second {
			t.Errorf("learned %v: waitSteps returned %v after a deadline of 5ms", learned, took)
		}
		if c.avg.Load() != int64(learned) {
			t.Errorf("learned %v: a cancelled wait taught the clock %v", learned, time.Duration(c.avg.Load()))
		}
	}
}

// TestWaitStepsBounds waits with many goroutines at once: no more than
// maxSpinners spin and no more than maxThreads sleep in a step at once.
func TestWaitStepsBounds(t *testing.T) {
	var mu sync.Mutex
	var spinners, nappers, maxSpin, maxNap int
	at := time.Now().Add(20 * time.Millisecond)
	var wg sync.WaitGroup
	for range 500 {
		wg.Go(func() {
			var c waitClock
			waitSteps(context.Background(), &c, func(nap, spin time.Duration) int {
				mu.Lock()
				if spin > 0 {
					spinners++
					maxSpin = max(maxSpin, spinners)
				}
				if nap > 0 {
					nappers++
					maxNap = max(maxNap, nappers)
				}
				mu.Unlock()
				time.Sleep(nap + spin)
				mu.Lock()
				if spin > 0 {
					spinners--
				}
				if nap > 0 {
					nappers--
				}
				mu.Unlock()
				if time.Now().Before(at) {
					return notReady
				}
				return 0
			})
		})
	}
	wg.Wait()
	if maxSpin > int(maxSpinners()) || maxNap > int(maxThreads()) {
		t.Errorf("at most %d spinning and %d sleeping in C at once; the limits are %d and %d", maxSpin, maxNap, maxSpinners(), maxThreads())
	}
	if spinning.Load() != 0 || napping.Load() != 0 {
		t.Errorf("after the waits, %d spinning and %d napping are counted", spinning.Load(), napping.Load())
	}
}

// TestWaitStepsYields checks that a sleep in C yields the processor first
// while more than half the processors' worth of waiters sleep there, and
// only a sleep shorter than yieldNap.
func TestWaitStepsYields(t *testing.T) {
	tests := []struct {
		name    string
		others  int32 // other waiters counted as sleeping in C meanwhile
		due     time.Duration
		yielded bool
	}{
		{"few others sleep", procs()/2 - 1, 300 * time.Microsecond, false},
		{"many others sleep, a short sleep", procs() / 2, 300 * time.Microsecond, true},
		{"many others sleep, a long sleep", procs() / 2, 3 * yieldNap, false},
	}
	defer func(y func()) { yield = y }(yield)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yields := 0
			yield = func() { yields++ }
			napping.Add(tt.others)
			defer napping.Add(-tt.others)
			var c waitClock
			c.avg.Store(int64(tt.due))
			f := &fakeEvent{at: time.Now().Add(tt.due)}
			if r := waitSteps(context.Background(), &c, f.step); r != 0 {
				t.Fatalf("waitSteps = %d, want 0", r)
			}
			if (yields > 0) != tt.yielded || f.nap == 0 {
				t.Errorf("%d yields in %d steps that slept %v; want a sleep that yields: %v", yields, f.steps, f.nap, tt.yielded)
			}
		})
	}
}

func TestSignal(t *testing.T) {
	s := newSignal()
	if s.result() != nil {
		t.Errorf("result before fire: %v", s.result())
	}
	s.fire(ErrClosed)
	s.fire(nil) // a second fire changes nothing
	<-s.done
	if err := s.wait(context.Background()); err != ErrClosed {
		t.Errorf("wait after fire(ErrClosed) = %v", err)
	}
	if s.result() != ErrClosed {
		t.Errorf("result = %v, want ErrClosed", s.result())
	}
	if err := failed(ErrNil).result(); err != ErrNil {
		t.Errorf("failed(ErrNil).result() = %v", err)
	}
	var none *signal
	if none.result() != nil {
		t.Errorf("nil signal's result: %v", none.result())
	}
}
