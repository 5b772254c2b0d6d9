package wire

import "unicode/utf8"

const replacementChar = "\uFFFD"

// appendXMLText appends s escaped as XML character data: &, < and > become
// entity references, and characters that XML 1.0 does not allow (most C0
// controls, U+FFFE, U+FFFF and invalid UTF-8, byte by byte) become U+FFFD.
// Other characters, including ' and ", are written as they are.
func appendXMLText(dst []byte, s string) []byte {
	return appendXMLEscaped(dst, s, false)
}

// appendXMLAttr appends s escaped as a double-quoted XML attribute value: as
// appendXMLText, and also " as &quot; and tab, newline and carriage return as
// character references, so that attribute-value normalization keeps them.
func appendXMLAttr(dst []byte, s string) []byte {
	return appendXMLEscaped(dst, s, true)
}

// The bytes each escaper copies as they are: a table look-up per byte in
// the loops below instead of a chain of comparisons (every text field of a
// rendered list passes through them). Bytes from utf8.RuneSelf up are
// false: they start a multi-byte character, which is checked whole.
var (
	xmlTextPlain = asciiTable(func(c byte) bool { return c >= 0x20 && c != '&' && c != '<' && c != '>' || c == '\t' || c == '\n' })
	xmlAttrPlain = asciiTable(func(c byte) bool { return c >= 0x20 && c != '&' && c != '<' && c != '>' && c != '"' })
	jsonPlain    = asciiTable(func(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' })
)

func asciiTable(plain func(byte) bool) (t [256]bool) {
	for c := range utf8.RuneSelf {
		t[c] = plain(byte(c))
	}
	return t
}

func appendXMLEscaped(dst []byte, s string, attr bool) []byte {
	plain := &xmlTextPlain
	if attr {
		plain = &xmlAttrPlain
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			var esc string
			switch {
			case c >= 0x20 && c != '&' && c != '<' && c != '>' && c != '"':
				i++
				continue
			case c == '&':
				esc = "&amp;"
			case c == '<':
				esc = "&lt;"
			case c == '>':
				esc = "&gt;"
			case c == '"':
				if !attr {
					i++
					continue
				}
				esc = "&quot;"
			case c == '\t' || c == '\n' || c == '\r':
				if !attr && c != '\r' { // a raw \r in text would be read back as \n
					i++
					continue
				}
				switch c {
				case '\t':
					esc = "&#x9;"
				case '\n':
					esc = "&#xA;"
				default:
					esc = "&#xD;"
				}
			default: // other C0 controls are not XML 1.0 characters
				esc = replacementChar
			}
			dst = append(dst, s[start:i]...)
			dst = append(dst, esc...)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == 0xFFFE || r == 0xFFFF {
			dst = append(dst, s[start:i]...)
			dst = append(dst, replacementChar...)
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}

const lowerHex = "0123456789abcdef"

// appendJSONEscaped appends the contents of a JSON string literal for s (no
// quotes), escaped exactly as encoding/json does with HTML escaping on: ", \
// and C0 controls with their short or \u00XX forms, <, > and & as \u003c,
// \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func appendJSONEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonPlain[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default: // other controls, <, > and &
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
