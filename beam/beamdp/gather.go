package beamdp

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// The output writers (WriteSorted, WriteStats) read what they write as the
// main input of a join, not as a side input. Each bundle of their data goes
// out as one block under the key 0, and a CoGroupByKey joins the blocks with
// an Impulse keyed 0. A GroupByKey emits a key's group only once every
// producer of every input has finished, on every runner, so the writer sees
// all of the data; the Impulse makes the group exist, and the file be
// written, when the data is empty. (prism v2.77.0 may start a stage that
// reads a side input before the side input is complete: sips.go,
// docs/privacy.md §39. A writer started early would write an incomplete
// file and the job would still succeed.)

func init() {
	register.DoFn2x0[string, func(int, []byte)](&itemBlocksFn{})
	register.DoFn3x0[string, int64, func(int, []byte)](&statBlocksFn{})
	register.Emitter2[int, []byte]()
	register.Iter1[[]byte]()
}

// outputBlockBytes bounds the encoded size of one block of a writer's data.
const outputBlockBytes = 1 << 20

// gather joins an Impulse with blocks (KV<int, []byte>, all under the key
// 0), giving CoGBK<int, []byte, []byte>: one element, whose second iterable
// holds every block, once the producers of blocks have all finished.
func gather(s beam.Scope, blocks beam.PCollection) beam.PCollection {
	return beam.CoGroupByKey(s, beam.AddFixedKey(s, beam.Impulse(s)), blocks)
}

// eachBlock calls fn with every block of a gathered group.
func eachBlock(blocks func(*[]byte) bool, fn func([]byte) error) error {
	var b []byte
	for blocks(&b) {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

// itemBlocksFn encodes the items of a bundle (encodeItems) into blocks
// under the key 0.
type itemBlocksFn struct {
	items []string
	n     int
}

func (fn *itemBlocksFn) ProcessElement(it string, emit func(int, []byte)) {
	fn.items = append(fn.items, it)
	fn.n += len(it) + binary.MaxVarintLen64
	if fn.n >= outputBlockBytes {
		fn.FinishBundle(emit)
	}
}

func (fn *itemBlocksFn) FinishBundle(emit func(int, []byte)) {
	if len(fn.items) == 0 {
		return
	}
	emit(0, encodeItems(fn.items))
	fn.items, fn.n = fn.items[:0], 0
}

// statBlocksFn sums the partial counts of a bundle and sends the sums as one
// block under the key 0.
type statBlocksFn struct {
	st  Stats
	any bool
}

func (fn *statBlocksFn) ProcessElement(name string, v int64, emit func(int, []byte)) {
	fn.st.add(name, v)
	fn.any = true
}

func (fn *statBlocksFn) FinishBundle(emit func(int, []byte)) {
	if !fn.any {
		return
	}
	emit(0, fn.st.encode())
	fn.st, fn.any = Stats{}, false
}

// encode encodes st as six varints, in the order of its fields.
func (st Stats) encode() []byte {
	b := make([]byte, 0, 6*binary.MaxVarintLen64)
	for _, v := range []int64{st.Rows, st.Occurrences, st.Users, st.Pairs, st.DistinctItems, st.Released} {
		b = binary.AppendVarint(b, v)
	}
	return b
}

// addBlock adds the statistics that encode wrote to b to st.
func (st *Stats) addBlock(b []byte) error {
	var v [6]int64
	for i := range v {
		x, n := binary.Varint(b)
		if n <= 0 {
			return fmt.Errorf("beamdp: corrupt statistics block")
		}
		v[i], b = x, b[n:]
	}
	st.Rows += v[0]
	st.Occurrences += v[1]
	st.Users += v[2]
	st.Pairs += v[3]
	st.DistinctItems += v[4]
	st.Released += v[5]
	return nil
}

// writeFile writes the bytes that fill produces to path (any Beam
// filesystem), through a buffer.
func writeFile(ctx context.Context, path string, fill func(*bufio.Writer) error) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := fill(bw); err != nil {
		w.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		w.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return w.Close()
}
