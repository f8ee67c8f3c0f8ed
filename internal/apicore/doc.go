// Package apicore is the part of the API's work that needs no HTTP, shared by every front end
// that speaks the spec's shapes (the HTTP handlers and `contactd import`): the spec's string
// formats, validation errors as the documented field errors, the documented error body, the
// spec's create request as the domain's input, and the batch's per-item core.
//
// It sits below httpapi and importer and above the domain services; it imports neither front
// end (internal/layers checks the direction).
package apicore
