//go:build !race

package wire

import (
	"testing"

	"listingproxy/normalize"
)

// TestZeroAllocs guards the steady state of the benchmarks: once the
// caller's buffer is large enough, rendering allocates nothing. (Excluded
// under the race detector, which allocates on its own account.)
func TestZeroAllocs(t *testing.T) {
	ps := benchProperties(5)
	as := fixtureAgents()
	full := Options{Detail: normalize.Full, Prices: true, Location: sydney(t)}
	errs := fixtureErrors(2)
	for _, f := range formats {
		calls := map[string]func([]byte) []byte{
			"AppendPropertyList": func(b []byte) []byte { return AppendPropertyList(b, f, ps, full) },
			"AppendProperty":     func(b []byte) []byte { return AppendProperty(b, f, &ps[0], full) },
			"AppendAgentList":    func(b []byte) []byte { return AppendAgentList(b, f, as, full) },
			"AppendAgent":        func(b []byte) []byte { return AppendAgent(b, f, &as[2], full) },
			"AppendErrors":       func(b []byte) []byte { return AppendErrors(b, f, errs) },
			"AppendError":        func(b []byte) []byte { return AppendError(b, f, "Agent with ID 9 not found") },
		}
		for name, call := range calls {
			t.Run(name+"."+f.String(), func(t *testing.T) {
				buf := call(nil)
				if n := testing.AllocsPerRun(20, func() { buf = call(buf[:0]) }); n != 0 {
					t.Errorf("%s allocates %v times per call with a large enough buffer, want 0", name, n)
				}
			})
		}
	}
}
