package address

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
)

// versionOutputs is, per Version, a digest of what Parse returns for the test inputs and of
// the county table. A change to either fails TestVersionNamesTheParser until Version is
// raised and its digest recorded here, so stored addresses are re-parsed after an upgrade.
var versionOutputs = map[int]string{
	1: "44e00620bd5ec5a36e711bcc51f89e49da73f983229a9b9e9f655ff8041d9e9d",
}

func TestVersionNamesTheParser(t *testing.T) {
	t.Parallel()
	h := sha256.New()
	h.Write([]byte(countiesTxt))
	for _, in := range parserCorpus() {
		a, err := Parse(in)
		fmt.Fprintf(h, "%q -> %+v %v\n", in, a, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != versionOutputs[Version] {
		t.Errorf("Parse's outputs are not those of Version %d (%s): if the change is meant, raise Version and record %s",
			Version, versionOutputs[Version], got)
	}
}

// parserCorpus is every address the tests parse, and the word shapes in street, unit and
// ZIP positions.
func parserCorpus() []string {
	var in []string
	for _, c := range parseCases {
		in = append(in, c.in)
	}
	in = append(append(in, rejectedInputs...), fuzzSeeds...)
	for _, w := range shapeWords {
		in = append(in, w+" Main St, Springfield, IL 62704", "1 "+w+" Street Apt "+w+", Austin, TX "+w)
	}
	return in
}
