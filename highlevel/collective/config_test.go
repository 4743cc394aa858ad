package collective

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/gocuda/cuda/highlevel"
)

func TestConfigFromEnv(t *testing.T) {
	full := map[string]string{EnvAddr: "10.0.0.1", EnvPort: "29500", EnvRank: "3", EnvWorldSize: "8", EnvLocalRank: "1"}
	with := func(kv ...string) map[string]string {
		m := maps(full)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<unset>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	cfg := func(addr string) Config {
		return Config{Addr: addr, Port: 29500, Rank: 3, WorldSize: 8, LocalRank: 1}
	}
	for _, c := range []struct {
		name  string
		env   map[string]string
		want  Config // zero: an error wrapping ErrConfig
		names string // with an error: what its message must name, if not empty
	}{
		{"all set", full, cfg("10.0.0.1"), ""},
		{"no LOCAL_RANK", with(EnvLocalRank, "<unset>"), Config{Addr: "10.0.0.1", Port: 29500, Rank: 3, WorldSize: 8, LocalRank: 3}, ""},
		{"no MASTER_ADDR", with(EnvAddr, "<unset>"), Config{}, "$" + EnvAddr},
		{"empty MASTER_ADDR", with(EnvAddr, ""), Config{}, "$" + EnvAddr},
		{"no MASTER_PORT", with(EnvPort, "<unset>"), Config{}, "$" + EnvPort},
		{"no RANK", with(EnvRank, "<unset>"), Config{}, "$" + EnvRank},
		{"no WORLD_SIZE", with(EnvWorldSize, "<unset>"), Config{}, "$" + EnvWorldSize},
		{"port not a number", with(EnvPort, "http"), Config{}, "$" + EnvPort},
		{"port 0", with(EnvPort, "0"), Config{}, ""},
		{"port too large", with(EnvPort, "70000"), Config{}, ""},
		{"rank not a number", with(EnvRank, "3a"), Config{}, "$" + EnvRank},
		{"rank = world size", with(EnvRank, "8"), Config{}, ""},
		{"negative rank", with(EnvRank, "-1"), Config{}, ""},
		{"world size 0", with(EnvWorldSize, "0"), Config{}, ""},
		{"negative local rank", with(EnvLocalRank, "-2"), Config{}, "$" + EnvLocalRank},

		// MASTER_ADDR is a host: a name or an address, without the port.
		{"MASTER_ADDR with a port", with(EnvAddr, "127.0.0.1:29500"), Config{}, "$" + EnvAddr},
		{"MASTER_ADDR with an empty port", with(EnvAddr, "10.0.0.1:"), Config{}, "$" + EnvAddr},
		{"host name with a port", with(EnvAddr, "node1:29500"), Config{}, "$" + EnvAddr},
		{"bracketed IPv6 address with a port", with(EnvAddr, "[::1]:29500"), Config{}, "$" + EnvAddr},
		{"IPv6 address with a port, unbracketed", with(EnvAddr, "2001:db8::1:29500"), Config{}, "$" + EnvAddr},
		{"brackets around a host name", with(EnvAddr, "[node1]"), Config{}, "$" + EnvAddr},
		{"unclosed bracket", with(EnvAddr, "[::1"), Config{}, "$" + EnvAddr},
		{"a URL", with(EnvAddr, "tcp://node1"), Config{}, "$" + EnvAddr},
		{"host name", with(EnvAddr, "node-1.cluster.local"), cfg("node-1.cluster.local"), ""},
		{"IPv6 address", with(EnvAddr, "::1"), cfg("::1"), ""},
		{"bracketed IPv6 address", with(EnvAddr, "[::1]"), cfg("::1"), ""},
		{"IPv6 address with a zone", with(EnvAddr, "fe80::1%eth0"), cfg("fe80::1%eth0"), ""},

		// NCCL's number of ranks is a C int.
		{"world size MaxInt32", with(EnvWorldSize, "2147483647", EnvRank, "2147483646"),
			Config{Addr: "10.0.0.1", Port: 29500, Rank: math.MaxInt32 - 1, WorldSize: math.MaxInt32, LocalRank: 1}, ""},
		{"world size above MaxInt32", with(EnvWorldSize, "2147483648"), Config{}, "2147483647"},
		{"world size out of range", with(EnvWorldSize, "99999999999999999999"), Config{}, "$" + EnvWorldSize},
		{"rank out of range", with(EnvRank, "-99999999999999999999"), Config{}, "$" + EnvRank},
		{"local rank above MaxInt32", with(EnvLocalRank, "2147483648"), Config{}, "2147483647"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := configFrom(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
			if c.want == (Config{}) {
				if !errors.Is(err, ErrConfig) || !errors.Is(err, highlevel.ErrInvalid) {
					t.Errorf("got %+v, %v; want an error wrapping ErrConfig, a refusal (highlevel.ErrInvalid)", got, err)
				} else if !strings.Contains(err.Error(), c.names) {
					t.Errorf("error %q does not name %s", err, c.names)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
	t.Setenv(EnvWorldSize, "2")
	if !InEnv() {
		t.Error("InEnv false with WORLD_SIZE set")
	}
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestConfigCheck checks the hosts of a Config made by hand, and the
// addresses the ranks dial and the root listens on.
func TestConfigCheck(t *testing.T) {
	type testCase struct {
		name         string
		cfg          Config
		root, listen string // the addresses; both empty: an error wrapping ErrConfig
		names        string // with an error: what its message must name
	}
	cases := []testCase{
		{"host name", Config{Addr: "node1", Port: 29500, Rank: 1, WorldSize: 2}, "node1:29500", ":29500", ""},
		{"IPv4 address", Config{Addr: "10.0.0.1", Port: 29500, WorldSize: 2}, "10.0.0.1:29500", ":29500", ""},
		{"IPv6 address", Config{Addr: "::1", Port: 29500, WorldSize: 2}, "[::1]:29500", ":29500", ""},
		{"bracketed IPv6 address", Config{Addr: "[::1]", Port: 29500, WorldSize: 2}, "[::1]:29500", ":29500", ""},
		{"IPv6 address with a zone", Config{Addr: "fe80::1%lo", Port: 29500, WorldSize: 2}, "[fe80::1%lo]:29500", ":29500", ""},
		{"no Addr at the root", Config{Port: 29500, WorldSize: 2}, ":29500", ":29500", ""},
		{"BindAddr", Config{Addr: "node1", BindAddr: "10.0.0.1", Port: 29500, WorldSize: 2}, "node1:29500", "10.0.0.1:29500", ""},
		{"bracketed IPv6 BindAddr", Config{Addr: "node1", BindAddr: "[::1]", Port: 29500, WorldSize: 2}, "node1:29500", "[::1]:29500", ""},

		{"Addr with a port", Config{Addr: "127.0.0.1:29500", Port: 29500, Rank: 1, WorldSize: 2}, "", "", "Addr"},
		{"Addr with a port at the root", Config{Addr: "node1:29500", Port: 29500, WorldSize: 2}, "", "", "Addr"},
		{"IPv6 Addr with a port", Config{Addr: "[::1]:29500", Port: 29500, Rank: 1, WorldSize: 2}, "", "", "Addr"},
		{"IPv6 Addr with a port, unbracketed", Config{Addr: "2001:db8::1:29500", Port: 29500, Rank: 1, WorldSize: 2}, "", "", "Addr"},
		{"BindAddr with a port", Config{Addr: "node1", BindAddr: "0.0.0.0:29500", Port: 29500, WorldSize: 2}, "", "", "BindAddr"},
		{"IPv6 BindAddr with a port", Config{Addr: "node1", BindAddr: "[::]:29500", Port: 29500, WorldSize: 2}, "", "", "BindAddr"},

		// NCCL's number of ranks is a C int.
		{"world size MaxInt32", Config{Addr: "node1", Port: 29500, Rank: math.MaxInt32 - 1, WorldSize: math.MaxInt32}, "node1:29500", ":29500", ""},
	}
	if strconv.IntSize > 32 { // else no int is larger
		big := int64(math.MaxInt32) + 1
		cases = append(cases,
			testCase{"world size above MaxInt32", Config{Addr: "node1", Port: 29500, WorldSize: int(big)}, "", "", "2147483647"},
			testCase{"rank above MaxInt32", Config{Addr: "node1", Port: 29500, Rank: int(big), WorldSize: int(big + 1)}, "", "", "2147483647"},
			testCase{"local rank above MaxInt32", Config{Addr: "node1", Port: 29500, WorldSize: 1, LocalRank: int(big)}, "", "", "2147483647"},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Check()
			if c.root == "" {
				if !errors.Is(err, ErrConfig) {
					t.Errorf("Check() = %v, want an error wrapping ErrConfig", err)
				} else if !strings.Contains(err.Error(), c.names) {
					t.Errorf("error %q does not name %s", err, c.names)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check() = %v", err)
			}
			if got := c.cfg.rootAddr(); got != c.root {
				t.Errorf("rootAddr() = %q, want %q", got, c.root)
			}
			if got, err := c.cfg.bindAddr(); err != nil || got != c.listen {
				t.Errorf("bindAddr() = %q, %v; want %q", got, err, c.listen)
			}
		})
	}
}
