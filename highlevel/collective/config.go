package collective

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds a rendezvous whose Config has no Timeout, and is
// the Timeout of a communicator whose Options have none.
const DefaultTimeout = 5 * time.Minute

// A Config says how a process finds the others of its job: the root rank's
// address, this process's rank and the number of ranks. ConfigFromEnv reads
// it from the variables torchrun sets; a program may also fill it in.
type Config struct {
	// Addr is the host (name or address) of the root rank, rank 0, where
	// the other ranks connect: $MASTER_ADDR. It is a host alone: node1,
	// 10.0.0.1, ::1 or [::1]; one with a port (10.0.0.1:29500,
	// [::1]:29500) is refused, the port goes in Port.
	Addr string
	// Port is the TCP port the root rank listens on: $MASTER_PORT.
	Port int
	// BindAddr is the address the root rank listens on. Empty, it listens
	// on the first address of Interface, or, when Interface is empty too,
	// on every address of the host, as torchrun's store does. Like Addr,
	// it is a host without a port.
	BindAddr string
	// Interface names the network interface (eth0, ib0) whose first
	// address the root listens on when BindAddr is empty. NCCL's own
	// traffic picks its interface by $NCCL_SOCKET_IFNAME.
	Interface string
	// Rank is this process's rank, 0 to WorldSize-1: $RANK.
	Rank int
	// WorldSize is the number of ranks, 1 to math.MaxInt32 (NCCL counts
	// them in a C int): $WORLD_SIZE. The root's memory grows with the
	// ranks that come, not with WorldSize.
	WorldSize int
	// LocalRank is this process's rank on its host, the device it usually
	// drives, 0 to math.MaxInt32: $LOCAL_RANK.
	LocalRank int
	// Timeout bounds the rendezvous, with the context's deadline if it is
	// earlier; zero means DefaultTimeout.
	Timeout time.Duration
}

// The variables ConfigFromEnv reads, as torchrun sets them.
const (
	EnvAddr      = "MASTER_ADDR"
	EnvPort      = "MASTER_PORT"
	EnvRank      = "RANK"
	EnvWorldSize = "WORLD_SIZE"
	EnvLocalRank = "LOCAL_RANK"
)

// ConfigFromEnv returns the Config the torchrun variables give: MASTER_ADDR,
// MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK. All but LOCAL_RANK must be
// set; without LOCAL_RANK, LocalRank is Rank, as when all ranks run on one
// host. MASTER_ADDR is a host without a port (node1, 10.0.0.1, ::1, [::1],
// the last kept as ::1): one with a port, 10.0.0.1:29500 or [::1]:29500, is
// refused at once rather than dialled until the Timeout. It checks the
// Config as Config.Check does; its errors wrap ErrConfig and name the
// variable at fault.
func ConfigFromEnv() (Config, error) {
	return configFrom(os.LookupEnv)
}

// InEnv reports whether the torchrun variables are set: whether the
// process is one rank of a job (WORLD_SIZE is set).
func InEnv() bool {
	_, ok := os.LookupEnv(EnvWorldSize)
	return ok
}

