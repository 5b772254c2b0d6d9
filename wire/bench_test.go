package wire

import (
	"os"
	"strings"
	"testing"
	"time"

	"listingproxy/normalize"
)

// The benchmarks reuse one buffer across iterations, as a server that pools
// its buffers does; the steady state allocates nothing.

func BenchmarkAppendPropertyList_Full50(b *testing.B) {
	ps := benchProperties(50)
	o := Options{Detail: normalize.Full, Prices: true, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendPropertyList(nil, f, ps, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendPropertyList(buf[:0], f, ps, o)
			}
		})
	}
}

func BenchmarkAppendPropertyList_Short50(b *testing.B) {
	ps := benchProperties(50)
	o := Options{Detail: normalize.Short, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendPropertyList(nil, f, ps, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendPropertyList(buf[:0], f, ps, o)
			}
		})
	}
}

func BenchmarkAppendProperty(b *testing.B) {
	p := &benchProperties(1)[0]
	o := Options{Prices: true, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendProperty(nil, f, p, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendProperty(buf[:0], f, p, o)
			}
		})
	}
}

func BenchmarkAppendAgentList_Full(b *testing.B) {
	as := fixtureAgents()
	o := Options{Detail: normalize.Full, Location: sydney(b)}
	for _, f := range formats {
		b.Run(f.String(), func(b *testing.B) {
			buf := AppendAgentList(nil, f, as, o)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = AppendAgentList(buf[:0], f, as, o)
			}
		})
	}
}

// BenchmarkPassThroughJSON: the JSON of a full-detail list of 50 legacy
// records (testdata/legacy/properties_full.xml's, repeated), as a fill
// renders it for a caller with the upstream user's permissions.
func BenchmarkPassThroughJSON(b *testing.B) {
	src, err := os.ReadFile("testdata/legacy/properties_full.xml")
	if err != nil {
		b.Fatal(err)
	}
	recs := legacyRecords(b, src)
	var doc strings.Builder
	doc.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<properties count=\"50\">")
	for i := range 50 {
		doc.WriteString("\n  " + recs[i%len(recs)])
	}
	doc.WriteString("\n</properties>\n")
	ps, err := ReadPropertyList(NewRawDecoder(strings.NewReader(doc.String())), time.UTC, true, 100, ReadOptions{Keep: true})
	if err != nil {
		b.Fatal(err)
	}
	o := Options{Detail: normalize.Full, Prices: true, Unknown: true}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendPropertyList(buf[:0], JSON, ps, o)
	}
}

// legacyRecords returns the <property> records of a legacy list document,
// as written.
func legacyRecords(tb testing.TB, src []byte) []string {
	tb.Helper()
	var out []string
	s := string(src)
	for {
		i := strings.Index(s, "<property ")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], "</property>")
		if j < 0 {
			tb.Fatal("unterminated record")
		}
		out = append(out, s[i:i+j+len("</property>")])
		s = s[i+j:]
	}
}
