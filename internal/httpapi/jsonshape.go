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
// MaxJSONArrayItems. It only follows strings, brackets and commas (a tokenizer cost a tenth
// of a create's CPU); malformed JSON is left to the validator, which reports it in detail.
func checkJSONShape(body []byte) error {
	// per open bracket: -1 for an object, else the commas seen so far in the array.
	var stack [MaxJSONDepth]int
	depth, inString, escaped := 0, false, false
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
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth == MaxJSONDepth {
				return apperr.Invalid(apperr.Field("body", "maxDepth", fmt.Sprintf("JSON nested deeper than %d levels", MaxJSONDepth)))
			}
			stack[depth] = -1
			if b == '[' {
				stack[depth] = 0
			}
			depth++
		case '}', ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth > 0 && stack[depth-1] >= 0 {
				if stack[depth-1]++; stack[depth-1] >= MaxJSONArrayItems { // commas + 1 items
					return apperr.Invalid(apperr.Field("body", "maxItems", fmt.Sprintf("a JSON array longer than %d items", MaxJSONArrayItems)))
				}
			}
		}
	}
	return nil
}
