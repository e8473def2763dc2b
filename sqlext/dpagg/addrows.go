package dpagg

import "math"

// AddRows records n identical rows: the pipeline's state is then the one n
// calls of Add(unit, key, values) reach — row counts add (saturating at
// 2³²−1), non-NULL counts add, and each value's clamped, rounded units are
// added n times (an exact integer product, as n additions) — so its
// release is the same for the same random source. It is for inputs that
// arrive already grouped, such as a database's GROUP BY (dpsql's push-down
// releases). n < 1 adds nothing.
func (p *Pipeline) AddRows(unit, key []byte, values []Value, n int64) error {
	if n < 1 {
		return nil
	}
	if n == 1 || len(unit) == 0 {
		return p.Add(unit, key, values)
	}
	// The first row goes through Add (checks, interning, the entry); the
	// other n−1 are added to the entry it made.
	if err := p.Add(unit, key, values); err != nil {
		return err
	}
	m := uint64(n - 1)
	p.rows += n - 1
	e := p.entry(p.userIdx[string(unit)], p.keyIdx[string(key)])
	e[0] = e[0]&^0xffffffff | min(e[0]&0xffffffff+m, 0xffffffff)
	u, k := p.userIdx[string(unit)], p.keyIdx[string(key)]
	for i, c := range p.cols {
		if c.kind == Quantile { // every row's value is ranked (quantile.go)
			for range m {
				p.addQuantile(i, u, k, values[i])
			}
			continue
		}
		if c.off == 0 {
			continue
		}
		v := values[i]
		if !v.Valid || math.IsNaN(v.Float) {
			continue
		}
		e[c.off] += m
		if c.kind == CountValues {
			continue
		}
		c.addValue(e, v.Float, m)
	}
	return nil
}

// AddValuesRows is AddValues for n identical rows: a user's extremes do not
// depend on how many rows hold them.
func (p *Pipeline) AddValuesRows(unit []byte, values []Value, n int64) error {
	if n < 1 {
		return nil
	}
	return p.AddValues(unit, values)
}
