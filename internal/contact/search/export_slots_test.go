package search

import (
	"testing"

	"github.com/google/uuid"
)

func TestExportSlots(t *testing.T) {
	e := newExportSlots(3, 2)
	a, b := uuid.New(), uuid.New()
	ra1, ok1 := e.take(a)
	_, ok2 := e.take(a)
	if _, ok := e.take(a); !ok1 || !ok2 || ok {
		t.Fatalf("an account's third export: %v %v %v, want refused after two", ok1, ok2, ok)
	}
	if _, ok := e.take(b); !ok {
		t.Fatal("another account's first export refused")
	}
	if _, ok := e.take(uuid.New()); ok {
		t.Fatal("a fourth export with three in all allowed")
	}
	ra1()
	ra1() // releasing twice frees one slot
	if _, ok := e.take(a); !ok {
		t.Error("the account's export after one ended: refused")
	}
	if _, ok := e.take(uuid.New()); ok {
		t.Error("a double release freed two slots")
	}
}
