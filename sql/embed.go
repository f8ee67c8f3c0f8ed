// Package sql embeds the migrations into the binary, so `contactd migrate` and `serve` need
// no files beside them.
package sql

import "embed"

// Migrations holds migrations/*.sql (goose format; also sqlc's schema input).
//
//go:embed migrations/*.sql
var Migrations embed.FS
