package admin

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/semaphore"
)

// operatorAuth checks the operator's Basic credentials with bounded cost.
// A bcrypt comparison costs tens of milliseconds of CPU, and the admin
// listener used to run one per request, unbounded: anything that could
// reach it (a scraper of /status, a wrong-password loop) could take the
// cores from the public listener. So:
//
//   - the credential last verified is remembered as an HMAC under a key
//     drawn at start (never the password), and a request presenting it
//     again costs one SHA-256, no bcrypt;
//   - at most one bcrypt runs at a time; a request that finds it busy gets
//     429 with Retry-After at once, no bcrypt, no queue;
//   - every failed check takes a token from its client address's bucket
//     (failureThrottle: 30 a minute, burst 10, as on the public listener);
//     an address whose bucket is empty gets 429 with Retry-After, held
//     DefaultRefusalDelay, and no bcrypt. Without it one client looping on
//     wrong passwords kept the single bcrypt slot busy: a core taken from
//     the public listener.
//
// One operator, one remembered credential: the memo is a single value, so
// it needs no eviction. It is hand-written because it is twenty lines; the
// public listener's bounded pool (proxy/auth.go) serves many users.
type operatorAuth struct {
	user, hash string
	key        [32]byte
	verified   atomic.Pointer[[sha256.Size]byte]
	slot       *semaphore.Weighted // of 1: the one bcrypt allowed to run
	failures   *failureThrottle
}

func newOperatorAuth(user, hash string) *operatorAuth {
	a := &operatorAuth{user: user, hash: hash, slot: semaphore.NewWeighted(1),
		failures: newFailureThrottle(time.Now, DefaultRefusalDelay)}
	rand.Read(a.key[:]) // never fails (crypto/rand)
	return a
}

// mac is the remembered form of a credential.
func (a *operatorAuth) mac(user, pass string) *[sha256.Size]byte {
	m := hmac.New(sha256.New, a.key[:])
	m.Write([]byte(user))
	m.Write([]byte{0})
	m.Write([]byte(pass))
	var sum [sha256.Size]byte
	m.Sum(sum[:0])
	return &sum
}

// require lets through only requests with the operator's credentials.
func (a *operatorAuth) require(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		addr := clientAddr(r)
		if a.user == "" || !ok { // costs no bcrypt: not a failure to throttle
			deny(w)
			return
		}
		sum := a.mac(user, pass)
		if v := a.verified.Load(); v != nil && subtle.ConstantTimeCompare(v[:], sum[:]) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		if wait := a.failures.wait(addr); wait > 0 {
			a.failures.refuse(w, r, wait)
			return
		}
		if !a.slot.TryAcquire(1) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "admin credential check busy: retry", http.StatusTooManyRequests)
			return
		}
		// The username is compared after the bcrypt, so that a wrong name
		// costs what a wrong password does.
		good := bcrypt.CompareHashAndPassword([]byte(a.hash), []byte(pass)) == nil
		a.slot.Release(1)
		if !good || subtle.ConstantTimeCompare([]byte(user), []byte(a.user)) != 1 {
			a.failures.fail(addr)
			deny(w)
			return
		}
		a.verified.Store(sum)
		next.ServeHTTP(w, r)
	})
}

func deny(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="listingproxy admin"`)
	http.Error(w, "admin credentials required", http.StatusUnauthorized)
}
