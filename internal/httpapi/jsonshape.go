package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/contactd/contactd/internal/apperr"
)

// Shape limits of request bodies, checked by streaming the tokens before anything decodes
// the body into values: no API body nests deeper than a few levels or holds long arrays, so
// a body that does is refused without paying for it.
const (
	MaxJSONDepth      = 16
	MaxJSONArrayItems = 1000
)

// checkJSONShape refuses bodies nested deeper than MaxJSONDepth or with an array longer than
// MaxJSONArrayItems. Malformed JSON is left to the validator, which reports it in detail.
func checkJSONShape(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		array bool
		items int
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return nil
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) > 0 && stack[len(stack)-1].array {
				if err := countItem(&stack[len(stack)-1].items); err != nil {
					return err
				}
			}
			if len(stack) >= MaxJSONDepth {
				return apperr.Invalid(apperr.Field("body", "maxDepth", fmt.Sprintf("JSON nested deeper than %d levels", MaxJSONDepth)))
			}
			stack = append(stack, frame{array: tok == json.Delim('[')})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if len(stack) > 0 && stack[len(stack)-1].array {
				if err := countItem(&stack[len(stack)-1].items); err != nil {
					return err
				}
			}
		}
	}
}

func countItem(n *int) error {
	if *n++; *n > MaxJSONArrayItems {
		return apperr.Invalid(apperr.Field("body", "maxItems", fmt.Sprintf("a JSON array longer than %d items", MaxJSONArrayItems)))
	}
	return nil
}
