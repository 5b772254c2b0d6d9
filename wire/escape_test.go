package wire

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"listingproxy/normalize"
	"listingproxy/upstream"
)

func TestXMLEscape(t *testing.T) {
	tests := []struct {
		in, text, attr string
	}{
		{"", "", ""},
		{"plain", "plain", "plain"},
		{`& < > " '`, `&amp; &lt; &gt; " '`, `&amp; &lt; &gt; &quot; '`},
		{"]]>", "]]&gt;", "]]&gt;"},
		{"a\tb\nc\rd", "a\tb\nc&#xD;d", "a&#x9;b&#xA;c&#xD;d"},
		{"\x00\x01\x1f\x7f", "\uFFFD\uFFFD\uFFFD\x7f", "\uFFFD\uFFFD\uFFFD\x7f"},
		{"Zoë 🏠 \u2028 \uFFFD", "Zoë 🏠 \u2028 \uFFFD", "Zoë 🏠 \u2028 \uFFFD"},
		{"\uFFFE\uFFFF", "\uFFFD\uFFFD", "\uFFFD\uFFFD"},
		{"a\xffb\xc3", "a\uFFFDb\uFFFD", "a\uFFFDb\uFFFD"},
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD", "\uFFFD\uFFFD\uFFFD"}, // an encoded surrogate is invalid UTF-8
	}
	for _, tt := range tests {
		if got := string(appendXMLText(nil, tt.in)); got != tt.text {
			t.Errorf("appendXMLText(%q) = %q, want %q", tt.in, got, tt.text)
		}
		if got := string(appendXMLAttr(nil, tt.in)); got != tt.attr {
			t.Errorf("appendXMLAttr(%q) = %q, want %q", tt.in, got, tt.attr)
		}
	}
}

func TestJSONEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{`& < > " ' \`, `\u0026 \u003c \u003e \" ' \\`},
		{"\b\f\n\r\t\x00\x1f\x7f", `\b\f\n\r\t\u0000\u001f` + "\x7f"},
		{"Zoë 🏠 \u2028\u2029", `Zoë 🏠 \u2028\u2029`},
		{"a\xffb\xc3", `a\ufffdb\ufffd`},
	}
	for _, tt := range tests {
		if got := string(appendJSONEscaped(nil, tt.in)); got != tt.want {
			t.Errorf("appendJSONEscaped(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got, want := string(jsonString(nil, tt.in)), marshalString(t, tt.in); got != want {
			t.Errorf("jsonString(%q) = %s, encoding/json gives %s", tt.in, got, want)
		}
	}
}

func marshalString(tb testing.TB, s string) string {
	tb.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// xmlReplaced is s with every character XML 1.0 does not allow, and every
// byte of invalid UTF-8, replaced by U+FFFD.
func xmlReplaced(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !isXMLChar(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// utf8Replaced is s with each byte of invalid UTF-8 replaced by U+FFFD, as
// encoding/json does.
func utf8Replaced(s string) string {
	var b strings.Builder
	for _, r := range s { // range yields U+FFFD for each invalid byte
		b.WriteRune(r)
	}
	return b.String()
}

var fuzzSeeds = []string{
	"",
	"plain text",
	`Tom & Jerry's "best" <home>`,
	"]]>",
	"tab\tnewline\ncr\rcrlf\r\n",
	"\x00\x01\x08\x0b\x0c\x1f\x7f",
	"Zoë Ångström 🏠 \u2028\u2029 \uFFFD \uFFFE \uFFFF",
	"bad \xff\xfe utf-8 \xc3 \xed\xa0\x80",
	"&amp; &#x41; &lt;",
	"\\ \"\\u0041\"",
	everyByte(), // each byte once: every entry of the escapers' tables
}

// everyByte is the 256 bytes in order, with a letter after each (so that
// each reaches the escapers on its own, not as part of a valid sequence).
func everyByte() string {
	b := make([]byte, 0, 512)
	for c := range 256 {
		b = append(b, byte(c), 'a')
	}
	return string(b)
}

// FuzzXMLEscape renders fuzzed text as an error list (field attribute and
// message text) and as a single error, parses the documents with
// encoding/xml and checks that the text survives: unchanged except for
// characters XML cannot carry (U+FFFD), and, in element text, the line-end
// normalization XML parsers must apply to a raw carriage return (the wire
// format escapes only &, < and > in text).
func FuzzXMLEscape(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		wantAttr := xmlReplaced(s)
		wantText := xmlTextWant(s)

		list := AppendErrors(nil, XML, normalize.Errors{{Field: s, Message: s}})
		attrs, texts := decodeXML(t, list)
		if diff := cmp.Diff([]string{wantAttr}, attrs["field"]); diff != "" {
			t.Errorf("field attribute (-want +got):\n%s\ndocument:\n%q", diff, list)
		}
		if diff := cmp.Diff(wantText, texts["error"]); diff != "" {
			t.Errorf("error text (-want +got):\n%s\ndocument:\n%q", diff, list)
		}

		single := AppendError(nil, XML, s)
		_, texts = decodeXML(t, single)
		if diff := cmp.Diff(wantText, texts["error"]); diff != "" {
			t.Errorf("single error text (-want +got):\n%s\ndocument:\n%q", diff, single)
		}

		p := textProperty(s)
		doc := AppendProperty(nil, XML, p, Options{})
		attrs, texts = decodeXML(t, doc)
		wantAddress := ""
		if s != "" {
			wantAddress = xmlTextWant(s + " " + s)
		}
		for _, c := range []struct{ name, got, want string }{
			{"address", texts["address"], wantAddress},
			{"description", texts["description"], wantText},
			{"photo", texts["photo"], wantText},
			{"agent", texts["agent"], wantText},
		} {
			if c.got != c.want {
				t.Errorf("property %s text = %q, want %q\ndocument:\n%q", c.name, c.got, c.want, doc)
			}
		}
		for _, name := range []string{"type", "caption", "thumbnail"} {
			if diff := cmp.Diff([]string{wantAttr}, attrs[name]); diff != "" {
				t.Errorf("photo %s attribute (-want +got):\n%s\ndocument:\n%q", name, diff, doc)
			}
		}
	})
}

// xmlTextWant is what a conforming parser reads back from s written as
// element text: s itself, but for characters XML cannot carry (\r is
// written as a character reference, so it survives).
func xmlTextWant(s string) string {
	return xmlReplaced(s)
}

// textProperty is a property whose free texts are all s.
func textProperty(s string) *upstream.Property {
	return &upstream.Property{
		ID:           1,
		StreetNumber: s,
		StreetName:   s,
		Description:  s,
		PhotoCount:   1,
		Photos:       []upstream.Media{{URL: s, Thumbnail: s, Type: s, Caption: s, Position: 1}},
		Agents:       []upstream.AgentRef{{ID: 2, Name: s}},
	}
}

// decodeXML parses doc strictly and returns the values of every attribute
// and the concatenated text of every element, by local name.
func decodeXML(t *testing.T, doc []byte) (attrs map[string][]string, texts map[string]string) {
	t.Helper()
	attrs = map[string][]string{}
	texts = map[string]string{}
	var stack []string
	dec := xml.NewDecoder(bytes.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return attrs, texts
		}
		if err != nil {
			t.Fatalf("XML does not parse: %v\n%q", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			stack = append(stack, tok.Name.Local)
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = append(attrs[a.Name.Local], a.Value)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				texts[stack[len(stack)-1]] += string(tok)
			}
		}
	}
}

