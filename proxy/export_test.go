package proxy

// WithoutDirectRoutes makes s route every request through its ServeMux, as
// before route existed (TestDirectRoutesAgreeWithServeMux compares the two).
func WithoutDirectRoutes(s *Server) { s.lists, s.singles = nil, nil }

// GETPatterns are the patterns of s's GET routes.
func GETPatterns(s *Server) []string { return append([]string(nil), s.getPatterns...) }
