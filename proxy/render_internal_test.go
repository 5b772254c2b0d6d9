package proxy

import (
	"bytes"
	"sync"
	"testing"
)

// TestRenderOwnsItsBody renders bodies of several sizes from many
// goroutines through the shared buffers: each body must be exactly sized
// (the cache counts capacity) and keep its bytes after its buffer is
// reused for other bodies.
func TestRenderOwnsItsBody(t *testing.T) {
	const workers, rounds = 8, 50
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Go(func() {
			var kept [][]byte
			var want [][]byte
			for i := range rounds {
				fill := bytes.Repeat([]byte{byte('a' + (w+i)%26)}, 100+(w*977+i*4099)%60000)
				body := render(func(dst []byte) []byte { return append(dst, fill...) })
				if len(body) != cap(body) {
					errs <- "a body has spare capacity"
					return
				}
				kept, want = append(kept, body), append(want, fill)
			}
			for i := range kept {
				if !bytes.Equal(kept[i], want[i]) {
					errs <- "a body changed after its buffer was reused"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}
