package beamdp

import (
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// dp_sips rounds r ≥ 1 remove the items that earlier rounds released from
// every user's set. Those items reach round r through a join by user shard
// (CoGroupByKey of the user blocks with the released items, broadcast to
// every user shard), not as a side input.
//
// Why not a side input: prism (v2.77.0) starts a stage that reads a side
// input when its main input's upstream watermark is not ahead of the side
// input producer's output watermark. In a batch pipeline both stand at the
// end of the global window while upstream bundles are still in flight, so
// round 1 could start — and read an empty or partial side input — before
// round 0 had released anything. Round 1 then released round 0's items
// again (TestUnionPairs: ["common" "common"], Released: 2, under load;
// the prism log showed round 1's bundle starting at watermark "glo",
// before round 0's GroupByKey ran). A GroupByKey fires only when its
// input watermark has passed the end of the window, that is when every
// producer of every input is done, on every runner; a join therefore
// delivers all of the earlier rounds' releases to round r, whatever the
// runner's scheduling, bundling or splitting.

func init() {
	register.DoFn5x1[context.Context, int, func(*[]byte) bool, func(*[]byte) bool, func(int, []byte), error](&roundExceptFn{})
	register.DoFn5x1[int, func(*[]byte) bool, func(string), func(int, []byte), func(string, int64), error](&sipsReleaseFn{})
}

// roundExceptFn is roundFn for dp_sips rounds r ≥ 1. Its input is one user
// shard joined with the items released by rounds 0..r−1 (each as a list
// that sipsReleaseFn sent to every user shard); those items are removed
// from every user's set before it is bounded.
type roundExceptFn struct {
	roundFn
}

func (fn *roundExceptFn) ProcessElement(ctx context.Context, shard int, users func(*[]byte) bool, done func(*[]byte) bool, emit func(int, []byte)) error {
	released := make(map[string]bool)
	var b []byte
	for done(&b) {
		items, err := decodeItems(b)
		if err != nil {
			return err
		}
		for _, it := range items {
			released[it] = true
		}
	}
	for users(&b) {
		if err := fn.run(b, released, emit); err != nil {
			return err
		}
	}
	return nil
}

// sipsReleaseFn is sumReleaseFn for dp_sips rounds r < R−1: it also sends
// the items it releases, as one list per element, to every one of the
// Blocks user shards, for the later rounds' joins.
type sipsReleaseFn struct {
	sumReleaseFn
	Blocks int `json:"blocks"`
}

func (fn *sipsReleaseFn) ProcessElement(shard int, blocks func(*[]byte) bool, emit func(string), done func(int, []byte), stat func(string, int64)) error {
	var items []string
	err := fn.sumReleaseFn.ProcessElement(shard, blocks, func(it string) {
		items = append(items, it)
		emit(it)
	}, stat)
	if err != nil || len(items) == 0 {
		return err
	}
	b := encodeItems(items)
	for s := range fn.Blocks {
		done(s, b)
	}
	return nil
}

func (fn *sipsReleaseFn) FinishBundle(emit func(string), done func(int, []byte), stat func(string, int64)) {
	fn.releaseFn.FinishBundle(emit, stat)
}

// encodeItems encodes a list of items: uvarint count, then each item's
// uvarint length and bytes.
func encodeItems(items []string) []byte {
	n := binary.MaxVarintLen64
	for _, s := range items {
		n += binary.MaxVarintLen64 + len(s)
	}
	dst := binary.AppendUvarint(make([]byte, 0, n), uint64(len(items)))
	for _, s := range items {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// decodeItems decodes a list that encodeItems wrote.
func decodeItems(b []byte) ([]string, error) {
	r := blockReader{b: b}
	n := r.uvarint()
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("beamdp: corrupt items block")
	}
	items := make([]string, 0, n)
	for range n {
		items = append(items, r.string())
	}
	return items, r.err
}
