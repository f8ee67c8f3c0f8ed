package httpapi

import (
	"fmt"

	"github.com/contactd/contactd/internal/apperr"
)

// Shape limits of request bodies, checked by scanning the bytes before anything decodes the
// body into values: no API body nests deeper than a few levels or holds long arrays, so a
// body that does is refused without paying for it.
const (
	MaxJSONDepth      = 16
	MaxJSONArrayItems = 1000
)

// checkJSONShape refuses bodies nested deeper than MaxJSONDepth or with an array longer than
// MaxJSONArrayItems, and counts the items of the longest array that is a member of the
// top-level object (a batch's contacts: what the rate limiter charges, without a decode). It
// only follows strings, brackets and commas (a tokenizer cost a tenth of a create's CPU);
// malformed JSON is left to the validator, which reports it in detail.
func checkJSONShape(body []byte) (items int, err error) {
	// per open bracket: -1 for an object, else the commas seen so far in the array.
	var stack [MaxJSONDepth]int
	depth, inString, escaped := 0, false, false
	memberArray := func() bool { return depth == 2 && stack[0] < 0 && stack[1] >= 0 }
	memberHasItem := false // the member array open now has a value in it
	for _, b := range body {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		if memberArray() && b != ']' && b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			memberHasItem = true
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth == MaxJSONDepth {
				return 0, apperr.Invalid(apperr.Field("body", "maxDepth", fmt.Sprintf("JSON nested deeper than %d levels", MaxJSONDepth)))
			}
			stack[depth] = -1
			if b == '[' {
				stack[depth] = 0
			}
			depth++
		case '}', ']':
			if b == ']' && memberArray() {
				if memberHasItem {
					items = max(items, stack[1]+1)
				}
				memberHasItem = false
			}
			if depth > 0 {
				depth--
			}
		case ',':
			if depth > 0 && stack[depth-1] >= 0 {
				if stack[depth-1]++; stack[depth-1] >= MaxJSONArrayItems { // commas + 1 items
					return 0, apperr.Invalid(apperr.Field("body", "maxItems", fmt.Sprintf("a JSON array longer than %d items", MaxJSONArrayItems)))
				}
			}
		}
	}
	return items, nil
}
