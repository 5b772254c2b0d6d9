// Command hostilecrm is a stand-in CRM for bench/crm-hostile.sh that answers
// every GET with one large XML document built to cost a parser memory or
// time, held in memory and sent at full speed with its Content-Length (or
// chunked with -chunked). Shapes, each about -size bytes:
//
//	elements  one property padded with tiny unknown elements (<x/>)
//	photos    one property with tiny known elements (<photo/>)
//	records   tiny records (<property id="N"/>)
//	text      one property whose description is the whole size (legitimate,
//	          if large: it parses)
//
// It checks no credentials and ignores the path and query.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen address")
	shape := flag.String("shape", "elements", "elements, photos, records or text")
	size := flag.Int("size", 15<<20, "approximate body size in bytes")
	chunked := flag.Bool("chunked", false, "omit Content-Length")
	flag.Parse()
	body, err := build(*shape, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostilecrm:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostilecrm:", err)
		os.Exit(1)
	}
	fmt.Printf("hostilecrm listening on http://%s (shape %s, %d bytes)\n", ln.Addr(), *shape, len(body))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		if !*chunked {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		}
		_, _ = w.Write(body)
	})
	if err := http.Serve(ln, h); err != nil {
		fmt.Fprintln(os.Stderr, "hostilecrm:", err)
		os.Exit(1)
	}
}

// build returns a document of the shape, about size bytes long.
func build(shape string, size int) ([]byte, error) {
	var open, item, end string
	switch shape {
	case "elements":
		open, item, end = `<properties><property id="1">`, `<x/>`, `</property></properties>`
	case "photos":
		open, item, end = `<properties><property id="1"><photos>`, `<photo/>`, `</photos></property></properties>`
	case "records":
		open, item, end = `<properties>`, `<property id="1"/>`, `</properties>`
	case "text":
		open, item, end = `<properties><property id="1"><description>`, `x`, `</description></property></properties>`
	default:
		return nil, fmt.Errorf("unknown shape %q (want elements, photos, records or text)", shape)
	}
	n := max(0, (size-len(open)-len(end))/len(item))
	return []byte(open + strings.Repeat(item, n) + end), nil
}
