package enrich_test

import (
	"testing"

	"github.com/contactd/contactd/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
