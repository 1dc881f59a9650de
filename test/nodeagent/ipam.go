package nodeagent

import (
	"fmt"
	"net/netip"
	"sync"
)

// ipAllocator hands out the loopback addresses of a prefix, one per pod,
// never one that is in use. It goes round the prefix rather than reusing
// the lowest free address, so that a freed address rests before it serves
// again.
type ipAllocator struct {
	mu     sync.Mutex
	prefix netip.Prefix
	next   netip.Addr
	used   map[netip.Addr]bool
}

func newIPAllocator(prefix netip.Prefix) (*ipAllocator, error) {
	prefix = prefix.Masked()
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	if !prefix.Addr().Is4() || !loopback.Contains(prefix.Addr()) || prefix.Bits() < 8 || prefix.Bits() > 30 {
		return nil, fmt.Errorf("nodeagent: address prefix %s is not an IPv4 loopback prefix between /8 and /30", prefix)
	}
	return &ipAllocator{prefix: prefix, next: prefix.Addr().Next(), used: map[netip.Addr]bool{}}, nil
}

// usable excludes the prefix's first and last addresses and, for looks,
// any address ending in .0 or .255.
func (a *ipAllocator) usable(addr netip.Addr) bool {
	if !a.prefix.Contains(addr) || addr == a.prefix.Addr() {
		return false
	}
	last := addr.As4()[3]
	if last == 0 || last == 255 {
		return false
	}
	return a.prefix.Contains(addr.Next())
}

// allocate returns preferred when it is a free address of the prefix (a pod
// keeps its address across agent restarts), else the next free one.
func (a *ipAllocator) allocate(preferred string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if addr, err := netip.ParseAddr(preferred); err == nil && a.usable(addr) && !a.used[addr] {
		a.used[addr] = true
		return addr.String(), nil
	}
	size := 1 << (32 - a.prefix.Bits())
	addr := a.next
	for range size {
		if !a.prefix.Contains(addr) {
			addr = a.prefix.Addr()
		}
		if a.usable(addr) && !a.used[addr] {
			a.used[addr] = true
			a.next = addr.Next()
			return addr.String(), nil
		}
		addr = addr.Next()
	}
	return "", fmt.Errorf("nodeagent: no free address left in %s", a.prefix)
}

func (a *ipAllocator) release(ip string) {
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.used, addr)
}
