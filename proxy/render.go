package proxy

import "sync"

// renderBuffers recycles the buffers bodies are rendered into. Rendering a
// 45 KB list into a nil slice grew it through a dozen sizes, allocating and
// copying about four times the body (186 KB a 20-property full list,
// bench/NOTES.md "Misses"), and left the stored body with up to a
// quarter of spare capacity, which the cache counts against its bound.
var renderBuffers sync.Pool // of *[]byte

// maxPooledRender is the largest buffer kept for reuse: a rare huge list
// (max_results) must not pin its buffer in the pool.
const maxPooledRender = 1 << 20

// render returns the body appendTo renders, in a slice of exactly its
// length: appendTo appends to a recycled buffer, and the body is copied out
// once.
func render(appendTo func(dst []byte) []byte) []byte {
	bp, _ := renderBuffers.Get().(*[]byte)
	if bp == nil {
		bp = new([]byte)
	}
	out := appendTo((*bp)[:0])
	body := make([]byte, len(out))
	copy(body, out)
	if cap(out) <= maxPooledRender {
		*bp = out[:0]
		renderBuffers.Put(bp)
	}
	return body
}
