package beamdp

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"
)

// greedy_public's public frequency table reaches every user shard through a
// join by shard (CoGroupByKey of the shard rows with the table, sent in
// blocks to every shard), not as a side input: prism (v2.77.0) may start a
// side input's reader before the side input is complete (sips.go,
// docs/privacy.md §39), and a shard would then run the policy over part of
// the table. A GroupByKey emits a shard's group only once every producer of
// every input has finished, so each shard reads the whole table.

func init() {
	register.DoFn3x0[string, float64, func(int, []byte)](&publicShardsFn{})
	register.DoFn5x1[int, func(*userItems) bool, func(*[]byte) bool, func(string, float64), func(string, int64), error](&shardPublicFn{})
}

// publicBlockBytes bounds the encoded size of one block of the public
// table: a bundle's entries go out in blocks of about this size.
const publicBlockBytes = 1 << 20

// joinPublic sums the public table per item and joins it with the shard rows
// keyed (KV<int, userItems>), giving CoGBK<int, userItems, []byte>: each of
// the shards 0..shards−1 gets every block of the table.
func joinPublic(s beam.Scope, keyed, public beam.PCollection, shards int) beam.PCollection {
	summed := stats.SumPerKey(s.Scope("public"), public)
	blocks := beam.ParDo(s, &publicShardsFn{Shards: shards}, summed)
	return beam.CoGroupByKey(s, keyed, blocks)
}

// publicShardsFn encodes the (item, frequency) entries of a bundle into
// blocks and sends each block to every shard.
type publicShardsFn struct {
	Shards int `json:"shards"`

	n   int
	buf []byte
}

func (fn *publicShardsFn) ProcessElement(item string, f float64, emit func(int, []byte)) {
	fn.buf = binary.AppendUvarint(fn.buf, uint64(len(item)))
	fn.buf = append(fn.buf, item...)
	fn.buf = binary.LittleEndian.AppendUint64(fn.buf, math.Float64bits(f))
	fn.n++
	if len(fn.buf) >= publicBlockBytes {
		fn.FinishBundle(emit)
	}
}

// FinishBundle sends the buffered entries: uvarint count, then each entry's
// uvarint length, bytes and little-endian float64 bits.
func (fn *publicShardsFn) FinishBundle(emit func(int, []byte)) {
	if fn.n == 0 {
		return
	}
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(fn.buf)), uint64(fn.n))
	b = append(b, fn.buf...)
	for s := range fn.Shards {
		emit(s, b)
	}
	fn.n, fn.buf = 0, fn.buf[:0]
}

// decodePublic adds the entries of a block that publicShardsFn wrote to t.
func decodePublic(b []byte, t map[string]float64) error {
	r := blockReader{b: b}
	n := r.uvarint()
	if n > uint64(len(b)) {
		return fmt.Errorf("beamdp: corrupt public table block")
	}
	for range n {
		it := r.string()
		if r.err != nil || len(r.b) < 8 {
			return fmt.Errorf("beamdp: corrupt public table block")
		}
		t[it] += math.Float64frombits(binary.LittleEndian.Uint64(r.b))
		r.b = r.b[8:]
	}
	return r.err
}

// shardPublicFn is shardFn for greedy_public: its input is one shard's rows
// joined with every block of the public frequency table (joinPublic). A
// shard without users emits nothing, as under a plain GroupByKey.
type shardPublicFn struct {
	shardFn
}

func (fn *shardPublicFn) ProcessElement(shard int, rows func(*userItems) bool, public func(*[]byte) bool, emit func(string, float64), stat func(string, int64)) error {
	opts := fn.Opts
	opts.Public = make(map[string]float64)
	var b []byte
	for public(&b) {
		if err := decodePublic(b, opts.Public); err != nil {
			return err
		}
	}
	var first userItems
	if !rows(&first) {
		return nil
	}
	pending := true
	all := func(r *userItems) bool {
		if pending {
			*r, pending = first, false
			return true
		}
		return rows(r)
	}
	return fn.run(shard, all, opts, emit, stat)
}
