// Package layers holds no code: its test keeps the dependency direction that
// docs/architecture.md draws (generated HTTP layer -> handwritten services -> generated
// queries, never backwards) true of the code, so the picture cannot drift from it.
package layers
