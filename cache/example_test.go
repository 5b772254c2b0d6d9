package cache_test

import (
	"context"
	"fmt"
	"time"

	"listingproxy/cache"
)

func ExampleStore_Get() {
	store, err := cache.New(cache.Options{MaxBytes: 64 << 20})
	if err != nil {
		panic(err)
	}
	defer store.Close()

	key := cache.Key{Tenant: "harbour", Resource: "au/properties/42", Variant: "full|json"}
	policy := cache.Policy{TTL: time.Minute, StaleWhileRevalidate: 5 * time.Minute, StaleIfError: time.Hour}
	render := func(ctx context.Context) (*cache.Entry, error) {
		// Call the backend and render the body once, here.
		return cache.NewEntry([]byte(`{"id":42}`), "application/json; charset=utf-8", false, time.Now()), nil
	}

	for range 2 {
		e, outcome, err := store.Get(context.Background(), key, policy, render)
		if err != nil {
			fmt.Println("503:", err)
			continue
		}
		fmt.Println(outcome, string(e.Body), e.ContentType)
	}
	// Output:
	// miss {"id":42} application/json; charset=utf-8
	// hit {"id":42} application/json; charset=utf-8
}
