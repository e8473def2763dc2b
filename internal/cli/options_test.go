package cli

import (
	"flag"
	"io"
	"reflect"
	"testing"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// TestMechanismFlagsAreSetUnionOptions: the flags fill one
// setunion.Options, equal to what the SQL options string and the
// configuration's defaults: section give for the same text
// (setunion.Options.Set), and are refused by its Validate.
func TestMechanismFlagsAreSetUnionOptions(t *testing.T) {
	var mf MechanismFlags
	fs := flag.NewFlagSet("union", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	mf.Register(fs, false)
	if err := fs.Parse([]string{"--mechanism", "Policy_Gaussian_L2", "--epsilon", "0.5", "--delta", "1e-7", "--max-items", "40", "--alpha", "2.5", "--rounds", "2"}); err != nil {
		t.Fatal(err)
	}
	got, err := mf.Options()
	if err != nil {
		t.Fatal(err)
	}
	want := setunion.Defaults()
	for _, kv := range [][2]string{{"mechanism", "Policy_Gaussian_L2"}, {"epsilon", "0.5"}, {"delta", "1e-7"}, {"max_items", "40"}, {"alpha", "2.5"}, {"rounds", "2"}} {
		if err := want.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flags give %+v, Set gives %+v", got, want)
	}

	var bad MechanismFlags
	fs = flag.NewFlagSet("union", flag.ContinueOnError)
	bad.Register(fs, false)
	if err := fs.Parse([]string{"--max-items", "-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Options(); err == nil || err.Error() != "max_items must be an integer from 1 to 1000000, or 0 to choose it privately from the data, got -1" {
		t.Fatalf("got %v", err)
	}
}