// FuzzJSONEscape checks that fuzzed text is escaped byte for byte as
// encoding/json escapes it, and that the documents that carry it decode back
// to it (invalid UTF-8 aside).
func FuzzJSONEscape(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsonString(nil, s)), marshalString(t, s); got != want {
			t.Errorf("jsonString(%q) = %s, encoding/json gives %s", s, got, want)
		}
		want := utf8Replaced(s)

		list := AppendErrors(nil, JSON, normalize.Errors{{Field: s, Message: s}})
		var gotList struct {
			Errors struct {
				Count string
				Error struct{ Field, Message string }
			}
		}
		if err := json.Unmarshal(list, &gotList); err != nil {
			t.Fatalf("error list does not decode: %v\n%q", err, list)
		}
		if gotList.Errors.Error.Field != want || gotList.Errors.Error.Message != want {
			t.Errorf("error list decodes to %q, %q; want %q", gotList.Errors.Error.Field, gotList.Errors.Error.Message, want)
		}

		single := AppendError(nil, JSON, s)
		var gotSingle struct{ Error string }
		if err := json.Unmarshal(single, &gotSingle); err != nil {
			t.Fatalf("single error does not decode: %v\n%q", err, single)
		}
		if gotSingle.Error != want {
			t.Errorf("single error decodes to %q, want %q", gotSingle.Error, want)
		}

		doc := AppendProperty(nil, JSON, textProperty(s), Options{})
		var gotProp struct {
			Property struct {
				Address     struct{ Address string }
				Description string
				Photos      struct {
					Photo []struct{ URL, Thumbnail, Type, Caption string }
				}
				Agents struct {
					Agent []struct{ Name string }
				}
			}
		}
		if err := json.Unmarshal(doc, &gotProp); err != nil {
			t.Fatalf("property does not decode: %v\n%q", err, doc)
		}
		gp := gotProp.Property
		wantAddress := ""
		if s != "" {
			wantAddress = want + " " + want
		}
		if len(gp.Photos.Photo) != 1 || len(gp.Agents.Agent) != 1 {
			t.Fatalf("property lost its photo or agent:\n%q", doc)
		}
		ph := gp.Photos.Photo[0]
		got := []string{gp.Address.Address, gp.Description, ph.URL, ph.Thumbnail, ph.Type, ph.Caption, gp.Agents.Agent[0].Name}
		wantAll := []string{wantAddress, want, want, want, want, want, want}
		if diff := cmp.Diff(wantAll, got); diff != "" {
			t.Errorf("property texts (-want +got):\n%s\ndocument:\n%q", diff, doc)
		}
	})
}
