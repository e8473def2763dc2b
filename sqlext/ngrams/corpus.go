package ngrams

import (
	"errors"
	"slices"

	"github.com/dpsql/dpsql/sqlext/setunion"
)

// Corpus is the input of an extraction once collected: every row's tokens,
// interned, and the rows grouped by user — what AddRow and AddBatch build
// and Run reads. A corpus is immutable: any number of extractions may run
// over it at once (NewFromCorpus), each as an extractor fed the same rows in
// the same order would run, with the same output for the same random source
// (a run reads the rows only through the corpus and draws its randomness only
// from its own source). A server keeps one per protected text column, so
// that a release does not tokenise and intern the table again.
type Corpus struct {
	c     *corpus
	toks  setunion.Interner // read-only once frozen
	stats InputStats
	// level1 is the state a level-1 builder reaches from the corpus: users
	// in id order, each user's distinct tokens added by ascending token id
	// (Extractor.level1), grouped and prepared.
	level1 *setunion.Prepared
	// bigrams are the corpus's bigrams, for a level 2 that is the last
	// (bigrams.go).
	bigrams *bigrams
	bytes   int64
}

// Bytes returns the memory the corpus holds.
func (c *Corpus) Bytes() int64 { return c.bytes }

// Stats returns the statistics of the corpus's rows.
func (c *Corpus) Stats() InputStats { return c.stats }

// Corpus ends the collection of rows and returns them as a corpus; the
// extractor cannot run or take rows afterwards.
func (e *Extractor) Corpus() (*Corpus, error) {
	if e.ran {
		return nil, errors.New("ngrams: Corpus after Run or Corpus")
	}
	e.ran = true
	if e.err != nil {
		return nil, e.err
	}
	stats := e.Stats()
	c := e.corpus()
	out := &Corpus{c: c, toks: e.toks, stats: stats}
	e.toks = setunion.Interner{}
	// The level-1 input, grouped once: Extractor.level1 adds exactly these
	// pairs, in this order, to its builder.
	b, err := setunion.NewBuilder(setunion.Defaults())
	if err != nil {
		return nil, err
	}
	var toks []uint32
	for u := range c.users() {
		toks = c.userTokens(uint32(u), toks[:0])
		id, _ := b.UserID([]byte(c.names[u]))
		for _, t := range toks {
			b.AddID(id, out.toks.Bytes(t))
		}
	}
	if out.level1, err = setunion.Prepare(b.Grouped()); err != nil {
		return nil, err
	}
	out.level1.BuildLookup() // shared by every analyst's releases: built now, not at the first (setunion.Prepared.BuildLookup)
	g := out.level1.Grouped()
	// Tokens, rows, users; level 1's lists (8 B a pair), names and the
	// prepared sums and flat ids (4 B a pair, 12 B an item, 8 B a user).
	out.bytes = 4*int64(len(c.tokens)+len(c.rowEnd)+len(c.userStart)+len(c.byUser)) + 16*int64(out.toks.Len()+2*len(c.names)) +
		12*int64(len(g.Items)) + 8*int64(len(g.Users)) +
		48*int64(len(g.Items)) // the item lookup (BuildLookup): a map entry per item, its strings shared
	for u, name := range c.names {
		out.bytes += int64(len(name)) + 24 + 12*int64(len(g.Lists[u]))
	}
	for i := range out.toks.Len() {
		out.bytes += 2*int64(len(out.toks.Bytes(uint32(i)))) + 8
	}
	out.bigrams = corpusBigrams(c)
	out.bytes += out.bigrams.bytes()
	return out, nil
}

// NewFromCorpus returns an extractor with options o over the rows of c: Run
// releases what an extractor created with New(o) and fed the same rows
// would. It takes no rows (AddRow and AddBatch ignore them).
func NewFromCorpus(o Options, c *Corpus) (*Extractor, error) {
	e, err := New(o)
	if err != nil {
		return nil, err
	}
	e.frozen = c
	e.toks = c.toks
	return e, nil
}

// userTokens appends user u's distinct tokens, ascending, to dst.
func (c *corpus) userTokens(u uint32, dst []uint32) []uint32 {
	for _, r := range c.rowsOf(u) {
		s, end := c.span(r)
		dst = append(dst, c.tokens[s:end]...)
	}
	slices.Sort(dst)
	return slices.Compact(dst)
}
