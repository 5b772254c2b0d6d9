package normalize_test

import (
	"fmt"
	"net/url"

	"listingproxy/normalize"
)

func ExampleParseProperties() {
	q, _ := url.ParseQuery("status[]=sold&status[]=Current&order=price&limit=5000&utm_source=mail")
	c, errs := normalize.ParseProperties(q, normalize.Options{MaxResults: 100})
	if errs != nil {
		fmt.Println(errs)
		return
	}
	fmt.Println(c.Property().Statuses, c.Limit(), c.Order())
	fmt.Println(c.Key())
	// Output:
	// [CURRENT SOLD] 100 [price id]
	// properties?status=CURRENT,SOLD&detail=short&limit=100&offset=0&order=price,id
}

func ExampleParseProperties_errors() {
	q, _ := url.ParseQuery("category=castle&approved_from=2024-01-01&id[]=")
	_, errs := normalize.ParseProperties(q, normalize.Options{})
	for _, e := range errs {
		fmt.Printf("%s: %s\n", e.Field, e.Message)
	}
	// Output:
	// category: Invalid category "castle": must be Residential, Commercial or Agricultural
	// approved_from: Invalid date "2024-01-01": use the format yyyymmdd
}

func ExampleCriteria_Values() {
	q, _ := url.ParseQuery("name=Jo&order=NAME")
	c, _ := normalize.ParseAgents(q, normalize.Options{})
	fmt.Println(c.Values().Encode())
	// Output:
	// detail=short&limit=1000&name=jo&offset=0&order=name
}
