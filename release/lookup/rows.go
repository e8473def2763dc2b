package lookup

// EachRow calls fn with the public row of every key of a join's set (filled
// by AddRow), in no particular order, and returns ErrNotFilled before the
// set is done. A release over public keys (a GROUP BY over the keys of a
// public table) makes its key set from them: public data only.
func (s *Set) EachRow(fn func(row []any)) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.done {
		return ErrNotFilled
	}
	for _, r := range s.rows {
		fn(r)
	}
	return nil
}
