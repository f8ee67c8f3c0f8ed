// Package contactd carries the API's source of truth, openapi.yaml, into the binary, which
// serves it as written at /public/v1/openapi.yaml and renders it at /docs.
package contactd

import _ "embed"

// OpenAPIYAML is openapi.yaml, byte for byte.
//
//go:embed openapi.yaml
var OpenAPIYAML []byte
