package address

import (
	_ "embed"
	"strings"
	"sync"
)

//go:embed counties.txt
var countiesTxt string

type county struct{ state, name string }

// countyTable maps a five-digit ZIP to its county, loaded on first use (about 33,000 ZIPs).
var countyTable = sync.OnceValue(func() map[string]county {
	m := make(map[string]county, 34000)
	for _, line := range strings.Split(countiesTxt, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		state, rest, _ := strings.Cut(line, "\t")
		name, zips, _ := strings.Cut(rest, "\t")
		c := county{state: state, name: name}
		for _, z := range strings.Fields(zips) {
			m[z] = c
		}
	}
	return m
})

// County is the county of a ZIP code (five digits or ZIP+4) in state, or "" when the table
// does not know the ZIP or places it in another state (a typo the county must not paper over).
func County(zip, state string) string {
	zip5, _, _ := strings.Cut(zip, "-")
	c, ok := countyTable()[zip5]
	if !ok || c.state != state {
		return ""
	}
	return c.name
}
