package proxy

// WithoutDirectRoutes makes s route every request through its ServeMux, as
// before route existed (TestDirectRoutesAgreeWithServeMux compares the two).
func WithoutDirectRoutes(s *Server) { s.lists, s.singles = nil, nil }
