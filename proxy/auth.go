package proxy

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/sync/singleflight"
)

// Permissions is a user's permission set.
type Permissions uint8

// The permissions.
const (
	// PermFull allows full detail.
	PermFull Permissions = 1 << iota
	// PermPrices adds the raw price_from/price_to to full detail.
	PermPrices
)

// String returns the canonical form used in cache keys: "none", "full",
// "prices" or "full+prices".
func (p Permissions) String() string {
	switch p & (PermFull | PermPrices) {
	case PermFull:
		return "full"
	case PermPrices:
		return "prices"
	case PermFull | PermPrices:
		return "full+prices"
	}
	return "none"
}

// User is an API user: Basic credentials bound to one tenant.
type User struct {
	Username     string
	PasswordHash []byte // bcrypt
	Tenant       string // key into the Server's tenants
	Permissions  Permissions
}

// principal is an authenticated caller.
type principal struct {
	username string
	tenant   *Tenant
	perms    Permissions
	// variant is the cache-key prefix of this caller: permissions; the
	// tenant is a separate part of the key.
	variant string
}

// maxVerified bounds the memo of verified Authorization headers; when full
// it is reset (a new generation), which costs one bcrypt per active header.
const maxVerified = 10000

// authenticator checks HTTP Basic credentials. bcrypt runs once per distinct
// Authorization header: results (success and failure) are memoised under
// the SHA-256 of the header value, never the password itself, and
// concurrent first uses of one header share one bcrypt.
type authenticator struct {
	users   map[string]*User
	tenants map[string]*Tenant
	dummy   []byte // hash checked for unknown users, so timing does not reveal them

	mu       sync.RWMutex
	verified map[[32]byte]*principal // nil value: known bad header
	flight   singleflight.Group
}

func newAuthenticator(users []User, tenants map[string]*Tenant) *authenticator {
	a := &authenticator{
		users:    make(map[string]*User, len(users)),
		tenants:  tenants,
		verified: make(map[[32]byte]*principal),
	}
	for i := range users {
		u := users[i]
		a.users[u.Username] = &u
		if a.dummy == nil {
			a.dummy = u.PasswordHash
		}
	}
	return a
}

// authenticate returns the caller of r, or nil when the credentials are
// missing or wrong.
func (a *authenticator) authenticate(r *http.Request) *principal {
	h := r.Header["Authorization"]
	if len(h) != 1 || len(h[0]) > 1024 {
		return nil
	}
	sum := sha256.Sum256([]byte(h[0]))
	a.mu.RLock()
	p, ok := a.verified[sum]
	a.mu.RUnlock()
	if ok {
		return p
	}
	v, _, _ := a.flight.Do(string(sum[:]), func() (any, error) {
		p := a.verify(h[0])
		a.mu.Lock()
		if len(a.verified) >= maxVerified {
			a.verified = make(map[[32]byte]*principal)
		}
		a.verified[sum] = p
		a.mu.Unlock()
		return p, nil
	})
	return v.(*principal)
}

func (a *authenticator) verify(header string) *principal {
	const prefix = "Basic "
	if len(header) < len(prefix) || !strings.EqualFold(header[:len(prefix)], prefix) {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(header[len(prefix):]))
	if err != nil {
		return nil
	}
	name, pass, ok := strings.Cut(string(raw), ":")
	if !ok {
		return nil
	}
	u := a.users[name]
	if u == nil {
		if a.dummy != nil {
			_ = bcrypt.CompareHashAndPassword(a.dummy, []byte(pass))
		}
		return nil
	}
	if bcrypt.CompareHashAndPassword(u.PasswordHash, []byte(pass)) != nil {
		return nil
	}
	t := a.tenants[u.Tenant]
	if t == nil {
		return nil
	}
	return &principal{username: u.Username, tenant: t, perms: u.Permissions, variant: u.Permissions.String()}
}
