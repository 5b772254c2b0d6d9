package proxy

import "sync/atomic"

// WithoutDirectRoutes makes s route every request through its ServeMux, as
// before route existed (TestDirectRoutesAgreeWithServeMux compares the two).
func WithoutDirectRoutes(s *Server) { s.lists, s.singles = nil, nil }

// GETPatterns are the patterns of s's GET routes.
func GETPatterns(s *Server) []string { return append([]string(nil), s.getPatterns...) }

// CountFrontHits counts the answers from the front memo (frontMemo) until
// the test ends; tests of this package do not run in parallel.
func CountFrontHits(t interface{ Cleanup(func()) }) *atomic.Int64 {
	n := new(atomic.Int64)
	frontHitHook = func() { n.Add(1) }
	t.Cleanup(func() { frontHitHook = nil })
	return n
}

// CountFrontFirst counts the answers from the front memo given before
// the routing (Server.serveFront), until t ends.
func CountFrontFirst(t interface{ Cleanup(func()) }) *atomic.Int64 {
	n := new(atomic.Int64)
	frontFirstHook = func() { n.Add(1) }
	t.Cleanup(func() { frontFirstHook = nil })
	return n
}

// FrontLen is how many entries s's front memo holds.
func FrontLen(s *Server) int { return s.front.len() }
