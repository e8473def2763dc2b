package cli

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as one JSON line.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
