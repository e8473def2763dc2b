package lookup

// SetSource records the canonical description of what fills s (the public
// table, its version, the public side's expressions and their evaluation
// settings), for the keys under which a release reading s is reused
// (release.NewPublic sets it; package release's canonical key reads it).
func (s *Set) SetSource(src string) { s.source = src }

// Source returns what SetSource recorded ("" if nothing).
func (s *Set) Source() string { return s.source }

// Describe returns the set's class, the collation it compares text by and
// its limits: with Source, everything that decides its contents and how a
// probe compares (never the contents).
func (s *Set) Describe() (Class, uint16, Limits) { return s.class, uint16(s.coll), s.lim }
