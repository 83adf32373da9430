package egress_test

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
)

// dnsServer is a tiny DNS server on 127.0.0.1 (UDP) for the tests: it
// answers A and AAAA queries from a script per name, one answer list per
// query of that type (the last one repeats), and NXDOMAIN for unknown
// names. Nothing leaves loopback.
type dnsServer struct {
	pc net.PacketConn
	mu sync.Mutex
	// answers[name][qtype] is the script; asked counts the queries.
	answers map[string]map[uint16][][]netip.Addr
	asked   map[string]map[uint16]int
}

const (
	typeA    = 1
	typeAAAA = 28
)

func newDNSServer(t *testing.T) *dnsServer {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dnsServer{pc: pc, answers: map[string]map[uint16][][]netip.Addr{}, asked: map[string]map[uint16]int{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := s.answer(buf[:n]); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() { pc.Close(); <-done })
	return s
}

// script sets the successive answers for name: each element is the
// answer to one lookup (its IPv4 addresses go to the A query, its IPv6
// ones to the AAAA query).
func (s *dnsServer) script(name string, lookups ...[]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[uint16][][]netip.Addr{}
	for _, l := range lookups {
		var a, aaaa []netip.Addr
		for _, x := range l {
			ip := netip.MustParseAddr(x)
			if ip.Is4() {
				a = append(a, ip)
			} else {
				aaaa = append(aaaa, ip)
			}
		}
		m[typeA] = append(m[typeA], a)
		m[typeAAAA] = append(m[typeAAAA], aaaa)
	}
	s.answers[strings.ToLower(name)] = m
	s.asked[strings.ToLower(name)] = map[uint16]int{}
}

// queries returns how many A queries name got.
func (s *dnsServer) queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[name][typeA]
}

func (s *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	// The question: labels, then type and class.
	i := 12
	var labels []string
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i:i+l]))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i : i+2])
	question := q[12 : i+4]
	name := strings.ToLower(strings.Join(labels, "."))

	s.mu.Lock()
	script, known := s.answers[name]
	var ips []netip.Addr
	if known {
		k := s.asked[name][qtype]
		s.asked[name][qtype] = k + 1
		if l := script[qtype]; len(l) > 0 {
			ips = l[min(k, len(l)-1)]
		}
	}
	s.mu.Unlock()

	resp := make([]byte, 12, 512)
	copy(resp[0:2], q[0:2])
	flags := uint16(0x8180) // response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	binary.BigEndian.PutUint16(resp[2:4], flags)
	binary.BigEndian.PutUint16(resp[4:6], 1)
	binary.BigEndian.PutUint16(resp[6:8], uint16(len(ips)))
	resp = append(resp, question...)
	for _, ip := range ips {
		resp = append(resp, 0xc0, 12) // the name: a pointer to the question
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, 1) // IN
		resp = binary.BigEndian.AppendUint32(resp, 0) // TTL 0
		b := ip.AsSlice()
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(b)))
		resp = append(resp, b...)
	}
	return resp
}

// resolver returns a Go resolver that asks only this server.
func (s *dnsServer) resolver() *net.Resolver {
	addr := s.pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", addr)
	}}
}
