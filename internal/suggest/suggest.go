// Package suggest names the word a mistyped one likely meant, for the "did
// you mean" of configuration keys and API parameters: the candidate at the
// smallest Levenshtein distance, within a bound the caller sets.
// Hand-written: the distance is a dozen lines, and no library the project
// uses offers one. Standard library only.
package suggest

// Closest returns the candidate nearest to word when it is at most limit
// edits away (the first of equals, in the candidates' order), else "".
func Closest(word string, candidates []string, limit int) string {
	best, bestD := "", limit+1
	for _, c := range candidates {
		if d := Distance(word, c, bestD); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein distance of a and b in bytes, or limit when
// it is at least limit; words longer than 64 bytes are never near.
func Distance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
