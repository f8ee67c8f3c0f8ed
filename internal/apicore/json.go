package apicore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

var errTrailingData = errors.New("data after the JSON value")

// DecodeJSON decodes one JSON value into JSON values as kin-openapi's request validator does
// (numbers kept as json.Number, so integers are checked exactly), and refuses anything after
// the value: what is validated is the whole body.
func DecodeJSON(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errTrailingData
	}
	return v, nil
}
