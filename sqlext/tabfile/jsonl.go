package tabfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// jsonl reads JSON lines: one JSON object per line, blank lines skipped.
//
// A selected key's value becomes: a string its text; a number its literal
// text as written (no rounding through float64); true and false "1" and "0"
// (MySQL's booleans); null or a missing key NULL (nil); an object or array
// its compact JSON text (for JSON columns).
type jsonl struct {
	in   *input
	path string
	br   *bufio.Reader
	long []byte
	line int64
	keys map[string]int // key -> output column
	out  [][]byte
	bufs [][]byte
}

func openJSONL(path string, o Options) (Source, error) {
	if len(o.Columns) == 0 {
		return nil, fmt.Errorf("%s: JSON lines need the columns to read, by key", path)
	}
	if o.Header {
		return nil, fmt.Errorf("%s: JSON lines have no header row; columns are selected by key", path)
	}
	keys := make(map[string]int, len(o.Columns))
	for i, c := range o.Columns {
		if c.Name == "" || c.Position != 0 {
			return nil, fmt.Errorf("%s: JSON lines columns are selected by key (name), not by position", path)
		}
		if _, dup := keys[c.Name]; dup {
			return nil, fmt.Errorf("%s: key %q is selected twice", path, c.Name)
		}
		keys[c.Name] = i
	}
	in, err := openInput(path)
	if err != nil {
		return nil, err
	}
	return &jsonl{
		in:   in,
		path: path,
		br:   bufio.NewReaderSize(in.src, 1<<20),
		keys: keys,
		out:  make([][]byte, len(keys)),
		bufs: make([][]byte, len(keys)),
	}, nil
}

func (j *jsonl) Next() ([][]byte, error) {
	for {
		line, err := readLine(j.br, &j.long)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("%s: line %d: %w", j.path, j.line+1, err)
		}
		j.line++
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if line[0] != '{' {
			hint := ""
			if j.line == 1 && line[0] == '[' {
				hint = " (this looks like a JSON array; JSON lines hold one object per line)"
			}
			return nil, fmt.Errorf("%s: line %d: expected a JSON object%s", j.path, j.line, hint)
		}
		if !json.Valid(line) {
			var v any
			err := json.Unmarshal(line, &v) // for the message
			return nil, fmt.Errorf("%s: line %d: invalid JSON: %v", j.path, j.line, err)
		}
		clear(j.out) // missing keys are NULL
		err = eachMember(line, func(key, raw []byte) error {
			i, ok := j.keys[string(key)]
			if !ok && bytes.IndexByte(key, '\\') >= 0 {
				var k string
				if json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &k) == nil {
					i, ok = j.keys[k]
				}
			}
			if !ok {
				return nil
			}
			if raw[0] == 'n' { // null
				j.out[i] = nil
				return nil
			}
			b, err := appendJSONValue(j.bufs[i][:0], raw)
			if err != nil {
				return fmt.Errorf("key %q: %w", key, err)
			}
			if b == nil {
				b = []byte{} // the empty string, not NULL
			}
			j.bufs[i], j.out[i] = b, b
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", j.path, j.line, err)
		}
		return j.out, nil
	}
}

// eachMember calls fn with the raw key (between its quotes) and the raw
// value of each member of obj, a valid JSON object (json.Valid), in order.
// A key given twice is reported twice; the last one wins, as in
// encoding/json.
func eachMember(obj []byte, fn func(key, value []byte) error) error {
	i := skipSpace(obj, 0) + 1 // past '{'
	i = skipSpace(obj, i)
	if obj[i] == '}' {
		return nil
	}
	for {
		end := stringEnd(obj, i)
		key := obj[i+1 : end-1]
		i = skipSpace(obj, end) + 1 // past ':'
		i = skipSpace(obj, i)
		vend := valueEnd(obj, i)
		if err := fn(key, obj[i:vend]); err != nil {
			return err
		}
		i = skipSpace(obj, vend)
		if obj[i] == '}' {
			return nil
		}
		i = skipSpace(obj, i+1) // past ','
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// stringEnd returns the index just past the string starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// valueEnd returns the index just past the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\r' && b[i] != '\n' {
		i++
	}
	return i
}

// appendJSONValue appends the text of a JSON value other than null to dst.
func appendJSONValue(dst []byte, raw json.RawMessage) ([]byte, error) {
	switch raw[0] {
	case 't':
		return append(dst, '1'), nil
	case 'f':
		return append(dst, '0'), nil
	case '"':
		body := raw[1 : len(raw)-1]
		if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return append(dst, body...), nil
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return append(dst, s...), nil
	case '{', '[':
		b := bytes.NewBuffer(dst)
		if err := json.Compact(b, raw); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	}
	return append(dst, raw...), nil // a number, as written
}

func (j *jsonl) Line() int64                  { return j.line }
func (j *jsonl) Progress() (read, size int64) { return j.in.progress() }
func (j *jsonl) Close() error                 { return j.in.close() }
