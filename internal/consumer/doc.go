// Package consumer holds no code: its tests use contactd as its consumers do, from outside
// and only through openapi.yaml — a generated Go client, a generated TypeScript client under
// Node, a Standard Webhooks receiver in Node, and the reference page in headless Chromium.
package consumer