func configFrom(lookup func(string) (string, bool)) (Config, error) {
	var c Config
	num := func(name string, required bool, dst *int) error {
		s, ok := lookup(name)
		if !ok || s == "" {
			if required {
				return fmt.Errorf("%w: $%s is not set", ErrConfig, name)
			}
			return nil
		}
		v, err := strconv.Atoi(s)
		if errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%w: $%s=%q is out of range", ErrConfig, name, s)
		}
		if err != nil {
			return fmt.Errorf("%w: $%s=%q is not an integer", ErrConfig, name, s)
		}
		*dst = v
		return nil
	}
	addr, ok := lookup(EnvAddr)
	if !ok || addr == "" {
		return Config{}, fmt.Errorf("%w: $%s is not set", ErrConfig, EnvAddr)
	}
	host, err := hostOf("$"+EnvAddr, "$"+EnvPort, addr)
	if err != nil {
		return Config{}, err
	}
	c.Addr = host
	c.LocalRank = -1
	for _, v := range []struct {
		name     string
		required bool
		dst      *int
	}{
		{EnvPort, true, &c.Port},
		{EnvRank, true, &c.Rank},
		{EnvWorldSize, true, &c.WorldSize},
		{EnvLocalRank, false, &c.LocalRank},
	} {
		if err := num(v.name, v.required, v.dst); err != nil {
			return Config{}, err
		}
	}
	if c.LocalRank < 0 {
		if _, set := lookup(EnvLocalRank); set {
			return Config{}, fmt.Errorf("%w: $%s=%d is negative", ErrConfig, EnvLocalRank, c.LocalRank)
		}
		c.LocalRank = c.Rank
	}
	if err := c.Check(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Check reports what makes c unusable, in an error wrapping ErrConfig: no
// root address, an Addr or BindAddr that is not a host alone (one with a
// port, "10.0.0.1:29500", "[::1]:29500"), a port outside 1 to 65535, a
// world size outside 1 to math.MaxInt32 (NCCL's number of ranks is a C
// int), a rank outside 0 to WorldSize-1, a LocalRank outside 0 to
// math.MaxInt32, a negative Timeout, or an Interface that is not there or
// has no address.
func (c *Config) Check() error {
	switch {
	case c == nil:
		return fmt.Errorf("%w: nil *Config", ErrConfig)
	case c.Addr == "" && c.Rank != 0:
		return fmt.Errorf("%w: no root address (Addr, $%s)", ErrConfig, EnvAddr)
	case c.Port < 1 || c.Port > 65535:
		return fmt.Errorf("%w: port %d: want 1 to 65535", ErrConfig, c.Port)
	case c.WorldSize < 1 || int64(c.WorldSize) > math.MaxInt32:
		return fmt.Errorf("%w: world size %d: want 1 to %d, NCCL's number of ranks being a C int", ErrConfig, c.WorldSize, math.MaxInt32)
	case c.Rank < 0 || c.Rank >= c.WorldSize:
		return fmt.Errorf("%w: rank %d: want 0 to %d for a world size of %d", ErrConfig, c.Rank, c.WorldSize-1, c.WorldSize)
	case c.LocalRank < 0 || int64(c.LocalRank) > math.MaxInt32:
		return fmt.Errorf("%w: local rank %d: want 0 to %d", ErrConfig, c.LocalRank, math.MaxInt32)
	case c.Timeout < 0:
		return fmt.Errorf("%w: timeout %v is negative", ErrConfig, c.Timeout)
	}
	for _, h := range []struct{ name, s string }{{"Addr", c.Addr}, {"BindAddr", c.BindAddr}} {
		if h.s != "" {
			if _, err := hostOf(h.name, "Port", h.s); err != nil {
				return err
			}
		}
	}
	if c.BindAddr == "" && c.Interface != "" && c.Rank == 0 {
		if _, err := interfaceAddr(c.Interface); err != nil {
			return err
		}
	}
	return nil
}

// hostOf returns the host s names, an IPv6 address without its brackets,
// or an error wrapping ErrConfig that names s as name, where s is not a
// host alone: a host and port ("10.0.0.1:29500", "[::1]:29500"), brackets
// around something else than an IPv6 address. A host name is not looked
// up: it may come to resolve while the ranks retry.
func hostOf(name, portName, s string) (string, error) {
	what := name + " " + strconv.Quote(s)
	if strings.HasPrefix(name, "$") {
		what = name + "=" + strconv.Quote(s)
	}
	if h, port, err := net.SplitHostPort(s); err == nil {
		if strings.Trim(port, "0123456789") == "" {
			return "", fmt.Errorf("%w: %s is a host and a port: want the host alone (%s), the port in %s", ErrConfig, what, h, portName)
		}
		return "", fmt.Errorf("%w: %s is not a host name or address", ErrConfig, what)
	}
	if strings.HasPrefix(s, "[") {
		inner, ok := strings.CutSuffix(s[1:], "]")
		if a, err := netip.ParseAddr(inner); ok && err == nil && a.Is6() {
			return inner, nil
		}
		return "", fmt.Errorf("%w: %s: brackets hold an IPv6 address, as in [::1]", ErrConfig, what)
	}
	if strings.Contains(s, ":") {
		// Not host:port: an IPv6 address (::1, fe80::1%eth0), or nothing.
		if _, err := netip.ParseAddr(s); err != nil {
			return "", fmt.Errorf("%w: %s is not a host name or address (an IPv6 address and a port? the port goes in %s)", ErrConfig, what, portName)
		}
	}
	return s, nil
}

// unbracket is the host s, checked by hostOf, without its brackets.
func unbracket(s string) string {
	if len(s) > 1 && s[0] == '[' && s[len(s)-1] == ']' {
		return s[1 : len(s)-1]
	}
	return s
}

// rootAddr is the address the other ranks dial.
func (c *Config) rootAddr() string {
	return net.JoinHostPort(unbracket(c.Addr), strconv.Itoa(c.Port))
}

// bindAddr is the address the root listens on.
func (c *Config) bindAddr() (string, error) {
	host := unbracket(c.BindAddr)
	if host == "" && c.Interface != "" {
		ip, err := interfaceAddr(c.Interface)
		if err != nil {
			return "", err
		}
		host = ip.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(c.Port)), nil
}

// interfaceAddr returns the first address of the network interface name,
// IPv4 before IPv6.
func interfaceAddr(name string) (net.IP, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, fmt.Errorf("%w: interface %q: %v", ErrConfig, name, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return nil, fmt.Errorf("%w: interface %q: %v", ErrConfig, name, err)
	}
	var v6 net.IP
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip4 := ipn.IP.To4(); ip4 != nil {
			return ip4, nil
		}
		if v6 == nil && !ipn.IP.IsLinkLocalUnicast() {
			v6 = ipn.IP
		}
	}
	if v6 != nil {
		return v6, nil
	}
	return nil, fmt.Errorf("%w: interface %q has no usable address", ErrConfig, name)
}
