package functions

import (
	"strings"
	"testing"

	"github.com/dpsql/dpsql/dpvars"
	"github.com/dpsql/dpsql/sqlext/setunion"
)

func TestSplitOptions(t *testing.T) {
	got, err := SplitOptions("F", " Epsilon = 1 ,DELTA=1e-6,, mechanism=Policy_Laplace, ")
	if err != nil {
		t.Fatal(err)
	}
	want := []Option{{"epsilon", "1"}, {"delta", "1e-6"}, {"mechanism", "Policy_Laplace"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	if got, err := SplitOptions("F", "  "); err != nil || len(got) != 0 {
		t.Fatalf("blank options: %v, %v", got, err)
	}
	for in, msg := range map[string]string{
		"epsilon":                "F: option \"epsilon\" has no value",
		"=1":                     "F: option \"=1\" has no name",
		"epsilon=":               "F: option epsilon has an empty value",
		"epsilon=1 delta=2":      "F: option epsilon has the value \"1 delta=2\", which contains '='",
		"epsilon=1, EPSILON = 2": "F: option epsilon is given twice",
	} {
		_, err := SplitOptions("F", in)
		if err == nil || !strings.HasPrefix(err.Error(), msg) {
			t.Errorf("SplitOptions(%q) = %v, want an error starting %q", in, err, msg)
		}
	}
}

func TestOptionSetSetUnion(t *testing.T) {
	p := dpvars.DefaultSetUnion()
	s := NewOptionSet("DP_SET_UNION")
	s.AddSetUnion(&p)
	if err := s.Parse("epsilon=2, delta=1e-8, max_items=50, mechanism=DP_SIPS, alpha=4, rounds=5"); err != nil {
		t.Fatal(err)
	}
	o, err := dpvars.CheckSetUnion(p)
	if err != nil {
		t.Fatal(err)
	}
	if o.Mechanism != setunion.DPSIPS || o.Epsilon != 2 || o.Delta != 1e-8 || o.MaxItems != 50 || *o.Alpha != 4 || o.Rounds != 5 {
		t.Fatalf("options %+v", o)
	}
	// alpha=default means the mechanism's default (nil); -1, once a second
	// marker for it, is now an error like any negative α.
	for _, a := range []string{"default", "DEFAULT"} {
		p := dpvars.DefaultSetUnion()
		s := NewOptionSet("DP_SET_UNION")
		s.AddSetUnion(&p)
		if err := s.Parse("alpha=5, alpha=" + a); err == nil {
			t.Fatal("duplicate alpha accepted")
		}
		if err := s.Parse("alpha=" + a); err != nil {
			t.Fatal(err)
		}
		if o, err := dpvars.CheckSetUnion(p); err != nil || o.Alpha != nil {
			t.Fatalf("alpha=%s: %+v, %v", a, o, err)
		}
	}
}

// TestOptionSetExtraKeys shows how a function with more options (DP_NGRAMS)
// reuses the set union keys.
func TestOptionSetExtraKeys(t *testing.T) {
	p := dpvars.DefaultSetUnion()
	maxN, eta, split := 3, 0.01, "uniform"
	s := NewOptionSet("DP_NGRAMS")
	s.AddSetUnion(&p)
	s.Int("max_n", &maxN)
	s.Float("eta", &eta)
	s.String("budget_split", &split)
	if err := s.Parse("max_n=4, ETA=0.05, budget_split=geometric, epsilon=3"); err != nil {
		t.Fatal(err)
	}
	if maxN != 4 || eta != 0.05 || split != "geometric" || p.Epsilon != 3 {
		t.Fatalf("got max_n=%d eta=%v split=%s epsilon=%v", maxN, eta, split, p.Epsilon)
	}
	err := s.Parse("n=2")
	want := `DP_NGRAMS: unknown option "n": the options are epsilon, delta, max_items, mechanism, alpha, rounds, max_n, eta, budget_split`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if err := s.Parse("max_n=x"); err == nil || err.Error() != `DP_NGRAMS: option max_n: "x" is not an integer` {
		t.Fatalf("got %v", err)
	}
	if err := s.Parse("eta=NaN"); err == nil || err.Error() != `DP_NGRAMS: option eta: "NaN" is not a finite number` {
		t.Fatalf("got %v", err)
	}
}
